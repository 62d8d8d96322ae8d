"""`snakemake --profile slurm` on a real SLURM: the single-node test cluster that
scripts/slurm/start.sh runs (`.ci/run` starts it around `make test`).

Without that cluster the SLURM tests are skipped, except in CI (env CI set), where a
missing cluster is an error. They never submit to another cluster (ClusterName must be the
test cluster's). The resource tests at the end need no SLURM (Snakemake dry runs).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import REPO, make_project, tool_env

from ssmbench.train.provenance import is_provenance_file, with_provenance

pytestmark = pytest.mark.integration

TEST_CLUSTER = "ssmbench"  # ClusterName written by scripts/slurm/start.sh
INIT_SECONDS = 2  # --slurm-init-seconds-before-status-checks for these tests
SNAKEMAKE_TIMEOUT = 600  # seconds; without a status answer the plugin would wait forever


def _run(cmd, **kwargs):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30, **kwargs)


def _test_cluster() -> tuple[dict | None, str]:
    """The test cluster's config (`scontrol show config` as a dict), or None and why not."""
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return None, "no SLURM client commands (sinfo, sbatch) on PATH"
    try:
        sinfo = _run(["sinfo", "-h", "-o", "%P %T"])
        show = _run(["scontrol", "show", "config"])
    except (OSError, subprocess.SubprocessError) as err:
        return None, f"SLURM does not answer: {err}"
    if sinfo.returncode != 0 or show.returncode != 0:
        return None, f"no SLURM reachable (sinfo: {(sinfo.stderr or show.stderr).strip()})"
    config = {}
    for line in show.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            config[key.strip()] = value.strip()
    if config.get("ClusterName") != TEST_CLUSTER:
        return None, (
            f"the reachable SLURM is cluster {config.get('ClusterName')!r}, not the test cluster "
            f"{TEST_CLUSTER!r} of scripts/slurm/start.sh; no test jobs are sent to it"
        )
    if not any(state in sinfo.stdout for state in ("idle", "mixed", "allocated")):
        return None, f"the test cluster has no usable node:\n{sinfo.stdout}"
    return config, ""


@pytest.fixture(scope="module")
def slurm() -> dict:
    config, reason = _test_cluster()
    if config is None:
        if os.environ.get("CI"):
            pytest.fail(
                f"CI is set but {reason}. .ci/run starts the test cluster with "
                "scripts/slurm/start.sh; start it (as root) before running these tests."
            )
        pytest.skip(f"{reason} (start one with scripts/slurm/start.sh)")
    min_job_age = int(re.match(r"\d+", config["MinJobAge"]).group())
    assert min_job_age >= 3 * INIT_SECONDS, (
        f"slurm.conf MinJobAge={min_job_age}s is under 3 x {INIT_SECONDS}s: the SLURM plugin "
        "would fall back to sacct, which fails without slurmdbd, and Snakemake would wait forever"
    )
    partition = next(
        line.split()[0].rstrip("*")
        for line in _run(["sinfo", "-h", "-o", "%P"]).stdout.splitlines()
        if line.strip().endswith("*")
    )
    return {"config": config, "partition": partition}


def _slurm_env(tmp_path: Path, project: Path, partition: str) -> dict:
    """The project's environment with the slurm profile installed, by the documented
    command, into a private config dir (never the user's ~/.config)."""
    env = tool_env(project)
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    subprocess.run(
        [REPO / "scripts" / "install-slurm-profile.sh", "--partition", partition],
        env=env,
        check=True,
        capture_output=True,
        timeout=30,
    )
    assert (tmp_path / "config" / "snakemake" / "slurm" / "config.yaml").is_file()
    return env


def _snakemake_slurm(project: Path, env: dict, log: Path, *args: str) -> tuple[int, str]:
    """`snakemake --profile slurm` under `timeout` (SIGINT first: Snakemake then cancels
    its SLURM jobs), verbose so that the plugin logs each sbatch call."""
    cmd = [
        "timeout", "-s", "INT", "-k", "60", str(SNAKEMAKE_TIMEOUT),
        "snakemake", "--profile", "slurm",
        "--slurm-init-seconds-before-status-checks", str(INIT_SECONDS),
        "--slurm-keep-successful-logs", "--verbose", *args,
    ]  # fmt: skip
    with log.open("w") as out:
        proc = subprocess.run(
            cmd, cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT,
            timeout=SNAKEMAKE_TIMEOUT + 120,
        )  # fmt: skip
    output = log.read_text()
    assert proc.returncode not in (124, 137), (
        f"snakemake --profile slurm did not finish within {SNAKEMAKE_TIMEOUT}s:\n{output[-6000:]}"
    )
    assert "Using profiles slurm" in output, output[:2000]
    return proc.returncode, output


def _submitted(output: str) -> list[tuple[str, str]]:
    """(SLURM job id, the sbatch command line the plugin ran for it), in submission order.
    Two threads submit, so calls and their job ids are paired by their SLURM log folder."""
    pending: dict[str, list[str]] = {}
    jobs = []
    for line in output.splitlines():
        if line.startswith("sbatch call: "):
            folder = re.search(r"--output (\S+)/%j\.log", line).group(1)
            pending.setdefault(folder, []).append(line.removeprefix("sbatch call: "))
        elif found := re.search(r"submitted with SLURM jobid (\d+) \(log: (\S+)/\d+\.log\)", line):
            jobs.append((found.group(1), pending[found.group(2)].pop(0)))
    assert not any(pending.values()), f"sbatch calls without a job id: {pending}"
    return jobs


def _scontrol_job(job_id: str) -> str:
    shown = _run(["scontrol", "show", "job", "-d", job_id])
    assert shown.returncode == 0, f"scontrol does not know job {job_id}: {shown.stderr}"
    return shown.stdout


def _tiny(datasets, models, gpu_model=None):
    def edit(params):
        params["suite"] = "tiny"
        suite = params["suites"]["tiny"]
        suite["benchmarks"] = {"uea": list(datasets)}
        suite["models"] = list(models)
        suite["overrides"]["max_epochs"] = 1
        train = params["resources"]["train"]
        for entry in (train["default"], *train["sizes"].values()):
            entry["mem_mb"] = 1000  # fits any test machine
        if gpu_model is not None:
            train.setdefault("models", {})[gpu_model] = {"gpu": 1}

    return edit


@pytest.mark.xdist_group("slurm_cluster")  # the test cluster runs one test's jobs at a time
def test_tiny_suite_runs_through_slurm(tmp_path, slurm):
    """Fetch, prepare and train two runs (one asking for a GPU) as real SLURM jobs."""
    project = make_project(tmp_path / "proj", _tiny(["BasicMotions"], ["MS4N", "MS4"], "MS4N"))
    env = _slurm_env(tmp_path, project, slurm["partition"])

    start = time.monotonic()
    rc, output = _snakemake_slurm(project, env, tmp_path / "snakemake.log", "runs")
    wall = time.monotonic() - start
    assert rc == 0, output[-8000:]
    submitted = dict(_submitted(output))
    run_id = re.search(r"SLURM run ID: (\S+)", output).group(1)

    runs = project / "results" / "runs"
    records = sorted(p for p in runs.rglob("fold*.json") if not is_provenance_file(p))
    assert [p.relative_to(project / "results" / "runs").as_posix() for p in records] == [
        "uea/BasicMotions/MS4/fold0.json",
        "uea/BasicMotions/MS4N/fold0.json",
    ]
    train_jobs = set()
    for path in records:
        record = with_provenance(path, json.loads(path.read_text()))
        assert record["epochs_run"] == 1 and 0.0 <= record["test_error"] <= 1.0
        assert record["slurm_job_id"] in submitted, (record["slurm_job_id"], submitted)
        train_jobs.add(record["slurm_job_id"])
    # Both tiny runs went into one SLURM job (group train_small), which asked for the GPU
    # that MS4N asks for: the plugin's sbatch line and SLURM's allocation say so.
    assert len(train_jobs) == 1
    (job_id,) = train_jobs
    sbatch = submitted[job_id]
    print(f"\nsnakemake --profile slurm: {wall:.1f} s wall; sbatch of GPU job {job_id}:\n{sbatch}")
    assert "--gpus=1" in sbatch and "--comment rule_train_small_train" in sbatch
    assert f"-p {slurm['partition']}" in sbatch and " -A " not in sbatch
    assert re.search(r" -t 60 --mem 1000 ", sbatch), sbatch  # 2 runs x 30 min, max memory
    shown = _scontrol_job(job_id)
    assert "JobState=COMPLETED" in shown and f"JobName={run_id}" in shown, shown
    assert "JOB_GRES=gpu:1" in shown, shown
    # slurmd gave the job one of the node's (fake) GPUs
    slurm_log = project / ".snakemake" / "slurm_logs" / "group_train_small_train" / f"{job_id}.log"
    assert re.search(r"'CUDA_VISIBLE_DEVICES': '\d'", slurm_log.read_text())
    # fetch and prepare went through SLURM too
    assert sum("--comment rule_fetch_" in call for call in submitted.values()) == 1
    assert sum("--comment rule_prepare_" in call for call in submitted.values()) == 1
    assert (project / "logs" / "train" / "uea" / "BasicMotions" / "MS4N" / "fold0.log").is_file()

    # Everything there: nothing is submitted again.
    again = subprocess.run(
        ["snakemake", "--profile", "slurm", "-n", "runs"],
        cwd=project, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "Nothing to be done" in again.stdout + again.stderr, again.stdout + again.stderr


@pytest.mark.xdist_group("slurm_cluster")  # the test cluster runs one test's jobs at a time
def test_failing_run_in_a_group_loses_no_record(tmp_path, slurm):
    """A group job whose first run crashes (a corrupt dataset): the other run still trains,
    the retried group keeps its record instead of training it again, and no record is lost."""
    project = make_project(tmp_path / "proj", _tiny(["BasicMotions", "JapaneseVowels"], ["MS4N"]))
    env = _slurm_env(tmp_path, project, slurm["partition"])
    local = subprocess.run(
        ["snakemake", "--cores", "2", "prepared"],
        cwd=project, env=tool_env(project), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert local.returncode == 0, local.stdout + local.stderr
    # BasicMotions sorts first in the group: its X.npy cut short makes its run crash.
    x_file = project / "data" / "prepared" / "uea" / "BasicMotions" / "X.npy"
    assert np.load(x_file, mmap_mode="r").shape[0] > 0
    with x_file.open("r+b") as handle:
        handle.truncate(200)

    # The crashing run goes first in the group job (priority in this copy of the workflow
    # only: the rule's own puts the larger JapaneseVowels first), so the other one runs
    # after a failure in the same SLURM job.
    rules = project / "workflow" / "rules" / "train.smk"
    text = rules.read_text()
    assert "    priority: run_priority\n" in text
    rules.write_text(
        text.replace(
            "    priority: run_priority\n",
            "    priority: lambda wildcards: int(wildcards.dataset == 'BasicMotions')\n",
        )
    )

    rc, output = _snakemake_slurm(
        project, env, tmp_path / "snakemake.log", "--retries", "1", "runs"
    )
    assert rc != 0
    groups = [(job, call) for job, call in _submitted(output) if "rule_train_small_train" in call]
    assert len(groups) == 2, output[-6000:]  # the group job and its retry
    (first_job, first), (second_job, second) = groups
    # the retry asks for attempt x runtime and memory (2 runs x 30 min, 1000 MB)
    assert " -t 60 --mem 1000 " in first and " -t 120 --mem 2000 " in second, groups
    group_log = (
        project / ".snakemake" / "slurm_logs" / "group_train_small_train" / f"{first_job}.log"
    )
    order = re.findall(
        r"wildcards: benchmark=uea, dataset=(\w+), model=MS4N", group_log.read_text()
    )
    assert order[0] == "BasicMotions" and "JapaneseVowels" in order, order

    runs = project / "results" / "runs" / "uea"
    assert not (runs / "BasicMotions" / "MS4N" / "fold0.json").exists()
    bad_log = project / "logs" / "train" / "uea" / "BasicMotions" / "MS4N" / "fold0.log"
    assert "error" in bad_log.read_text() and "X.npy" in bad_log.read_text(), bad_log.read_text()
    path = runs / "JapaneseVowels" / "MS4N" / "fold0.json"
    record = with_provenance(path, json.loads(path.read_text()))
    assert record["slurm_job_id"] == first_job  # made by the first attempt, kept by the retry
    good_log = project / "logs" / "train" / "uea" / "JapaneseVowels" / "MS4N" / "fold0.log"
    assert "is current: kept, not trained again" in good_log.read_text()


# --- resources from params.yaml (dry runs: no SLURM needed) -----------------------------


def _dry_run(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["snakemake", "-n", "--cores", "1", *args],
        cwd=project, env=tool_env(project), capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _train_jobs(output: str) -> dict[str, dict]:
    """(dataset/model) -> the resources Snakemake prints for that train job, and its group."""
    jobs = {}
    for block in re.split(r"\n(?=\s*rule train:)", output)[1:]:
        wildcards = dict(re.findall(r"(\w+)=([\w-]+)", re.search(r"wildcards: (.*)", block)[1]))
        resources = dict(re.findall(r"(\w+)=([\w.]+)", re.search(r"resources: (.*)", block)[1]))
        jobs[f"{wildcards['dataset']}/{wildcards['model']}"] = resources
    return jobs


def test_rule_train_asks_for_the_resolved_resources(tmp_path):
    """What rule train passes to Snakemake is ssmbench.resources' resolution (tested in
    tests/test_resources.py): per size class and model, and groups for grouped classes."""
    from ssmbench.config import load_params
    from ssmbench.resources import TrainResources

    def edit(params):
        _tiny(["BasicMotions", "JapaneseVowels"], ["MS4N", "MS4"])(params)
        train = params["resources"]["train"]
        # BasicMotions (N*C*L = 48,000) stays small; JapaneseVowels (222,720) becomes large
        train["sizes"]["small"]["max_values"] = 1.0e5
        train["sizes"]["medium"]["max_values"] = 2.0e5
        train["sizes"]["large"].update(mem_mb=64000, runtime=2880, gpu=1, cpus_per_task=8)
        train["models"]["MS4"] = {"sizes": {"large": {"gpu_model": "a100", "mem_mb": 3000}}}

    project = make_project(tmp_path / "proj", edit)
    dry = _dry_run(project, "runs")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    jobs = _train_jobs(dry.stdout)
    resolved = TrainResources(load_params(project / "params.yaml"))
    assert len(jobs) == 4
    for run, shown in jobs.items():
        dataset, model = run.split("/")
        for key in ("mem_mb", "runtime", "gpu", "cpus_per_task", "gpu_model"):
            assert shown.get(key, "") == str(resolved.value(key, "uea", dataset, model)), (
                run, key, shown,
            )  # fmt: skip
    assert jobs["JapaneseVowels/MS4"]["gpu_model"] == "a100"
    # a dry run shows groups: only the small class's runs are grouped
    assert dry.stdout.count("Group job train_small") == 2, dry.stdout


def test_unknown_model_in_resources_fails_before_any_job(tmp_path):
    def edit(params):
        _tiny(["BasicMotions"], ["MS4N"])(params)
        params["resources"]["train"]["models"]["NoSuchModel"] = {"gpu": 1}

    project = make_project(tmp_path / "proj", edit)
    dry = _dry_run(project, "runs")
    assert dry.returncode != 0
    assert "resources.train.models.NoSuchModel" in dry.stdout + dry.stderr


def test_slurm_profile_template_is_valid_for_the_plugin():
    """Every key of the template is a Snakemake/plugin option, and no account is set."""
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    assert profile["executor"] == "slurm" and profile["slurm-status-command"] == "squeue"
    assert "slurm_account" not in profile.get("default-resources", {})
    workflow_profile = yaml.safe_load((REPO / "profiles" / "default" / "config.yaml").read_text())
    # the workflow profile wins per key: it must not replace a cluster setting
    assert not set(workflow_profile) & set(profile), set(workflow_profile) & set(profile)
    helped = subprocess.run(
        ["snakemake", "--help"], capture_output=True, text=True, timeout=120, env=tool_env()
    ).stdout
    for key in profile:
        assert f"--{key}" in helped, f"profiles/slurm/config.yaml: {key} is no snakemake option"


def test_the_profile_installer_fills_partition_and_account_and_helps(tmp_path):
    script = REPO / "scripts" / "install-slurm-profile.sh"
    helped = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=30)
    assert helped.returncode == 0 and "--account NAME" in helped.stdout
    assert "set -euo" not in helped.stdout and "#" not in helped.stdout  # the header only
    dest = tmp_path / "slurm"
    done = subprocess.run([script, "--dest", dest, "--partition", "gpu", "--account", "lab42"],
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "account: lab42" in done.stdout
    installed = yaml.safe_load((dest / "config.yaml").read_text())["default-resources"]
    assert installed["slurm_partition"] == "gpu" and installed["slurm_account"] == "lab42"
    bad = subprocess.run([script, "--dest", tmp_path / "x", "--account", "a;b"],
                         capture_output=True, text=True, timeout=30)  # fmt: skip
    assert bad.returncode == 2 and "is not a SLURM account name" in bad.stderr
    assert not (tmp_path / "x").exists()
