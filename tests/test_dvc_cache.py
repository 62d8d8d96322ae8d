"""How DVC's cache shares the data with the workspace (docs/development.md#dvc).

* The repository's cache type makes no links: the tune stage's Optuna journals
  (results/tuning) are appended in place, which through a hard link or symlink writes
  into the cache.
* Staging files of a fetch or preparation in progress are ignored by DVC, so none is
  ever cached (or, with hard links, written into the cache by a resumed download).
* The documented opt-in for large data, hard links on one machine (`dvc config --local
  cache.type hardlink,copy`), run for real with dvc and snakemake on a project copy: the
  data stage and `dvc checkout --relink` leave one copy of each file (the workspace file
  is the cache file), and a re-preparation, inside `dvc repro` or by Snakemake outside it
  and then `dvc commit`, never changes a cache object (each still hashes to its name);
  `dvc checkout --relink` makes one copy again of what DVC left as a copy.

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
    # the reason: a persist output appended in place (Optuna's journal)
    dvc_yaml = (REPO / "dvc.yaml").read_text()
    assert "results/tuning:\n          persist: true" in dvc_yaml


def test_staging_files_are_ignored_by_dvc(tmp_path):
    from ssmbench.data.download import staged_path
    from ssmbench.data.monster import STAGING

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


def _cache_objects(project: Path) -> list[Path]:
    return sorted(p for p in (project / ".dvc" / "cache" / "files" / "md5").rglob("*")
                  if p.is_file())  # fmt: skip


def _check_cache(project: Path) -> None:
    """Every cache object still holds what its name (its md5) says."""
    for obj in _cache_objects(project):
        name = obj.parent.name + obj.name.removesuffix(".dir")
        assert hashlib.md5(obj.read_bytes()).hexdigest() == name, f"{obj} changed"


def _one_copy(project: Path) -> int:
    """Each data file is its cache object (same inode, read-only); returns the bytes."""
    cache = {os.stat(p).st_ino for p in _cache_objects(project)}
    files = _files(project / "data" / "raw") + _files(project / "data" / "prepared")
    assert files
    for path in files:
        st = os.stat(path)
        assert st.st_ino in cache and st.st_nlink >= 2, f"{path} is a copy of its own"
        assert st.st_mode & 0o222 == 0, f"{path} is writable"
    return sum(os.stat(p).st_size for p in files)


@pytest.mark.integration
def test_hard_links_on_one_machine_keep_one_copy_and_a_reprepare_keeps_the_cache(tmp_path):
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
    _dvc(["config", "--local", "cache.type", "hardlink,copy"], project, env)

    _dvc(["repro", "data"], project, env)
    _dvc(["checkout", "--relink", "data/raw", "data/prepared"], project, env)
    size = _one_copy(project)
    x = project / "data" / "prepared" / "uea" / UEA / "X.npy"
    first_x = hashlib.md5(x.read_bytes()).hexdigest()
    assert size > x.stat().st_size > 0
    _check_cache(project)

    # a re-preparation by Snakemake outside dvc repro, into the linked folders (the
    # large-data way: no copy of the unchanged files), then dvc commit
    train = archive / UEA / f"{UEA}_TRAIN.ts"
    train.write_text(train.read_text().replace("0.", "1.", 1))
    proc = subprocess.run(["snakemake", "--cores", "1", "prepared"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert hashlib.md5(x.read_bytes()).hexdigest() != first_x  # prepared again
    _check_cache(project)  # the old objects untouched by the new files
    assert (project / ".dvc" / "cache" / "files" / "md5" / first_x[:2] / first_x[2:]).is_file()
    _dvc(["commit", "-f", "data"], project, env)
    _check_cache(project)
    # a file fetched again with content the cache holds stays a copy until relinked
    _dvc(["checkout", "--relink", "data/raw", "data/prepared"], project, env)
    _one_copy(project)
    assert "up to date" in _dvc(["status", "data"], project, env)

    # a re-preparation inside dvc repro: DVC copies the linked outputs first (persist)
    train.write_text(train.read_text().replace("1.", "2.", 1))
    _dvc(["repro", "-f", "data"], project, env)
    _check_cache(project)
    _dvc(["checkout", "--relink", "data/raw", "data/prepared"], project, env)
    _one_copy(project)
    assert "up to date" in _dvc(["status", "data"], project, env)
