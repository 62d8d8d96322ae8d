"""Atomic file and folder writes, used by every part that writes a result.

Write a temporary sibling (a dot name ending in .tmp, so no reader's pattern matches it),
fsync it, then `os.replace` it over the target: the target is either the old complete
file or the new complete file, never half of one. On any error the temporary is removed.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path


def atomic_write(
    path: str | os.PathLike, write: Callable[[Path], None], durable: bool = True
) -> Path:
    """Call `write(tmp_path)` on a temporary sibling of `path`, then rename it into place.

    ``durable=False`` skips the fsync: still never half-written, but a crash may lose the
    new content. For files rebuilt on every run (the workflow's settings markers: 5,000
    fsyncs cost ~20 s of a paper-grid parse)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        write(tmp_path)
        if durable:
            with open(tmp_path, "rb+") as handle:
                os.fsync(handle.fileno())
        os.chmod(tmp_path, 0o644)  # mkstemp makes 0600; results are meant to be shared
        os.replace(tmp_path, path)
    except Exception as exc:
        named = _named_write_error(exc, path, path.parent)
        tmp_path.unlink(missing_ok=True)
        if named is not exc:
            raise named from exc
        raise
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise
    return path


def _named_write_error(exc: Exception, target: Path, folder: Path) -> Exception:
    """The error a failed write of ``target`` raises: an OSError that names no file is
    given ``target``'s name; a failure that does not say why (numpy's short write, an
    OSError without errno; torch's zip writer, a RuntimeError) whose file system has no
    room left (`ssmbench.os_errors.no_room`, probed while the partial file still takes
    its space) becomes that ENOSPC or EDQUOT, naming ``target``; anything else is
    returned as it is."""
    from ssmbench.os_errors import no_room

    if isinstance(exc, OSError) and exc.errno is not None:
        if exc.filename is None:
            exc.filename = str(target)
        return exc
    if isinstance(exc, OSError | RuntimeError) and (full := no_room(folder)) is not None:
        return OSError(full.errno, full.strerror, str(target))
    return exc


def atomic_write_text(path: str | os.PathLike, text: str, durable: bool = True) -> Path:
    return atomic_write(
        path, lambda p: p.write_text(text, encoding="utf-8", newline="\n"), durable=durable
    )


def atomic_write_json(path: str | os.PathLike, obj, sort_keys: bool = True) -> Path:
    """Write `obj` as strict JSON: a NaN or inf anywhere is a ValueError naming the path
    and the field, and nothing is written (bare ``NaN`` is not JSON; a field with no value
    is ``None``, written as ``null``, by its writer's choice)."""
    try:
        text = json.dumps(
            obj, indent=2, sort_keys=sort_keys, default=_json_default, allow_nan=False
        )
    except ValueError as e:
        fields = ", ".join(non_finite_fields(obj)) or "?"
        raise ValueError(f"{path}: not written: JSON has no NaN or inf, found {fields}") from e
    return atomic_write_text(path, text + "\n")


def non_finite_fields(obj, prefix: str = "") -> list[str]:
    """The dotted names of the NaN/inf floats in `obj` (dicts, lists, numpy scalars)."""
    if isinstance(obj, dict):
        return [f for k, v in obj.items() for f in non_finite_fields(v, f"{prefix}{k}.")]
    if isinstance(obj, list | tuple):
        return [f for i, v in enumerate(obj) for f in non_finite_fields(v, f"{prefix}{i}.")]
    scalar = hasattr(obj, "item") and getattr(obj, "size", 1) == 1  # a numpy scalar
    value = obj.item() if scalar and not isinstance(obj, float) else obj
    if isinstance(value, float) and not math.isfinite(value):
        return [f"{prefix.rstrip('.') or '(top level)'} = {value}"]
    return []


def _json_default(value):
    # numpy scalars and paths appear in records; anything else is a bug worth seeing.
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


def swap_into_place(tmp: Path, target: Path) -> None:
    """Rename the finished folder `tmp` to `target`, replacing an old one safely: the old
    folder is renamed away first and put back if the rename fails, deleted after."""
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}.old-{uuid.uuid4().hex}")
        os.rename(target, old)
    try:
        os.rename(tmp, target)
    except OSError:
        if old is not None:
            os.rename(old, target)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def atomic_folder(target: str | os.PathLike) -> Iterator[Path]:
    """Build a folder in a hidden temporary sibling of `target` (yielded); when the block
    ends without error it replaces `target`, otherwise it is removed. A prepared dataset
    thus exists complete or not at all."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{uuid.uuid4().hex}")
    tmp.mkdir()  # default permissions (mkdtemp's 0700 would stick to the result)
    try:
        try:
            yield tmp
        except Exception as exc:
            named = _named_write_error(exc, target, tmp)
            if named is not exc:
                raise named from exc
            raise
        swap_into_place(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


#: the hidden staging names of ``atomic_folder``, ``swap_into_place`` and
#: ``ssmbench.data.download.staged_path``: ``.<name>.tmp-<uuid hex>`` / ``.<name>.old-<hex>``
_STAGING = re.compile(r"^\.(?P<name>.+)\.(?:tmp|old)-[0-9a-f]{32}$")


def remove_leftover_staging(folder: str | os.PathLike, name: str | None = None) -> list[Path]:
    """Remove the staging files and folders in ``folder`` (of ``name`` only, when given)
    that a process killed mid-write left behind (SIGKILL, a power cut: no clean-up ran),
    and return them. Call it only while holding the lock of whatever writes them there:
    then no live writer's staging is among them."""
    folder = Path(folder)
    removed = []
    try:
        entries = list(folder.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return removed
    for entry in entries:
        match = _STAGING.match(entry.name)
        if match is None or (name is not None and match["name"] != name):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry)
    return removed


def index_text(rows: Iterable[int]) -> str:
    """The text of a prepared folder's index file (test/val indices): one row index a line."""
    return "".join(f"{int(i)}\n" for i in rows)


def prepared_stamp() -> dict:
    """``meta.json``'s ``prepared_with`` (the package version). No time stamp: DVC hashes
    meta.json into dvc.lock, and preparing the same data again must leave it as it was
    (when a folder was prepared is its files' time)."""
    from ssmbench import __version__

    return {"prepared_with": __version__}
