"""A rerun is clean: `dvc repro` in a fresh clone of a project whose results are
committed writes the same files, so `git status` shows nothing and dvc.lock is as it was.

Run for real with dvc and snakemake on a project copy (the repository's .dvcignore and
.dvc/config, as a clone has them), one run of one epoch on aeon's BasicMotions: the
records and curves hold what the run computed, and where, when and how long it ran is in
each record's provenance file, which DVC does not hash; the data's time stamps are not
in what DVC hashes either. A suite without searches leaves no DVC out empty, so DVC
warns of none.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, make_project, tool_env

pytestmark = pytest.mark.integration

RECORD = Path("results/runs/uea/BasicMotions/MS4N/fold0.json")


def run(cmd: list[str], cwd: Path) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=tool_env(cwd), capture_output=True, text=True,
                          timeout=900)  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{output[-8000:]}"
    return output


def one_run(params: dict) -> None:
    params["suite"] = "tiny"
    params["suites"]["tiny"]["benchmarks"] = {"uea": ["BasicMotions"]}
    params["suites"]["tiny"]["models"] = ["MS4N"]
    params["suites"]["tiny"]["overrides"]["max_epochs"] = 1


def test_dvc_repro_in_a_fresh_clone_changes_nothing_tracked(tmp_path):
    project = make_project(tmp_path / "proj", one_run)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    run(["git", "init", "-q"], project)
    run(["dvc", "init", "-q"], project)
    for name in (".dvcignore", ".dvc/config"):  # the repository's, as in a clone
        shutil.copy2(REPO / name, project / name)
    shutil.copytree(REPO / ".dvc" / "plots", project / ".dvc" / "plots")
    run(git + ["add", "-A"], project)
    run(git + ["commit", "-qm", "project"], project)

    first = run(["dvc", "repro"], project)
    assert "is empty" not in first, first
    assert (project / "results" / "tuned" / "searches.json").is_file()
    assert json.loads((project / "results" / "tuned" / "searches.json").read_text()) == {
        "suite": "tiny", "tuned": []
    }  # fmt: skip
    # autostage is off: dvc repro stages nothing; what to commit is the user's choice
    assert run(["git", "diff", "--cached", "--name-only"], project).strip() == ""
    run(git + ["add", "-A"], project)
    run(git + ["commit", "-qm", "results"], project)

    clone = tmp_path / "clone"
    run(["git", "clone", "-q", str(project), str(clone)], tmp_path)
    second = run(["dvc", "repro"], clone)
    assert "Running stage 'train'" in second and "is empty" not in second, second
    assert run(["git", "status", "--porcelain"], clone) == ""
    assert (clone / "dvc.lock").read_bytes() == (project / "dvc.lock").read_bytes()
    # the same record and curve, byte for byte; each run's provenance beside its record
    for path in (RECORD, RECORD.with_name("fold0.curve.csv")):
        assert (clone / path).read_bytes() == (project / path).read_bytes(), path
    facts = [
        json.loads((root / RECORD.with_name("fold0.provenance.json")).read_text())
        for root in (project, clone)
    ]
    record = json.loads((clone / RECORD).read_text())
    assert facts[0]["record_sha256"] == facts[1]["record_sha256"] == record["content_sha256"]
    # made at two commits (before and after the results were committed): the same record
    assert facts[0]["git_commit"] != facts[1]["git_commit"]
    assert facts[1]["argv"][0].startswith(str(clone))
    # the DVC metrics: one small file per model, one row of five numbers each
    metric = json.loads((clone / "results" / "metrics" / "uea" / "MS4N.json").read_text())
    assert set(metric) == {"test_error", "rank", "std", "runs", "datasets", "agree"}
    assert metric["runs"] == 1  # agree: the paper's Table 5 has MS4N on BasicMotions
    shown = run(["dvc", "metrics", "show"], clone).splitlines()
    assert shown[0].split() == ["Path", *sorted(metric)], shown
    assert shown[1].startswith("results/metrics/uea/MS4N.json") and len(shown) == 2, shown
    assert max(map(len, shown)) <= 100, shown
