"""The digests of a prepared folder's data files, recorded at preparation and checked by
every reader that must know the data are the ones prepared.

Preparing a dataset ends with `seal_prepared` on the finished folder: meta.json gets
``prepared_files``, ``{file name: {"sha256", "size"}}`` of every other file of the folder
(a per-fold folder: of each ``fold{k}/`` folder, in that folder's meta.json). meta.json
holds no time stamp (DVC hashes it into dvc.lock; preparing the same data again leaves it
as it was), so a file's date is judged against meta.json's own, which is written last:

* a file of another size than recorded has changed (no reading);
* a file dated no later than meta.json is trusted as prepared (a stat, no reading);
* a file dated later (edited in place, or the folder copied file by file) is hashed, and
  it has changed when its sha256 differs from the recorded one. When every such file
  matches, meta.json is dated after the newest of them (its content untouched), so the
  next reader trusts them by date again: a copied folder is read once, not on every call.

A file edited in place that keeps its size and is given a date no later than meta.json's
is not seen: the check guards against accidents, not deliberate forgery.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

from ssmbench.data.checksums import sha256_file
from ssmbench.data.errors import DataError

FILES_KEY = "prepared_files"
META = "meta.json"


def _data_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name != META)


def seal_prepared(folder: str | os.PathLike) -> None:
    """Add FILES_KEY to the meta.json of the prepared ``folder`` (and of each of its
    ``fold{k}/`` subfolders that holds a meta.json): every data file's sha256 and size.
    Call it when the folder is complete, before it is renamed into place."""
    folder = Path(folder)
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and (p / META).is_file()):
        seal_prepared(sub)
    meta_path = folder / META
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta[FILES_KEY] = {
        p.name: {"sha256": sha256_file(p), "size": p.stat().st_size} for p in _data_files(folder)
    }
    meta_path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def prepared_sha256(meta: dict) -> dict | None:
    """``{file name: sha256}`` of the data files a meta.json (as read) records; None when it
    records none (a folder prepared before folders were sealed)."""
    files = meta.get(FILES_KEY)
    if not isinstance(files, dict):
        return None
    return {name: entry.get("sha256") for name, entry in sorted(files.items())
            if isinstance(entry, dict)}  # fmt: skip


def changed_files(folder: str | os.PathLike) -> list[str]:
    """What of the prepared ``folder`` (one fold's folder) is not as prepared, one phrase
    per file (``X.npy: changed since it was prepared``); empty when all is as recorded, or
    when its meta.json records nothing (see the module docstring for what it costs)."""
    meta_path = Path(folder) / META
    try:
        stat = meta_path.stat()
    except OSError:
        return []
    files = _recorded(str(meta_path), stat.st_mtime_ns, stat.st_size)
    if not files:
        return []
    changed, checked = [], []
    for name, (sha, size) in files.items():
        path = meta_path.parent / name
        try:
            now = path.stat()
        except OSError:
            changed.append(f"{name}: missing")
            continue
        if now.st_size != size:
            changed.append(f"{name}: changed since it was prepared (size {size} -> {now.st_size})")
        elif now.st_mtime_ns > stat.st_mtime_ns:
            if _sha256(str(path), now.st_size, now.st_mtime_ns) != sha:
                changed.append(f"{name}: changed since it was prepared (sha256)")
            else:
                checked.append(now.st_mtime_ns)
    if checked and not changed:
        try:  # the content is as prepared: date meta.json after the files read
            newest = max(checked)
            os.utime(meta_path, ns=(newest, newest))
        except OSError:
            pass  # a read-only copy: read again next time
    return changed


def check_prepared(folder: str | os.PathLike) -> None:
    """Raise DataError naming each data file of ``folder`` not as prepared
    (`changed_files`), and what to do."""
    changed = changed_files(folder)
    if changed:
        raise DataError(
            f"{folder}: not the data that were prepared ({'; '.join(changed)}). Prepare the "
            f"dataset again (delete the folder and run the prepare step)."
        )


@functools.lru_cache(maxsize=256)
def _recorded(path: str, mtime_ns: int, size: int) -> dict | None:
    # keyed on meta.json's date and size: read once per dataset for a grid's runs
    try:
        files = json.loads(Path(path).read_text(encoding="utf-8")).get(FILES_KEY)
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(files, dict):
        return None
    return {name: (e.get("sha256"), e.get("size")) for name, e in files.items()
            if isinstance(e, dict)}  # fmt: skip


@functools.lru_cache(maxsize=64)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    # keyed on the file's size and date: one read per file per process
    return sha256_file(Path(path))


def write_prepared_folder(
    out_dir: str | os.PathLike, name: str, arrays: dict, texts: dict[str, str], meta: dict
) -> Path:
    """Write a prepared dataset ``<out_dir>/<name>/`` (docs/contracts.md) in one go: each
    array as ``.npy`` (no pickles), each text file, and ``meta.json``, in a temporary
    sibling renamed into place (``atomic_folder``), its meta.json holding each data file's
    sha256 (`seal_prepared`)."""
    import numpy as np

    from ssmbench.io import atomic_folder

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / name
    with atomic_folder(target) as tmp:
        for fname, arr in arrays.items():
            np.save(tmp / fname, arr, allow_pickle=False)
        for fname, text in texts.items():
            (tmp / fname).write_text(text, encoding="utf-8")
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        seal_prepared(tmp)
    return target
