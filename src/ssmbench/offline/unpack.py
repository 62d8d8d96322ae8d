"""``ssmbench offline unpack``: a bundle of ``ssmbench offline pack`` put in place on a
compute node without network, from the project's folder there.

1. The bundle is read into a staging folder and checked whole (``ssmbench.offline.archive``:
   every member's sha256 against its ``SHA256SUMS``, no link, no path out of the folder),
   and its manifest read (:func:`read_manifest`).
2. What it would write is compared with what is there, before anything is written: a file
   of an ``archive_dir`` folder that is there with other content is refused (it is the
   user's, and the suite's records were made from what is there); one that is there alike
   is kept. A raw copy (``<paths.raw>/<benchmark>/<Name>/``) that is intact with the same
   files is kept; another is replaced, as a fetch replaces it.
3. The wheels are installed, if asked, with pip and no index (``ssmbench.offline.wheels``):
   into a folder for ``PYTHONPATH`` (``site``) or into a virtual environment (``venv``,
   made with the node's packages visible when it does not exist).
4. The data go in place: an ``archive_dir`` folder's files copied, its ``SHA256SUMS`` first;
   a raw copy decompressed into staged files, each checked against its sha256 and size,
   renamed in with its ``provenance.json`` last (``ssmbench.data.download.staging``).
5. Each dataset is fetched and prepared, bases first, by ``python -m ssmbench fetch`` and
   ``prepare`` with the installed packages: the fetch finds its files and checks them,
   without network (``HF_HUB_OFFLINE=1``).

Steps 1-4 need the standard library alone (and pip for the wheels): they run before the
project's packages are installed.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ssmbench.data.checksums import sha256_file
from ssmbench.data.errors import DataError
from ssmbench.data.names import name_problem
from ssmbench.io import atomic_write
from ssmbench.offline.archive import extracted, member_problem
from ssmbench.offline.pack import FORMAT, KINDS, MANIFEST
from ssmbench.offline.wheels import install_wheels


@dataclass
class Placement:
    """What unpacking writes of the data: files to copy into ``archive_dir`` folders,
    raw copies to install, and what is there already."""

    copies: list[tuple[Path, Path]] = field(default_factory=list)  # (extracted, target)
    raw: list[tuple[dict, Path]] = field(default_factory=list)  # (dataset entry, folder)
    kept: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)


def read_manifest(bundle: Path, files: dict[str, Path]) -> dict:
    """The bundle's manifest, checked: its form, plain names, known kinds, and members
    that the bundle holds. DataError naming the bundle and the field otherwise."""

    def bad(why: str) -> DataError:
        return DataError(
            f"{bundle}: {MANIFEST} {why}; this is not a bundle of this ssmbench's "
            f"`ssmbench offline pack` (make it again with the same checkout as here)"
        )

    if MANIFEST not in files:
        raise bad("is missing")
    try:
        manifest = json.loads(files[MANIFEST].read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad(f"is not JSON ({exc})") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise bad(f"is not of the form {FORMAT!r}")
    if name_problem("suite", manifest.get("suite")) is not None:
        raise bad(f"names no suite ({manifest.get('suite')!r})")
    wheels, datasets = manifest.get("wheels"), manifest.get("datasets")
    if not _records(wheels) or not _records(datasets):
        raise bad("has no list of wheels and of datasets (each an object)")
    for entry in wheels:
        if entry.get("member") not in files:
            raise bad(f"names a wheel the bundle lacks ({entry.get('member')!r})")
    for entry in datasets:
        if not _records(entry.get("files")):
            raise bad(f"dataset {entry.get('dataset')!r} has no list of files (each an object)")
        label = f"{entry.get('benchmark')}/{entry.get('dataset')}"
        for kind in ("benchmark", "dataset"):
            if (why := name_problem(kind, entry.get(kind))) is not None:
                raise bad(f"dataset {label}: {why}")
        if entry.get("kind") not in KINDS:
            raise bad(f"dataset {label}: kind {entry.get('kind')!r} is not one of {KINDS}")
        if entry["kind"] != "made" and not _folder_fits(entry):
            raise bad(f"dataset {label}: folder {entry.get('folder')!r} is not one of its own")
        for item in entry["files"]:
            name = item.get("name")
            if not isinstance(name, str) or member_problem(name) is not None:
                raise bad(f"dataset {label}: file name {name!r} is not a plain relative path")
            if item.get("member") not in files:
                raise bad(
                    f"dataset {label}: names a file the bundle lacks ({item.get('member')!r})"
                )
            if entry["kind"] == "raw" and name != "provenance.json":
                if not isinstance(item.get("bytes"), int) or len(item.get("sha256", "")) != 64:
                    raise bad(f"dataset {label}: {name} has no sha256 and size")
    return manifest


def _records(value) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


def _folder_fits(entry: dict) -> bool:
    """Whether a dataset's folder is one of its own: ``<archive_dir>/<Name>`` holding only
    ``<Name>_TRAIN``/``_TEST`` files and ``SHA256SUMS``, or ``<paths.raw>/<benchmark>/<Name>``.
    A bundle writes nowhere else."""
    folder, name = entry.get("folder"), entry["dataset"]
    if not isinstance(folder, str) or Path(folder).name != name:
        return False
    if entry["kind"] == "raw":
        return Path(folder).parent.name == entry["benchmark"]
    names = {"SHA256SUMS"} | {
        f"{name}_{s}.ts{c}" for s in ("TRAIN", "TEST") for c in (".xz", ".gz")
    }
    return all(item.get("name") in names for item in entry["files"])


def placement(manifest: dict, files: dict[str, Path], root: Path) -> Placement:
    """What step 4 writes and keeps (module docstring, step 2), relative to ``root``."""
    from ssmbench.data.provenance import PROVENANCE, verified_provenance

    place = Placement()
    for entry in manifest["datasets"]:
        label = f"{entry['benchmark']}/{entry['dataset']}"
        if entry["kind"] == "archive":
            for item in entry["files"]:
                target = root / entry["folder"] / item["name"]
                source = files[item["member"]]
                if not target.exists():
                    place.copies.append((source, target))
                elif target.is_file() and sha256_file(target) == sha256_file(source):
                    place.kept.append(str(target))
                else:
                    place.conflicts.append(
                        f"{target} is there with other content than the bundle's {label} "
                        f"{item['name']}"
                    )
        elif entry["kind"] == "raw":
            folder = root / entry["folder"]
            names = [i["name"] for i in entry["files"] if i["name"] != PROVENANCE]
            have = verified_provenance(folder, entry["dataset"], names)
            want = {f"{entry['dataset']}/{i['name']}": i["sha256"] for i in entry["files"]
                    if i["name"] != PROVENANCE}  # fmt: skip
            if have is not None and have.get("raw_files") == want:
                place.kept.append(str(folder))
            else:
                place.raw.append((entry, folder))
    return place


def _install_raw(entry: dict, folder: Path, files: dict[str, Path]) -> None:
    """One raw copy into ``folder``: each file decompressed into a staged file, checked
    against its sha256 and size, then all renamed in, ``provenance.json`` last."""
    from ssmbench.data.compressed import decompress_to
    from ssmbench.data.download import install_staged, staged_path, staging
    from ssmbench.data.provenance import PROVENANCE

    label = f"{entry['benchmark']}/{entry['dataset']}"
    provenance = json.loads(files[_provenance_member(entry)].read_text(encoding="utf-8"))
    with staging(folder) as staged:
        for item in entry["files"]:
            if item["name"] == PROVENANCE:
                continue
            recorded = (provenance.get("raw_files") or {}).get(f"{entry['dataset']}/{item['name']}")
            if recorded != item["sha256"]:
                raise DataError(
                    f"bundle dataset {label}: its provenance.json records {recorded} for "
                    f"{item['name']}, the manifest {item['sha256']}; make the bundle again"
                )
            target = folder / item["name"]
            target.parent.mkdir(parents=True, exist_ok=True)
            staged[item["name"]] = staged_path(target.parent, target.name)
            got = decompress_to(
                files[item["member"]], staged[item["name"]], "xz",
                max_bytes=item["bytes"], max_ratio=math.inf,
            )  # fmt: skip
            if got["sha256"] != item["sha256"] or got["bytes"] != item["bytes"]:
                raise DataError(
                    f"bundle dataset {label}: {item['name']} decompresses to {got['bytes']} "
                    f"bytes of sha256 {got['sha256']}, not the {item['bytes']} bytes of "
                    f"{item['sha256']} packed; nothing of it was installed"
                )
        staged[PROVENANCE] = staged_path(folder, PROVENANCE)
        shutil.copyfile(files[_provenance_member(entry)], staged[PROVENANCE])
        install_staged(staged, folder)


def _provenance_member(entry: dict) -> str:
    return next(i["member"] for i in entry["files"] if i["name"] == "provenance.json")


def unpack(
    bundle: Path,
    *,
    root: Path = Path("."),
    site: Path | None = None,
    venv: Path | None = None,
    prepare: bool = True,
    command: Sequence[str] = (),
    suite: str | None = None,
    say: Callable[[str], None] = lambda message: None,
) -> dict:
    """Put ``bundle`` in place in the project folder ``root`` (module docstring); return
    its manifest. ``command``: the options before the verb of each ``ssmbench fetch`` and
    ``prepare`` (``--params``, ``--set``); ``suite``: refused if not the bundle's.
    ``prepare`` False stops after step 4. DataError for what is refused."""
    root = Path(root)
    with extracted(bundle, root) as files:
        manifest = read_manifest(bundle, files)
        if suite is not None and suite != manifest["suite"]:
            raise DataError(
                f"{bundle}: a bundle of suite {manifest['suite']!r}, not {suite!r}; give "
                f"--suite {manifest['suite']} (or none), or pack suite {suite}"
            )
        commit = manifest.get("git_commit") or "(unknown)"
        say(f"{bundle}: suite {manifest['suite']}, made {manifest.get('created')} at commit "
            f"{commit}; every member's sha256 checked")  # fmt: skip
        place = placement(manifest, files, root)
        if place.conflicts:
            raise DataError(
                "nothing was unpacked: " + "; ".join(place.conflicts) + ". Move those files "
                "aside (the bundle brings what the suite's fetch reads there), or pack from "
                "the archive folder that holds them."
            )
        wheels = [files[w["member"]] for w in manifest.get("wheels", [])]
        python = _python(venv, say) if venv is not None else sys.executable
        if wheels and (site is not None or venv is not None):
            install_wheels(wheels, site=site, python=python)
            say(f"installed {len(wheels)} wheels into {site if site is not None else venv}")
        elif wheels:
            say(f"note: the bundle's {len(wheels)} wheels were not installed (--site or --venv "
                "installs them)")  # fmt: skip
        for source, target in sorted(place.copies, key=lambda c: c[1].name != "SHA256SUMS"):
            atomic_write(target, lambda tmp, source=source: shutil.copyfile(source, tmp))
        for entry, folder in place.raw:
            _install_raw(entry, folder, files)
        say(f"data: {len(place.copies)} archive files and {len(place.raw)} raw copies put in "
            f"place, {len(place.kept)} already there")  # fmt: skip
    if prepare:
        env = node_environment(site)
        for entry in manifest["datasets"]:
            for verb in ("fetch", "prepare"):
                _run_step(python, env, root, [*command, "--suite", manifest["suite"]], verb, entry)
        say(f"fetched and prepared {len(manifest['datasets'])} datasets without network")
    return manifest


def _python(venv: Path, say: Callable[[str], None]) -> str:
    """The Python of the virtual environment ``venv``, made (seeing the node's own
    packages, its CUDA torch among them) when it does not exist."""
    python = Path(venv) / "bin" / "python"
    if not python.exists():
        done = subprocess.run(
            [sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise DataError(
                f"--venv {venv}: could not make a virtual environment there "
                f"({(done.stderr or done.stdout).strip()[-300:]}); give an existing one, or "
                f"--site DIR"
            )
        say(f"made the virtual environment {venv} (it sees {sys.executable}'s packages)")
    return str(python)


def node_environment(site: Path | None) -> dict:
    """The environment of the steps run with the installed packages: ``site`` and the
    project's source first on ``PYTHONPATH``, the Hugging Face Hub offline."""
    import ssmbench

    src = Path(ssmbench.__file__).resolve().parents[1]
    paths = [str(Path(site).resolve())] if site is not None else []
    paths += [str(src), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)),
            "HF_HUB_OFFLINE": "1"}  # fmt: skip


def _run_step(python: str, env: dict, root: Path, before: list[str], verb: str, entry) -> None:
    args = [verb, "--benchmark", entry["benchmark"], "--dataset", entry["dataset"]]
    done = subprocess.run([python, "-m", "ssmbench", *before, *args], cwd=root, env=env)
    if done.returncode != 0:
        raise DataError(
            f"ssmbench {' '.join(args)} failed (exit {done.returncode}; its messages are "
            f"above). The bundle's files are in place: fix the cause, then run `ssmbench "
            f"offline unpack` again (it keeps what is there) or that step alone."
        )
