"""One run at a time in a project folder (ssmbench.project_lock): a second taker is
refused with a message naming the first, the lock goes with its process (SIGKILL too, and
never to a child), Snakemake's jobs, dry runs and --unlock take none; and the real command
lines: a `snakemake` busy in a project refuses a second `snakemake`, `dvc repro` and
`ssmbench locked`, keeps its `.snakemake/locks`, and the refused command runs once the
first is done."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from conftest import make_project, tool_env

from ssmbench import project_lock
from ssmbench.project_lock import (
    Holder,
    ProjectBusy,
    acquire,
    hold_for_snakemake,
    holder,
    release,
    snakemake_takes_lock,
)

#: a process that takes the project lock of its working directory, says so, starts a
#: `sleep` child when asked (argv[1] == "child"; close_fds=False: the child gets every
#: inheritable descriptor, as from os.system or a shell), then waits for its stdin to close
HOLDER = """
import subprocess, sys
from ssmbench.project_lock import acquire
acquire()
if sys.argv[1] == "child":
    child = subprocess.Popen(["sleep", "60"], close_fds=False)
    print(child.pid, flush=True)
print("held", flush=True)
sys.stdin.read()
"""


def start_holder(
    root: Path, child: bool = False, session: bool = False
) -> tuple[subprocess.Popen, int | None]:
    """session: the holder in a process group of its own (as a shell starts a command)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, "child" if child else "alone"],
        cwd=root,
        env=tool_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=session,
    )
    child_pid = int(proc.stdout.readline()) if child else None
    assert proc.stdout.readline() == "held\n"
    return proc, child_pid


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)


def test_a_second_taker_is_refused_with_the_holders_description(tmp_path):
    first, _ = start_holder(tmp_path)
    try:
        with pytest.raises(ProjectBusy) as refused:
            acquire(tmp_path, refused="snakemake --cores 1 runs")
        message = str(refused.value)
        found = refused.value.holder
        assert isinstance(found, Holder) and found.pid == first.pid
        assert holder(tmp_path) == found  # the same answer, without taking the lock
        assert f"pid      {first.pid} on host " in message
        assert re.search(r"command  \S*python\S* -c .*from ssmbench.project_lock", message)
        assert datetime.fromisoformat(found.started).date() == datetime.now().date()
        assert f"started  {found.started} (" in message
        assert f"holds its lock {tmp_path / '.ssmbench' / 'project.lock'}" in message
        assert "Refused: snakemake --cores 1 runs" in message
        assert f"What to do: wait for pid {first.pid} to finish" in message
        # the holder shares this process's group: never told to kill that group
        assert f"stop it: kill {first.pid}." in message and "nothing\n  to clear by hand" in message
        assert "kill -TERM --" not in message
    finally:
        stop(first)


def test_a_holder_in_its_own_group_is_stopped_with_its_jobs(tmp_path):
    """SIGTERM to Snakemake alone lets its running jobs finish: the message names the
    holder's process group, which a signal stops with its jobs."""
    first, _ = start_holder(tmp_path, session=True)
    try:
        with pytest.raises(ProjectBusy) as refused:
            acquire(tmp_path)
    finally:
        stop(first)
    message = " ".join(str(refused.value).split())
    assert refused.value.holder.group == first.pid  # a session's leader leads its group
    assert f"stop it: kill -TERM -- -{first.pid} (its process group, led by: " in message
    assert f"SIGTERM to Snakemake alone (kill {first.pid}) starts no new job" in message


def test_a_lock_file_that_is_a_link_is_refused_and_never_written_through(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    project = tmp_path / "project"
    (project / ".ssmbench").mkdir(parents=True)
    (project / ".ssmbench" / "project.lock").symlink_to(outside)
    for call in (acquire, holder):
        with pytest.raises(project_lock.ProjectLockError, match="is a symbolic link"):
            call(project)
    done = run(["ssmbench", "locked", "--", "touch", "ran"], project, tool_env())
    assert done.returncode == 1 and not (project / "ran").exists()
    assert "project.lock is a symbolic link (to " in done.stderr and "remove it" in done.stderr
    assert outside.read_text() == "precious\n"


def test_a_file_where_the_lock_folder_goes_is_named(tmp_path):
    (tmp_path / ".ssmbench").write_text("")
    with pytest.raises(project_lock.ProjectLockError) as refused:
        acquire(tmp_path)
    assert str(refused.value).startswith(f"{tmp_path / '.ssmbench'} is a file, not a folder")


def test_a_command_under_its_ancestors_lock_runs(tmp_path):
    """`ssmbench locked -- ssmbench locked -- ...` (or a snakemake under `ssmbench
    locked`): the inner command runs under the outer one's lock; another project's
    process is still refused."""
    env = tool_env()
    inner = ["ssmbench", "locked", "--", "touch", "ran"]
    done = run(["ssmbench", "locked", "--", *inner], tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ran").exists()
    first, _ = start_holder(tmp_path)
    try:
        refused = run(inner, tmp_path, env)
    finally:
        stop(first)
    assert refused.returncode == 1 and "this project is busy" in refused.stderr


def test_the_lock_goes_with_its_process_and_never_to_a_child(tmp_path):
    """SIGKILL leaves no time for clean-up; the `sleep` the holder started lives on and
    still does not hold the lock."""
    first, child = start_holder(tmp_path, child=True)
    try:
        assert holder(tmp_path).pid == first.pid
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        os.kill(child, 0)  # the child is still running
        assert holder(tmp_path) is None
        acquire(tmp_path)
        assert holder(tmp_path).pid == os.getpid()
        acquire(tmp_path)  # a second call of the same process: a no-op
    finally:
        release(tmp_path)
        os.kill(child, signal.SIGKILL)
        stop(first)
    assert holder(tmp_path) is None  # released: nobody holds it


def test_a_holder_not_yet_described_is_named_unknown(tmp_path, monkeypatch):
    monkeypatch.setattr(project_lock, "_SETTLE_SECONDS", 0.1)
    lock = tmp_path / ".ssmbench" / "project.lock"
    first, _ = start_holder(tmp_path)
    try:
        lock.write_text("")  # as between a taker's flock and its description
        with pytest.raises(ProjectBusy) as refused:
            acquire(tmp_path)
        assert refused.value.holder == "unknown"
        assert "could not be read (`fuser -v FILE` or `lsof FILE`" in str(refused.value)
    finally:
        stop(first)


SNAKEMAKE = "/venv/bin/snakemake"


@pytest.mark.parametrize(
    "args, main_process, takes",
    [
        (["--cores", "all", "prepared"], True, True),  # dvc's data stage
        (["--profile", "slurm", "--config", "suite=uea10"], True, True),
        (["--touch"], True, True),
        (["--delete-all-output"], True, True),
        (["--cleanup-metadata", "a.json", "-n"], True, True),  # ignores -n
        (["--report-after-run", "--report", "r.html"], True, True),
        (["--dry-run"], True, False),
        (["-np", "--cores", "1"], True, False),  # -n in a group of short flags
        (["--cores", "1", "-n", "runs"], True, False),
        (["--unlock"], True, False),
        (["--nolock", "--cores", "1"], True, False),
        (["--summary"], True, False),
        (["--list-rules"], True, False),
        (["--dag"], True, False),
        (["--report", "report.html"], True, False),
        (["--delete-all-output", "-n"], True, False),
        # a job on a cluster node: the main process holds the lock
        (["--target-jobs", "train:fold=0", "--mode", "remote", "--nolock"], False, False),
        (["--cores", "1"], False, False),
    ],
)
def test_which_snakemake_commands_take_the_lock(args, main_process, takes):
    assert snakemake_takes_lock([SNAKEMAKE, *args], main_process) is takes


def test_snakemake_is_refused_and_a_dry_run_is_not(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    first, _ = start_holder(tmp_path)
    try:
        with pytest.raises(SystemExit) as refused:
            hold_for_snakemake(True, [SNAKEMAKE, "--cores", "1"])
        assert str(refused.value.code).startswith("snakemake: error: this project is busy")
        assert f"pid      {first.pid}" in str(refused.value.code)

        hold_for_snakemake(True, [SNAKEMAKE, "-n", "--cores", "1"])  # returns
        note = capsys.readouterr().err
        assert note.startswith("note: another process holds this project's lock")
        assert f"pid      {first.pid}" in note and "not refused" in note
        hold_for_snakemake(False, [SNAKEMAKE, "--mode", "remote", "--nolock"])  # a job
        assert capsys.readouterr().err == ""
    finally:
        stop(first)
    hold_for_snakemake(True, [SNAKEMAKE, "--cores", "1"])
    try:
        assert holder(tmp_path).pid == os.getpid()
    finally:
        release(tmp_path)


def run(cmd, cwd, env, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_ssmbench_locked_runs_its_command_or_is_refused(tmp_path):
    env = tool_env()
    done = run(["ssmbench", "locked", "--", "sh", "-c", "exit 3"], tmp_path, env)
    assert done.returncode == 3  # the command's own status
    first, _ = start_holder(tmp_path)
    try:
        refused = run(["ssmbench", "locked", "--", "touch", "ran"], tmp_path, env)
    finally:
        stop(first)
    assert refused.returncode == 1 and not (tmp_path / "ran").exists()
    assert refused.stderr.startswith("ssmbench locked: error: this project is busy")
    assert f"pid      {first.pid}" in refused.stderr and "Traceback" not in refused.stderr


# --- the real command lines


#: appended to the project copy's Snakefile: a job that stays busy until the test lets it go
HOLD_RULE = """

rule hold:
    output:
        "held.txt",
    shell:
        "touch started; while [ ! -e release ]; do sleep 0.1; done; touch {output}"
"""


def one_dataset(params):
    params["suite"] = "tiny"
    params["suites"]["tiny"]["benchmarks"] = {"uea": ["BasicMotions"]}
    params["suites"]["tiny"]["models"] = ["MS4N"]


def snakemake_locks(project: Path) -> dict[str, str]:
    locks = project / ".snakemake" / "locks"
    return {p.name: p.read_text() for p in sorted(locks.iterdir())} if locks.is_dir() else {}


def wait_for(condition, proc: subprocess.Popen, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(f"the first command exited {proc.returncode} before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} after {timeout} s")
        time.sleep(0.1)


@pytest.mark.integration
def test_a_busy_snakemake_refuses_a_second_snakemake_and_dvc_repro(tmp_path):
    """The tester's case: DVC's data stage (`snakemake --cores all prepared`) while a
    snakemake runs in the same folder ran and then deleted that run's .snakemake/locks."""
    project = make_project(tmp_path / "proj", one_dataset)
    with open(project / "Snakefile", "a") as snakefile:
        snakefile.write(HOLD_RULE)
    env = tool_env(project)
    for cmd in (["dvc", "init", "-q", "--no-scm"], ["dvc", "config", "core.analytics", "false"]):
        assert run(cmd, project, env).returncode == 0

    log = project / "first.log"
    first = subprocess.Popen(
        ["snakemake", "--cores", "1", "held.txt"],
        cwd=project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
    )
    try:
        wait_for(lambda: (project / "started").exists(), first, "job started")
        locks = snakemake_locks(project)
        assert locks, "the first snakemake holds no .snakemake/locks"

        second = run(["snakemake", "--cores", "1", "prepared"], project, env)
        assert second.returncode == 1, second.stderr[-3000:]
        message = second.stderr
        assert "\nsnakemake: error: this project is busy" in message, message[-3000:]
        assert f"pid      {first.pid} on host " in message
        assert re.search(r"command  .*snakemake --cores 1 held\.txt\n", message)
        assert re.search(r"started  \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S* \(\d+ s ago\)", message)
        assert "Refused: " in message and "prepared" in message and "Traceback" not in message

        repro = run(["dvc", "repro", "data"], project, env)
        assert repro.returncode != 0
        output = repro.stdout + repro.stderr
        assert "snakemake: error: this project is busy" in output
        assert f"pid      {first.pid} on host " in output
        assert not (project / "data" / "prepared").exists()

        report_stage = run(["ssmbench", "locked", "--", "true"], project, env)
        assert report_stage.returncode == 1
        assert f"pid      {first.pid}" in report_stage.stderr

        dry = run(["snakemake", "-n", "--cores", "1", "prepared"], project, env)
        assert dry.returncode == 0 and "prepare" in dry.stdout + dry.stderr
        assert "note: another process holds this project's lock" in dry.stderr

        assert snakemake_locks(project) == locks  # the first run's locks are intact
        assert first.poll() is None
        (project / "release").touch()
        assert first.wait(timeout=120) == 0, log.read_text()[-3000:]
    finally:
        (project / "release").touch()
        stop(first)
    assert (project / "held.txt").is_file()

    after = run(["dvc", "repro", "data"], project, env)
    assert after.returncode == 0, (after.stdout + after.stderr)[-3000:]
    assert (project / "data" / "prepared" / "uea" / "BasicMotions").is_dir()


@pytest.mark.integration
def test_a_job_is_not_refused_by_the_lock_its_main_process_holds(tmp_path):
    """A job's command line as Snakemake's cluster executors write it (--mode remote, the
    job's target, --nolock; snakemake_interface_executor_plugins' format_job_exec): it
    parses the Snakefile too, and runs its job while the main process holds the lock."""
    project = make_project(tmp_path / "proj", one_dataset)
    with open(project / "Snakefile", "a") as snakefile:
        snakefile.write(HOLD_RULE)
    (project / "release").touch()
    env = tool_env(project)
    main, _ = start_holder(project)
    try:
        job = run(
            [sys.executable, "-m", "snakemake", "--snakefile", "Snakefile",
             "--target-jobs", "hold:", "--allowed-rules", "hold", "--cores", "1", "--force",
             "--target-files-omit-workdir-adjustment", "--max-inventory-time", "0",
             "--nocolor", "--no-hooks", "--nolock", "--ignore-incomplete", "--mode", "remote"],
            project,
            env,
        )  # fmt: skip
        assert holder(project).pid == main.pid
    finally:
        stop(main)
    assert job.returncode == 0, job.stderr[-3000:]
    assert "busy" not in job.stderr and (project / "held.txt").is_file()
