"""What DVC keeps of the data (docs/development.md#the-cache-one-copy-of-large-data).

* The data (data/raw, data/prepared) are outputs DVC hashes but does not cache: their
  md5s go into dvc.lock, so `dvc status` and `dvc repro` see a change, and no second copy
  of them is made; they come back from their checksummed sources.
* The cache (records, tuned settings: small) is shared with the workspace by reflink or
  copy, never by a link: a file changed in place through a hard link or symlink changes
  the cache. The searches' Optuna journals (results/tuning), appended in place, are no
  out at all.
* Staging files of a fetch or preparation in progress are ignored by DVC, so none is
  ever hashed into dvc.lock.
* Run for real with dvc and snakemake on a project copy: the data stage leaves the cache
  without a byte of the data, each data file a file of its own (no link), dvc.lock with
  their hashes; a hand edit of a prepared file shows in `dvc status`; a re-preparation in
  `dvc repro` records the new hashes and still caches nothing.

Real data: aeon's BasicMotions, through a private archive_dir whose TRAIN file is edited
to make a re-preparation.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, make_project, tool_env

UEA = "BasicMotions"


def _dvc(args: list[str], cwd: Path, env: dict | None = None) -> str:
    proc = subprocess.run(
        ["dvc", *args], cwd=cwd, env=env or tool_env(), capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, f"dvc {' '.join(args)}: {proc.stdout}{proc.stderr}"
    return proc.stdout + proc.stderr


def test_the_repositorys_cache_type_makes_no_links():
    types = _dvc(["config", "--project", "cache.type"], REPO).strip().split(",")
    assert types and set(types) <= {"reflink", "copy"}, types
    # Optuna's journals, appended in place, are no out (neither hashed nor cached)
    import yaml

    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    outs = [next(iter(o)) if isinstance(o, dict) else o for s in stages.values()
            for o in s.get("outs", [])]  # fmt: skip
    assert "results/tuned" in outs and not any(o.startswith("results/tuning") for o in outs)


def test_the_data_are_hashed_not_cached():
    import yaml

    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    outs = {}
    for stage in stages.values():
        for out in stage.get("outs", []):
            name, opts = next(iter(out.items())) if isinstance(out, dict) else (out, {})
            outs[name] = opts or {}
    for data in ("data/raw", "data/prepared"):
        assert outs[data] == {"persist": True, "cache": False}, (data, outs[data])


def test_staging_files_are_ignored_by_dvc(tmp_path):
    from ssmbench.data.download import staged_path
    from ssmbench.data.monster.fetch import STAGING

    raw = "data/raw/uea/BasicMotions"
    names = [
        f"{raw}/{staged_path(Path(raw), 'BasicMotions_TRAIN.ts').name}",  # a staged raw file
        "data/prepared/uea/.BasicMotions.tmp-0123abcd",  # io.atomic_folder
        "data/prepared/uea/.BasicMotions.old-0123abcd",  # io.swap_into_place
        "data/raw/uea/.BasicMotions.download-x1y2",  # aeon's download folder
        f"data/raw/monster/WISDM/{STAGING}",  # the Hub's
        f"{raw}/.provenance.json.k3j2.tmp",  # io.atomic_write
    ]
    out = _dvc(["check-ignore", *names], REPO)
    assert out.split() == names
    kept = subprocess.run(["dvc", "check-ignore", f"{raw}/BasicMotions_TRAIN.ts"], cwd=REPO,
                          env=tool_env(), capture_output=True, text=True)  # fmt: skip
    assert kept.returncode == 1  # data files are not ignored


def _files(root: Path) -> list[Path]:
    """The data files under ``root`` (not DVC's ignored staging or lock files)."""
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def _cached_md5s(project: Path) -> set[str]:
    """The md5s of the objects in the project's DVC cache (none when it has no cache)."""
    root = project / ".dvc" / "cache" / "files" / "md5"
    return {p.parent.name + p.name for p in root.rglob("*") if p.is_file()}


def _locked(project: Path, out: str) -> str:
    import yaml

    lock = yaml.safe_load((project / "dvc.lock").read_text())
    (entry,) = [o for o in lock["stages"]["data"]["outs"] if o["path"] == out]
    return entry["md5"]


def _nothing_cached(project: Path) -> None:
    """No data file is in the cache, and none is a link (each a file of its own)."""
    files = _files(project / "data" / "raw") + _files(project / "data" / "prepared")
    assert files
    cached = _cached_md5s(project)
    for path in files:
        assert not path.is_symlink() and os.stat(path).st_nlink == 1, f"{path} is a link"
        assert _md5(path) not in cached, f"{path} is in DVC's cache"


@pytest.mark.integration
def test_the_data_stage_records_the_data_and_caches_none_of_it(tmp_path):
    import aeon.datasets

    archive = tmp_path / "archive"
    shutil.copytree(Path(aeon.datasets.__file__).resolve().parent / "data" / UEA, archive / UEA)

    def one_dataset(params):
        params["suite"] = "tiny"
        params["suites"]["tiny"]["benchmarks"] = {"uea": [UEA]}
        params["suites"]["tiny"]["overrides"]["archive_dir"] = str(archive)

    project = make_project(tmp_path / "proj", one_dataset)
    env = tool_env(project)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    _dvc(["init", "-q"], project, env)
    _dvc(["config", "core.analytics", "false"], project, env)

    _dvc(["repro", "data"], project, env)
    _nothing_cached(project)
    prepared = _locked(project, "data/prepared")
    assert prepared.endswith(".dir") and _locked(project, "data/raw").endswith(".dir")
    assert "up to date" in _dvc(["status", "data"], project, env)

    # a hand edit of a prepared file: DVC sees it
    labels = project / "data" / "prepared" / "uea" / UEA / "meta.json"
    kept = labels.read_bytes()
    labels.write_bytes(kept + b" ")
    assert "modified:           data/prepared" in _dvc(["status", "data"], project, env)
    labels.write_bytes(kept)
    assert "up to date" in _dvc(["status", "data"], project, env)

    # a source edited: dvc repro fetches and prepares again, records the new hashes, and
    # still keeps no copy
    x = project / "data" / "prepared" / "uea" / UEA / "X.npy"
    first_x = _md5(x)
    train = archive / UEA / f"{UEA}_TRAIN.ts"
    train.write_text(train.read_text().replace("0.", "1.", 1))
    _dvc(["repro", "-f", "data"], project, env)
    assert _md5(x) != first_x
    assert _locked(project, "data/prepared") != prepared
    _nothing_cached(project)
    assert "up to date" in _dvc(["status", "data"], project, env)
