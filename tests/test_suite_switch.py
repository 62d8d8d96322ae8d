"""Switching the suite DVC runs keeps every record: `ssmbench suites --use NAME` edits
params.yaml's `suite:` line alone (comments and all else as they were), and `dvc repro`
then runs NAME, keeping the records of the suite before, of NAME and one made by hand.
(`dvc exp run -S suite=NAME` would edit the same line, but an experiment starts by checking
dvc.lock's outputs out, which deletes every record made since: the README shows the
former.)"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import make_project, tool_env

from ssmbench.params_file import ConfigError, named_suite, set_named_suite


def test_use_edits_the_suite_line_alone(tmp_path):
    params = tmp_path / "params.yaml"
    text = "# a comment\nstudies: [params/ms4.yaml]\nsuite: default   # which suite\nx: 1\n"
    params.write_text(text)
    assert set_named_suite(params, "tiny") == "default"
    assert params.read_text() == text.replace("suite: default", "suite: tiny")
    assert named_suite(params) == "tiny"
    params.write_text("studies: []\n")
    with pytest.raises(ConfigError, match=r"no top-level `suite:` line"):
        set_named_suite(params, "tiny")


def _run(cmd: list[str], cwd: Path, env: dict) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{' '.join(cmd)}: {proc.stdout}{proc.stderr}"
    return proc.stdout + proc.stderr


@pytest.mark.integration
def test_the_documented_suite_switch_keeps_every_record(tmp_path):
    def small(params):
        for name, model in (("default", "MS4N"), ("tiny", "S4D")):
            suite = params["suites"][name]
            suite.update(benchmarks={"uea": ["BasicMotions"]}, models=[model], folds=[0])
            suite["overrides"] = {"max_epochs": 1}
        params["suite"] = "default"

    project = make_project(tmp_path / "proj", small)
    env = tool_env(project)
    _run(["git", "init", "-q"], project, env)
    _run(["dvc", "init", "-q"], project, env)
    _run(["dvc", "config", "core.analytics", "false"], project, env)
    _run(["dvc", "repro"], project, env)  # the default suite's record, locked in dvc.lock
    _run(["git", "add", "-A"], project, env)
    _run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "r"], project, env)
    runs = project / "results" / "runs" / "uea" / "BasicMotions"
    by_hand = ["ssmbench", "--suite", "tiny", "train", "--benchmark", "uea", "--dataset",
               "BasicMotions", "--model", "MS4", "--fold", "0", "--max-epochs", "1"]  # fmt: skip
    _run(by_hand, project, env)
    before = {p: p.read_bytes() for p in runs.rglob("fold0.json")}
    assert {p.parent.name for p in before} == {"MS4N", "MS4"}

    said = _run(["ssmbench", "suites", "--use", "tiny"], project, env)
    assert said.strip() == (
        "params.yaml: suite default -> tiny; `dvc repro` runs it (its report is the versioned one)"
    )
    _run(["dvc", "repro"], project, env)
    after = {p: p.read_bytes() for p in runs.rglob("fold0.json")}
    assert {p.parent.name for p in after} == {"MS4N", "MS4", "S4D"}
    assert all(after[p] == content for p, content in before.items())  # kept as they were
