"""Run records from a compute node back into a project: ``ssmbench offline records`` packs
the finished runs of a run folder, ``ssmbench offline merge`` adds them to another's.

A finished run is a unit of files beside each other under ``paths.runs``
(``<benchmark>/<dataset>/<model>/fold{k}.json``, docs/contracts.md): the record, sealed
(its ``content_sha256``), naming the run of its path, with the curve and the test scores it
names and whose sha256 it holds (``ssmbench.staleness.unit_problems``), and its provenance
file where that belongs to it. The run's log, ``<paths.logs>/train/.../fold{k}.log``,
travels with it where there is one. A record that is not such a unit (unsealed, edited, a
curve that is not its own) is not packed, and is refused in an archive.

Merging never replaces a finished record that differs. Every unit of the archive is
compared with the project's first: a run with no record there is added (its companions
first, the record last, each file written whole: ``ssmbench.io.atomic_write``; its log
replaces the log of the attempt that left no record); a run whose record, curve and test
scores are there byte for byte is skipped; a run whose record is there with any other
content, or an archive unit that is not whole, refuses the whole merge, naming each one,
before anything is written.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ssmbench.data.errors import DataError
from ssmbench.data.names import name_problem
from ssmbench.io import atomic_write
from ssmbench.offline.archive import extracted, write_archive

MANIFEST = "ssmbench-records.json"
FORMAT = "ssmbench-records/1"
#: where a unit's files and its log are in an archive
RUNS, LOGS = "runs", "logs/train"
_RECORD = re.compile(r"fold(\d+)\.json")


def _identity(rel: str) -> dict | str:
    """{benchmark, dataset, model, fold} of a record's path relative to paths.runs, or why
    it is not one."""
    parts = rel.split("/")
    if len(parts) != 4 or not _RECORD.fullmatch(parts[3]):
        return f"{rel} is not <benchmark>/<dataset>/<model>/fold<k>.json"
    for kind, value in zip(("benchmark", "dataset", "model"), parts[:3], strict=True):
        if (why := name_problem(kind, value)) is not None:
            return f"{rel}: {why}"
    fold = int(_RECORD.fullmatch(parts[3]).group(1))
    return {"benchmark": parts[0], "dataset": parts[1], "model": parts[2], "fold": fold}


def unit_files(record_path: Path, rel: str) -> tuple[dict[str, Path], list[str]]:
    """The files of the run whose record is ``record_path`` (``rel`` under paths.runs):
    ({file name: path}, the record first; []) when it is a finished unit, else ({}, what is
    wrong)."""
    from ssmbench.provenance_file import RECORD_SHA256_KEY, provenance_path_of
    from ssmbench.staleness import (
        CONTENT_SHA256_KEY,
        CURVE_FILE_KEY,
        SCORES_FILE_KEY,
        read_record_json,
        record_problems,
        unit_problems,
    )

    spec = _identity(rel)
    if isinstance(spec, str):
        return {}, [spec]
    try:
        record, non_finite = read_record_json(record_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return {}, [f"unreadable ({exc})"]
    if not isinstance(record, dict):
        return {}, ["not a JSON object"]
    problems = record_problems(record, spec, non_finite=False)
    problems += ["it holds NaN or Infinity"] if non_finite else []
    problems += unit_problems(record_path, record)
    if problems:
        return {}, problems
    files = {record_path.name: record_path}
    for key in (CURVE_FILE_KEY, SCORES_FILE_KEY):
        if key in record:
            files[record[key]] = record_path.parent / record[key]
    provenance = provenance_path_of(record_path)
    try:
        facts = json.loads(provenance.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        facts = None
    if isinstance(facts, dict) and facts.get(RECORD_SHA256_KEY) == record[CONTENT_SHA256_KEY]:
        files[provenance.name] = provenance
    return files, []


def pack_records(
    runs_dir: Path,
    logs_dir: Path,
    out: Path,
    records: Iterable[Path],
    say: Callable[[str], None] = lambda message: None,
) -> dict:
    """Write the archive ``out`` of the finished runs among ``records`` (paths of records
    under ``runs_dir``; one that is not there is passed over) with their logs; return
    ``{"packed": [rel, ...], "left_out": {rel: why}}``."""
    runs_dir, logs_dir = Path(runs_dir), Path(logs_dir)
    members: dict[str, Path] = {}
    packed, left_out = [], {}
    for path in sorted(set(records)):
        if not path.is_file():
            continue
        rel = path.relative_to(runs_dir).as_posix()
        files, problems = unit_files(path, rel)
        if problems:
            left_out[rel] = "; ".join(problems)
            continue
        folder = rel.rsplit("/", 1)[0]
        for name, file in files.items():
            members[f"{RUNS}/{folder}/{name}"] = file
        log = logs_dir / "train" / (rel[: -len(".json")] + ".log")
        if log.is_file():
            members[f"{LOGS}/{rel[: -len('.json')]}.log"] = log
        packed.append(rel)
    for rel, why in left_out.items():
        say(f"left out {rel}: {why}")
    manifest = {
        "format": FORMAT, "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "runs": packed,
    }  # fmt: skip
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    listing = out.with_name(f".{out.name}.{MANIFEST}")
    try:
        listing.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        write_archive(out, {MANIFEST: listing, **members})
    finally:
        listing.unlink(missing_ok=True)
    say(f"wrote {out}: {len(packed)} finished runs, {len(left_out)} records left out")
    return {"packed": packed, "left_out": left_out}


@dataclass
class Merge:
    """What a merge found: runs to add, runs already there alike, and what refuses it."""

    new: list[str] = field(default_factory=list)
    same: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def merge_records(
    archive: Path,
    runs_dir: Path,
    logs_dir: Path,
    *,
    dry_run: bool = False,
    say: Callable[[str], None] = lambda message: None,
) -> Merge:
    """Add the finished runs of ``archive`` to ``runs_dir`` (and their logs to
    ``logs_dir``), as the module docstring says; ``dry_run`` writes nothing. DataError,
    before anything is written, when a run of the archive differs from the project's or is
    not whole. The caller holds the project lock (no run publishes meanwhile)."""
    runs_dir, logs_dir = Path(runs_dir), Path(logs_dir)
    found = Merge()
    with extracted(archive, runs_dir.parent) as files:
        _check_manifest(archive, files)
        units: dict[str, dict[str, Path]] = {}
        for member, path in files.items():
            if member.startswith(f"{RUNS}/") and _RECORD.fullmatch(path.name):
                rel = member[len(RUNS) + 1 :]
                unit, problems = unit_files(path, rel)
                if problems:
                    found.refused.append(f"{rel} in the archive: {'; '.join(problems)}")
                    continue
                units[rel] = unit
                state = _compare(unit, runs_dir / rel)
                if state is None:
                    found.new.append(rel)
                elif state == "same":
                    found.same.append(rel)
                else:
                    found.refused.append(f"{runs_dir / rel}: {state}")
        belongs = {f"{RUNS}/{rel.rsplit('/', 1)[0]}/{n}" for rel, u in units.items() for n in u}
        belongs |= {f"{LOGS}/{rel[: -len('.json')]}.log" for rel in units}
        if not found.refused:
            found.refused += [
                f"{member} in the archive is no file of a finished run in it"
                for member in sorted(set(files) - belongs - {MANIFEST})
            ]
        if found.refused:
            raise DataError(
                f"{archive}: nothing was merged: " + "; ".join(found.refused) + ". A finished "
                "record is never replaced: move the project's record aside to take the "
                "archive's, or leave that run out of the archive."
            )
        if not dry_run:
            for rel in found.new:
                _install(units[rel], runs_dir / rel)
                log = files.get(f"{LOGS}/{rel[: -len('.json')]}.log")
                if log is not None:
                    target = logs_dir / "train" / (rel[: -len(".json")] + ".log")
                    atomic_write(target, lambda tmp, log=log: shutil.copyfile(log, tmp))
    verb = "would add" if dry_run else "added"
    say(f"{archive}: {verb} {len(found.new)} runs to {runs_dir}; {len(found.same)} already "
        "there, alike")  # fmt: skip
    return found


def _check_manifest(archive: Path, files: dict[str, Path]) -> None:
    try:
        manifest = json.loads(files[MANIFEST].read_text(encoding="utf-8"))
    except (KeyError, ValueError) as exc:
        raise DataError(
            f"{archive}: no readable {MANIFEST}: not an archive of `ssmbench offline records`"
        ) from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise DataError(f"{archive}: {MANIFEST} is not of the form {FORMAT!r}")


def _compare(unit: dict[str, Path], target: Path) -> str | None:
    """None: no record at ``target``; "same": the record and the files it names are there
    byte for byte (its provenance file, where and when it ran, may differ); else what
    differs."""
    from ssmbench.provenance_file import is_provenance_file

    if not target.exists():
        return None
    for name, path in unit.items():
        if is_provenance_file(name):
            continue
        here = target.parent / name
        if not here.is_file():
            return f"the project has this record but not its {name}"
        if here.read_bytes() != path.read_bytes():
            what = "record" if name == target.name else name
            return f"the project's {what} differs from the archive's (a finished record is kept)"
    return "same"


def _install(unit: dict[str, Path], record: Path) -> None:
    """A unit's files beside ``record``: its companions first, the record last."""
    names = sorted(unit, key=lambda name: name == record.name)
    for name in names:
        source = unit[name]
        atomic_write(record.parent / name, lambda tmp, source=source: shutil.copyfile(source, tmp))


def record_paths(runs_dir: Path) -> list[Path]:
    """Every record under ``runs_dir``: the files named ``fold{k}.json`` at
    ``<benchmark>/<dataset>/<model>/``."""
    runs_dir = Path(runs_dir)
    return sorted(
        p for p in runs_dir.glob("*/*/*/fold*.json") if p.is_file() and _RECORD.fullmatch(p.name)
    )
