"""A finished record is never replaced by a run of other settings for another suite:
`ssmbench train` and the workflow refuse it before any job runs, naming the record, the
suite that made it and what differs, and say how to keep both (a variant) or to replace
(`--replace`, `--config replace=true`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, make_project, tool_env

from ssmbench.config import Job, job_spec, load_params
from ssmbench.staleness import other_suites_record, record_suite, tracked_settings


def _record(tmp_path, spec: dict, argv: list[str], **settings) -> Path:
    protocol = {**tracked_settings(spec)["settings"], **settings}
    path = tmp_path / "fold0.json"
    path.write_text(json.dumps({"argv": argv, "model_params": spec["model_params"],
                                "protocol": protocol}))  # fmt: skip
    return path


def test_only_another_suites_record_of_other_settings_is_protected(tmp_path):
    params = load_params(REPO / "params.yaml", suite="default")
    spec = job_spec(params, Job("uea", "BasicMotions", "MS4N", 0))
    tiny = ["ssmbench", "--suite", "tiny", "train"]
    path = _record(tmp_path, spec, tiny, max_epochs=2)
    assert record_suite(json.loads(path.read_text())) == "tiny"
    assert other_suites_record(path, spec, "default") == (
        f"{path}: made by suite 'tiny'; suite 'default' asks for other protocol settings "
        "(max_epochs: 2 -> 300)"
    )
    assert other_suites_record(path, spec, "tiny") is None  # its own suite: stale, rerun
    same = _record(tmp_path, spec, tiny)
    assert other_suites_record(same, spec, "default") is None  # same settings: shared
    unknown = _record(tmp_path, spec, ["ssmbench", "train"], max_epochs=2)
    assert other_suites_record(unknown, spec, "default") is None
    assert other_suites_record(tmp_path / "none.json", spec, "default") is None


@pytest.mark.integration
def test_the_workflow_and_train_refuse_to_replace_another_suites_record(tmp_path):
    project = make_project(tmp_path / "proj", lambda p: p.update(suite="tiny"))
    env = tool_env(project)
    snakemake = str(Path(sys.executable).parent / "snakemake")
    target = "results/runs/uea/BasicMotions/MS4N/fold0.json"

    def run(*cmd):
        return subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True,
                              timeout=600)  # fmt: skip

    made = run(snakemake, "--cores", "2", "--", target)
    assert made.returncode == 0, made.stderr[-3000:]
    before = (project / target).read_bytes()
    refused = run(snakemake, "-n", "--cores", "1", "--config", "suite=default")
    out = refused.stdout + refused.stderr
    assert refused.returncode != 0
    assert "suite 'default' would replace 1 finished record(s) of another suite" in out
    assert f"{target}: made by suite 'tiny'" in out and "(max_epochs: 2 -> 300)" in out
    assert "snakemake --config replace=true" in out
    trained = run(sys.executable, "-m", "ssmbench", "--suite", "default", "train",
                  "--benchmark", "uea", "--dataset", "BasicMotions", "--model", "MS4N",
                  "--fold", "0")  # fmt: skip
    assert trained.returncode == 2 and "not replaced" in trained.stderr
    assert (project / target).read_bytes() == before
    allowed = run(snakemake, "-n", "-p", "--cores", "1", "--config", "suite=default",
                  "replace=true")  # fmt: skip
    assert allowed.returncode == 0, allowed.stderr[-3000:]
    assert f"--record {target} --replace" in allowed.stdout
