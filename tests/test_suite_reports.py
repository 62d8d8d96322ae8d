"""Each suite's report in its own folder, through the real Snakemake on real UEA data: the
suite params.yaml names reports at results/ and figures/ (DVC's outs), another suite beside
it under results/suites/<suite>/, and neither run touches the other's report;
`ssmbench report --show-tables` prints the suite asked for, and `snakemake --report`
bundles that suite's figures."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import pytest
from conftest import make_project, tool_env

pytestmark = pytest.mark.integration

#: the second suite: one model the suite `tiny` does not run, one dataset, one epoch
MINE = {
    "description": "a second suite beside tiny: S4D on BasicMotions, 1 epoch",
    "benchmarks": {"uea": ["BasicMotions"]},
    "models": ["S4D"],
    "folds": [0],
    "overrides": {"max_epochs": 1},
}


def run(cmd, cwd, env, should_fail=False) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    output = proc.stdout + proc.stderr
    if (proc.returncode != 0) != should_fail:
        raise AssertionError(f"{' '.join(cmd)} exited {proc.returncode}:\n{output[-8000:]}")
    return output


def test_two_suites_report_side_by_side(tmp_path):
    def two_suites(params):
        params["suite"] = "tiny"
        params["suites"]["mine"] = MINE

    project = make_project(tmp_path / "proj", two_suites)
    env = tool_env(project)
    ssmbench = [sys.executable, "-m", "ssmbench"]
    results = project / "results"
    run(["snakemake", "--cores", "2"], project, env)  # tiny: params.yaml's suite
    dvc_owned = [
        *(results / name for name in ("metrics.csv", "summary.json", "curves.csv")),
        results / "tables" / "table5.md",
        project / "figures" / "png" / "figure7.png",
    ]
    before = {path: path.read_bytes() for path in dvc_owned}

    run(["snakemake", "--cores", "2", "--config", "suite=mine"], project, env)
    # the report of params.yaml's suite is as it was, byte for byte
    assert {path: path.read_bytes() for path in dvc_owned} == before
    tiny = json.loads((results / "summary.json").read_text())
    assert tiny["suite"] == "tiny" and set(tiny["uea"]) == {"MS4N", "MS4"}
    assert tiny["grid"]["runs"] == 4  # 2 datasets x 2 models x 1 fold
    # mine's, in the same layout under results/suites/mine
    mine_dir = results / "suites" / "mine"
    mine = json.loads((mine_dir / "summary.json").read_text())
    assert mine["suite"] == "mine" and set(mine["uea"]) == {"S4D"}
    assert mine["grid"]["runs"] == 1
    assert len((mine_dir / "metrics.csv").read_text().splitlines()) == 2  # header, 1 run
    assert "S4D (ours)" in (mine_dir / "tables" / "table5.md").read_text()
    for ext in ("png", "pdf"):
        assert (mine_dir / "figures" / ext / f"figure7.{ext}").stat().st_size > 1000
    assert (project / "logs" / "suites" / "mine" / "report.log").is_file()

    # mine's report is current where it is
    dry = run(["snakemake", "-n", "--cores", "2", "--config", "suite=mine"], project, env)
    assert "Nothing to be done" in dry

    # --show-tables: the suite asked for, from its own folder
    shown = run([*ssmbench, "report", "--show-tables"], project, env)
    assert "results/tables/table5.md:" in shown and "MS4N (ours)" in shown
    assert "S4D (ours)" not in shown
    shown = run([*ssmbench, "--suite", "mine", "report", "--show-tables"], project, env)
    assert "results/suites/mine/tables/table5.md:" in shown and "S4D (ours)" in shown
    assert "MS4N (ours)" not in shown
    listed = run([*ssmbench, "report", "--suite", "mine", "--list-outputs"], project, env)
    assert "summary_json: results/suites/mine/summary.json" in listed

    # `snakemake --report` of a suite bundles that suite's figures
    run(["snakemake", "--config", "suite=mine", "--report", "mine.zip"], project, env)
    with zipfile.ZipFile(project / "mine.zip") as bundle:
        bundled = [bundle.read(n) for n in bundle.namelist() if n.endswith("/figure7.png")]
    mine_figure = (mine_dir / "figures" / "png" / "figure7.png").read_bytes()
    assert bundled == [mine_figure] and mine_figure != before[dvc_owned[-1]], len(bundled)
