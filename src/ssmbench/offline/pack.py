"""``ssmbench offline pack``: on a machine with network, everything a suite's runs need on
a compute node without it, in one bundle (``ssmbench.offline.archive``'s tar).

What it holds:

* ``ssmbench-bundle.json`` (:data:`MANIFEST`): the suite, where each dataset's files go on
  the node, the order in which to fetch and prepare them there, the wheels;
* ``wheels/``: a wheel of each package the installed project needs, at the version installed
  (``ssmbench.offline.wheels``), unless left out;
* ``data/<benchmark>/<dataset>/``: what the node's ``ssmbench fetch`` would otherwise have to
  download, compressed (``.xz``). Each dataset is first fetched here, as ``ssmbench fetch``
  does (nothing to do where it is fetched already), and packed from that checked copy, by
  how the node's fetch will read it (:func:`plan_datasets`):

  - ``archive``: a UEA dataset of an ``archive_dir``. Its two ``.ts`` files, as
    ``.ts.xz`` (the archive's own compressed file where it had one), and a ``SHA256SUMS``
    listing the decompressed content under the ``.ts`` names and each compressed file
    under its own: on the node they go to ``<archive_dir>/<Name>/``, the folder the suite's
    settings name here (``paths.uea_archive`` for the suites that read the user's copy:
    the node's fetch reads the folder its own settings name, so they must name the same),
    whose fetch decompresses them and checks both sums;
  - ``raw``: a dataset whose fetch downloads (UEA without ``archive_dir``, MONSTER from the
    Hub, the official Physiome-ODE archive) or copies from an installed package (the
    generated Physiome-ODE sets' model files): the raw copy itself, each file ``.xz``, with
    its ``provenance.json``; on the node it becomes ``<paths.raw>/<benchmark>/<Name>/``,
    which the fetch there finds intact and keeps, without network;
  - ``made``: generated or derived from another dataset (Fading Flash, ``uea6``,
    ``uea_drop``): nothing to carry; a derived one brings its base into the bundle.

A dataset whose fetch copies a local folder other than a UEA archive (MONSTER's
``local_dir``) is refused: the node's fetch reads that folder itself.
"""

from __future__ import annotations

import json
import lzma
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ssmbench.data.checksums import CHUNK, SUMS_FILE, sha256_file
from ssmbench.data.errors import DataError
from ssmbench.offline.archive import write_archive
from ssmbench.offline.wheels import download_wheels, wheel_name

#: the bundle's description of itself, and the form it has
MANIFEST = "ssmbench-bundle.json"
FORMAT = "ssmbench-bundle/1"
#: the kinds of dataset entry (module docstring)
KINDS = ("archive", "raw", "made")
#: xz preset of the files compressed here (xz's default: 94 MiB to compress, 9 to read)
XZ_PRESET = 6


@dataclass(frozen=True)
class DatasetPlan:
    """One dataset of a bundle: how the node's fetch gets it (``kind``, :data:`KINDS`) and
    the folder its files go to there, as params.yaml gives it (None for ``made``)."""

    benchmark: str
    dataset: str
    kind: str
    folder: str | None
    settings: dict = field(compare=False, repr=False)


@dataclass(frozen=True)
class WheelRequest:
    """Which wheels a bundle carries (``ssmbench.offline.wheels.dependency_pins``) and
    for which Python (None: this one; a version such as ``3.12``, with platform tags)."""

    pins: list[tuple[str, str]]
    python_version: str | None = None
    platforms: tuple[str, ...] = ()


def plan_datasets(params: dict, suite: str | None = None) -> list[DatasetPlan]:
    """The datasets the suite's runs need, each base before the datasets derived from it
    (the order to prepare them in), with how each travels. DataError for one that cannot
    travel (module docstring)."""
    from ssmbench.config import benchmark_settings, suite_datasets
    from ssmbench.data.sources import SOURCES, derived_base

    plans: list[DatasetPlan] = []
    seen: set[tuple[str, str]] = set()

    def visit(benchmark: str, dataset: str) -> None:
        if (benchmark, dataset) in seen:
            return
        seen.add((benchmark, dataset))
        settings = benchmark_settings(params, benchmark, suite, dataset)
        source = SOURCES[settings["source"]]
        if source.derived_from is not None:
            visit(*derived_base(dataset, settings))
        plans.append(_plan(params, benchmark, dataset, settings, source))

    for benchmark, dataset in suite_datasets(params, suite):
        visit(benchmark, dataset)
    return plans


def _plan(params: dict, benchmark: str, dataset: str, settings: dict, source) -> DatasetPlan:
    if source.recipe is not None:
        return DatasetPlan(benchmark, dataset, "made", None, settings)
    archive = source.archive_folder(dataset, settings) if source.archive_folder else None
    if archive is not None:
        return DatasetPlan(benchmark, dataset, "archive", str(archive), settings)
    if source.source_files is not None and (files := source.source_files(dataset, settings)):
        raise DataError(
            f"{benchmark}/{dataset}: its fetch copies a local folder ({files[0].parent}: "
            f"benchmarks.{benchmark}.local_dir), which a bundle does not carry: the node's "
            f"fetch reads that folder itself. Make it reachable from the node, or unset "
            f"local_dir to fetch the dataset here and pack the fetched copy."
        )
    folder = Path(params["paths"]["raw"]) / benchmark / dataset
    return DatasetPlan(benchmark, dataset, "raw", str(folder), settings)


def pack(
    params: dict,
    out: Path,
    *,
    suite: str | None = None,
    wheels: WheelRequest | None = None,
    say: Callable[[str], None] = lambda message: None,
) -> dict:
    """Write the bundle ``out`` for ``suite``'s runs (module docstring); return its
    manifest. Every dataset is fetched first (into paths.raw, as ``ssmbench fetch``).
    Nothing is left under ``out``'s name unless the whole bundle was written."""
    from ssmbench.data.sources import fetch

    suite = suite or params["suite"]
    out = Path(out)
    plans = plan_datasets(params, suite)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.", dir=out.parent) as tmp:
        work = Path(tmp)
        members: dict[str, Path] = {}
        wheel_entries = []
        if wheels is not None and wheels.pins:
            say(f"downloading the wheels of {len(wheels.pins)} packages")
            for path in download_wheels(
                wheels.pins, work / "wheels", python_version=wheels.python_version,
                platforms=wheels.platforms,
            ):  # fmt: skip
                name, version = wheel_name(path)
                member = f"wheels/{path.name}"
                members[member] = path
                wheel_entries.append({"name": name, "version": version, "member": member})
        datasets = []
        for plan in plans:
            entry = {
                "benchmark": plan.benchmark, "dataset": plan.dataset, "kind": plan.kind,
                "folder": plan.folder, "files": [],
            }  # fmt: skip
            if plan.kind != "made":
                raw_dir = Path(params["paths"]["raw"]) / plan.benchmark
                prov = fetch(plan.dataset, raw_dir, plan.settings)
                pack_files = _archive_files if plan.kind == "archive" else _raw_files
                entry["files"] = pack_files(plan, prov, raw_dir / plan.dataset, work, members)
                size = sum(members[f["member"]].stat().st_size for f in entry["files"])
                say(f"packed {plan.benchmark}/{plan.dataset} ({plan.kind}, {_mib(size)})")
            datasets.append(entry)
        manifest = {
            "format": FORMAT,
            "suite": suite,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "git_commit": _git_commit(),
            "python": {
                "version": (wheels.python_version if wheels else None)
                or ".".join(map(str, sys.version_info[:2])),
                "platforms": list(wheels.platforms) if wheels else [],
            },
            "wheels": wheel_entries,
            "datasets": datasets,
        }
        (work / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        members[MANIFEST] = work / MANIFEST
        write_archive(out, members)
    say(f"wrote {out} ({_mib(out.stat().st_size)}): {len(wheel_entries)} wheels, "
        f"{len(datasets)} datasets")  # fmt: skip
    return manifest


def _member(plan: DatasetPlan, name: str) -> str:
    return f"data/{plan.benchmark}/{plan.dataset}/{name}"


def _recorded(plan: DatasetPlan, prov: dict) -> dict[str, str]:
    """{file name in the raw folder: sha256} of the fetched copy's provenance."""
    prefix = f"{plan.dataset}/"
    return {rel[len(prefix) :]: sha for rel, sha in sorted(prov["raw_files"].items())}


def _archive_files(
    plan: DatasetPlan, prov: dict, raw: Path, work: Path, members: dict[str, Path]
) -> list[dict]:
    """The ``.ts.xz`` files and ``SHA256SUMS`` of a dataset of ``archive_dir``."""
    folder = work / "data" / plan.benchmark / plan.dataset
    folder.mkdir(parents=True, exist_ok=True)
    read_from = prov.get("decompressed_from") or {}
    sums, files = [], []
    for name, sha in _recorded(plan, prov).items():
        source = read_from.get(f"{plan.dataset}/{name}")
        archived = Path(plan.folder).parent / source["file"] if source else None
        if archived is not None and sha256_file(archived) == source["sha256"]:
            packed = folder / archived.name  # the archive's own compressed file, as it is
            shutil.copyfile(archived, packed)
        else:
            packed = folder / f"{name}.xz"
            _compress(raw / name, packed, sha)
        sums += [f"{sha}  {name}\n", f"{sha256_file(packed)}  {packed.name}\n"]
        members[_member(plan, packed.name)] = packed
        files.append({"member": _member(plan, packed.name), "name": packed.name})
    (folder / SUMS_FILE).write_text("".join(sums), encoding="utf-8")
    members[_member(plan, SUMS_FILE)] = folder / SUMS_FILE
    return [{"member": _member(plan, SUMS_FILE), "name": SUMS_FILE}, *files]


def _raw_files(
    plan: DatasetPlan, prov: dict, raw: Path, work: Path, members: dict[str, Path]
) -> list[dict]:
    """Each file of a fetched raw copy, ``.xz``, and its ``provenance.json``."""
    from ssmbench.data.provenance import PROVENANCE

    folder = work / "data" / plan.benchmark / plan.dataset
    files = []
    for name, sha in _recorded(plan, prov).items():
        packed = folder / f"{name}.xz"
        packed.parent.mkdir(parents=True, exist_ok=True)
        size = _compress(raw / name, packed, sha)
        members[_member(plan, f"{name}.xz")] = packed
        files.append({
            "member": _member(plan, f"{name}.xz"), "name": name, "sha256": sha, "bytes": size,
        })  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    (folder / PROVENANCE).write_bytes((raw / PROVENANCE).read_bytes())
    members[_member(plan, PROVENANCE)] = folder / PROVENANCE
    return [*files, {"member": _member(plan, PROVENANCE), "name": PROVENANCE}]


def _compress(src: Path, dest: Path, sha256: str) -> int:
    """``src`` as xz in ``dest``, its sha256 taken in the same read; DataError if it is
    not ``sha256`` (the raw copy changed since its fetch checked it). Returns its size."""
    import hashlib

    digest, size = hashlib.sha256(), 0
    with open(src, "rb") as handle, lzma.open(dest, "wb", preset=XZ_PRESET) as out:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
            size += len(chunk)
            out.write(chunk)
    if digest.hexdigest() != sha256:
        raise DataError(
            f"{src}: sha256 {digest.hexdigest()}, but its provenance.json records {sha256}: "
            f"the raw copy changed after its fetch. Fetch it again (ssmbench fetch --force) "
            f"and pack again."
        )
    return size


def _git_commit() -> str | None:
    """The commit of the checkout packed from (the working folder's), where there is one."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=False
        )
    except OSError:
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"
