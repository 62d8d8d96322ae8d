"""Scheduler speed on the full paper grid: `snakemake -n` with every job to run, and the
no-op rerun once every record exists (goal: <= 20 s each), which must open no dataset file
(of a prepared folder only its meta.json, whose digests of the source files a current
record holds: ssmbench.staleness.prepared_digests).

What it does, in a temporary copy of the project (the workflow, params.yaml and src/; the
copy's own package is what runs, through PYTHONPATH):

1. params.yaml gets a suite ``paper-grid``: every MONSTER (29) and UEA (30) dataset x every
   model of the MS4N study's ``monster-paper`` suite x folds 0..4 (MONSTER's five folds;
   for UEA five seeded runs, or more if needed to reach ``--min-jobs`` (5,000) jobs; a
   suite has one fold list, so the script stops if UEA would need more than five):
   59 x 19 x 5 = 5,605 runs with its 19 models.
2. No real data: each dataset gets a fake fetched folder (``data/raw/<b>/<D>/provenance.json``,
   which is what the workflow's pre-flight check looks for) and a fake prepared folder
   (``X.npy``, ``y.npy``, ``meta.json``, test indices), dated a day back.
3. ``snakemake -n`` (the default target: every training job and the report), timed twice:
   the first parse also writes every run's settings marker (paths.settings), as the first
   `snakemake` in a fresh clone does; the second finds them. Then ``snakemake -n --quiet``
   (the same DAG, printing only the job counts).
4. Every run then gets a record as ``ssmbench train`` writes it (made with the current
   settings and code digest, so it is current; ~2.5 KB like a real one) and its curve,
   and the report's outputs are made newer than the records.
5. The no-op ``snakemake -n`` is timed twice (it must say "Nothing to be done"), then run
   again under ``strace -f -e trace=open,openat,openat2`` (or, without strace, under a
   Python audit hook in the snakemake process): every file it opens under ``data/`` is
   listed, and there must be none but the prepared folders' ``meta.json``. (The trace
   must also see the records being opened, which shows it works.)
6. ``ssmbench status`` over the same grid is timed too.

Each line gives the wall time and the CPU time of the process tree; on a machine busy with
other work the wall time is the larger. The goal (<= 20 s) is checked on the second "all
to run" and the second no-op run; the exit status is 1 if it is missed or a dataset file
was opened.

Usage:
    python benchmarks/bench_scheduler.py [--min-jobs 5000] [--keep DIR] [--no-trace]
        [--profile FILE]   # cProfile the no-op parse into FILE (snakemake in-process)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
PROJECT_FILES = (
    ".gitignore",
    "Snakefile",
    "params.yaml",
    "params",
    "dvc.yaml",
    "workflow",
    "profiles",
    "src",
)
GOAL_SECONDS = 20.0
MONSTER_FOLDS = 5
SUITE = "paper-grid"
DAY = 86400.0


def copy_project(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in PROJECT_FILES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(
                src,
                dest / name,
                symlinks=True,
                ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
            )
        elif src.exists():
            shutil.copy2(src, dest / name)
    return dest


def paper_grid_suite(params: dict, min_jobs: int) -> dict:
    """The suite: all MONSTER + UEA datasets x the MS4N study's models (its monster-paper
    suite's: the TIDES study's models are not run on these datasets) x folds."""
    monster = list(params["benchmarks"]["monster"]["datasets"])
    uea = list(params["benchmarks"]["uea"]["datasets"])
    models = list(params["suites"]["monster-paper"]["models"])
    monster_jobs = len(monster) * len(models) * MONSTER_FOLDS
    uea_seeds = max(1, math.ceil((min_jobs - monster_jobs) / (len(uea) * len(models))))
    if uea_seeds > MONSTER_FOLDS:
        sys.exit(
            f"bench_scheduler: {min_jobs} jobs need {uea_seeds} UEA seeds with "
            f"{len(models)} models, but a suite has one fold list and MONSTER has "
            f"{MONSTER_FOLDS} folds; lower --min-jobs"
        )
    return {
        "description": "scheduler benchmark: the full paper grid (benchmarks/bench_scheduler.py)",
        "benchmarks": {"monster": monster, "uea": uea},
        "models": models,
        "folds": list(range(MONSTER_FOLDS)),
        "overrides": {},
    }


def fake_datasets(project: Path, params: dict, suite: dict) -> list[Path]:
    """Fetched and prepared folders without real data, dated a day back. Returns every
    dataset file written (what the no-op rerun must not open)."""
    from ssmbench.data.catalog import catalog

    # each fake series has its catalog length: the workflow checks every model's windows
    # against a dataset's L before it runs (RFormer's n_windows, Log-NCDE's steps)
    lengths = {(e.benchmark, e.name): e.L or 1000 for e in catalog()}  # None: not in the catalog
    paths = params["paths"]
    files = []
    old = time.time() - DAY
    for bench, names in suite["benchmarks"].items():
        for name in names:
            raw = project / paths["raw"] / bench / name
            raw.mkdir(parents=True)
            (raw / "provenance.json").write_text(
                json.dumps({"name": name, "source": "bench_scheduler (fake)"}) + "\n"
            )
            prepared = project / paths["prepared"] / bench / name
            prepared.mkdir(parents=True)
            np.save(prepared / "X.npy", np.zeros((10, 2, lengths[bench, name]), np.float32))
            np.save(prepared / "y.npy", np.arange(10, dtype=np.int64) % 2)
            n_folds = MONSTER_FOLDS if bench == "monster" else 1
            for k in range(n_folds):
                (prepared / f"test_indices_fold_{k}.txt").write_text("0\n1\n")
            scheme = "given_folds" if bench == "monster" else "official_split"
            meta = {"name": name, "benchmark": bench, "N": 10, "C": 2, "L": lengths[bench, name],
                    "task": "classification", "n_classes": 2, "n_folds": n_folds,
                    "fold_scheme": scheme}  # fmt: skip
            (prepared / "meta.json").write_text(json.dumps(meta) + "\n")
            for path in [raw / "provenance.json", *prepared.iterdir()]:
                files.append(path)
                os.utime(path, (old, old))
            for folder in (raw, prepared):
                os.utime(folder, (old, old))
    return files


def record_template() -> dict:
    """A record's keys and sizes as `ssmbench train` writes them (docs/contracts.md)."""
    from ssmbench.train.provenance import provenance

    return {
        "task": "classification", "error_metric": "error", "test_accuracy": 0.9,
        "test_error": 0.1, "test_loss": 0.3, "test_sets": {}, "best_epoch": 12,
        "best_val_loss": 0.25, "best_val_accuracy": 0.92, "epochs_run": 62, "max_epochs": 200,
        "stopped_early": True, "batch_size": 256, "n_train": 9000, "n_val": 1000,
        "n_test": 2500, "train_seconds": 812.5, "test_seconds": 3.1, "params": 29920,
        "mmac": 12.3, "mmac_full": 40.1, "device": "cuda", "device_name": "NVIDIA H100",
        "threads": 4, "dataset_sha256": {"X.npy": "0" * 64, "y.npy": "1" * 64},
        **provenance(),
    }  # fmt: skip


def fake_records(project: Path, params: dict) -> int:
    """One current record (and curve) per run of the suite, dated now."""
    from ssmbench.config import job_spec, suite_grid

    template = record_template()
    runs = project / params["paths"]["runs"]
    grid = suite_grid(params)
    for job in grid:
        spec = job_spec(params, job)
        path = job.record_path(runs)
        path.parent.mkdir(parents=True, exist_ok=True)
        curve = path.with_name(path.stem + ".curve.csv")
        record = {
            **template,
            "benchmark": job.benchmark, "dataset": job.dataset, "model": job.model,
            "family": spec["model_params"]["family"], "fold": job.fold,
            "seed": spec["settings"].get("seed_base", 0) + job.fold,
            "model_params": spec["model_params"], "protocol": spec["settings"],
            "code_digest": spec["code"], "curve_file": curve.name,
        }  # fmt: skip
        curve.write_text("epoch,train_loss,train_accuracy,val_loss,val_accuracy,seconds\n")
        path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return len(grid)


def fake_report_outputs(project: Path, dry_run_output: str) -> int:
    """The report rule's outputs, newer than every record (as after a real report)."""
    block = dry_run_output[dry_run_output.rindex("rule report:") :]
    outputs = re.search(r"output: (.*)", block).group(1).split(", ")
    later = time.time() + 2
    for name in outputs:
        path = project / name.strip()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("fake\n")
        os.utime(path, (later, later))
    return len(outputs)


def env_for(project: Path) -> dict:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(project / "src")
    env.setdefault("PYTHONHASHSEED", "0")
    return env


def timed(cmd: list[str], project: Path) -> tuple[float, float, str]:
    """Run a command in the project: (wall seconds, CPU seconds of the process tree, output)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=project, env=env_for(project), capture_output=True, text=True)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        sys.exit(f"bench_scheduler: {' '.join(cmd)} exited {proc.returncode}:\n{output[-5000:]}")
    return seconds, cpu, output


def planned_jobs(output: str) -> dict[str, int]:
    stats = output[output.rindex("Job stats:") :]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.M)}


AUDIT_RUNNER = """
import os, sys
log = open(sys.argv.pop(1), "w")
root = os.getcwd() + os.sep
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.path.abspath(os.fsdecode(args[0]))
        if path.startswith(root):
            log.write(path + "\\n")
            log.flush()
sys.addaudithook(hook)
from snakemake.cli import main
sys.argv = ["snakemake", *sys.argv[1:]]
main()
"""


def traced_opens(project: Path, how: str) -> dict[str, int]:
    """Run the no-op `snakemake -n` under strace (every process and thread) or a Python
    audit hook, and count what it opens in the project: files under data/ (must be none
    but prepared folders' meta.json, counted apart), directories under data/ (listings),
    and run records (a check that the trace works)."""
    root = project.resolve()
    data = root / "data"
    runs = root / "results" / "runs"
    log = root / "opens.log"
    if how == "strace":
        cmd = ["strace", "-f", "-qq", "-e", "trace=open,openat,openat2", "-o", str(log),
               "snakemake", "-n"]  # fmt: skip
    else:
        cmd = [sys.executable, "-c", AUDIT_RUNNER, str(log), "-n"]
    _, _, output = timed(cmd, project)
    if "Nothing to be done" not in output:
        sys.exit(f"bench_scheduler: the traced no-op run planned jobs:\n{output[-3000:]}")
    data_files: set[str] = set()
    metas: set[str] = set()
    counts = {"data_dirs": 0, "records": 0}
    for line in log.read_text(errors="replace").splitlines():
        if how == "strace":
            m = re.search(r'open(?:at2?)?\((?:AT_FDCWD|\d+), "([^"]*)", ([^,)]*)', line) or (
                re.search(r'open\("([^"]*)", ([^,)]*)', line)
            )
            if not m or "ENOENT" in line:
                continue
            path, flags = Path(os.path.normpath(root / m.group(1))), m.group(2)
        else:
            path, flags = Path(line), ""
        if path.is_relative_to(data):
            if "O_DIRECTORY" in flags or path.is_dir():
                counts["data_dirs"] += 1
            elif path.name == "meta.json" and path.is_relative_to(data / "prepared"):
                metas.add(str(path))
            else:
                data_files.add(str(path))
        elif path.is_relative_to(runs) and path.suffix == ".json":
            counts["records"] += 1
    log.unlink()
    return {
        "data_files": len(data_files),
        "metas": len(metas),
        **counts,
        "examples": sorted(data_files)[:10],
    }


def profile_noop(project: Path, out: Path) -> None:
    """cProfile of the no-op `snakemake -n`, in-process (the Snakefile parse included)."""
    cmd = [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "snakemake", "-n"]
    timed(cmd, project)
    import pstats

    stats = pstats.Stats(str(out))
    stats.sort_stats("cumulative").print_stats(40)


def report(label: str, wall: float, cpu: float, note: str = "") -> None:
    flag = "" if wall <= GOAL_SECONDS else "  (over the goal)"
    print(f"{label:<46}{wall:7.1f} s wall {cpu:7.1f} s CPU  {note}{flag}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--min-jobs", type=int, default=5000)
    parser.add_argument("--keep", type=Path, help="build the project here and keep it")
    parser.add_argument("--no-trace", action="store_true", help="skip the open-files check")
    parser.add_argument("--profile", type=Path, help="cProfile the no-op run into this file")
    args = parser.parse_args(argv)

    workdir = args.keep or Path(tempfile.mkdtemp(prefix="bench_scheduler."))
    if args.keep and workdir.exists() and any(workdir.iterdir()):
        sys.exit(f"bench_scheduler: {workdir} is not empty")
    try:
        project = copy_project(workdir)
        sys.path.insert(0, str(project / "src"))
        from ssmbench.params_file import read_params

        params = read_params(project / "params.yaml")
        suite = paper_grid_suite(params, args.min_jobs)
        params["suites"][SUITE] = suite
        params["suite"] = SUITE
        (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        n_data_files = len(fake_datasets(project, params, suite))
        n_models = len(suite["models"])
        n_runs = sum(len(d) for d in suite["benchmarks"].values()) * n_models * len(suite["folds"])
        print(
            f"grid: MONSTER {len(suite['benchmarks']['monster'])} + UEA "
            f"{len(suite['benchmarks']['uea'])} datasets x {n_models} models x "
            f"{len(suite['folds'])} folds/seeds = {n_runs:,} runs "
            f"({n_data_files} fake dataset files; project {project})\n"
            f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start "
            f"(wall > CPU time means the machine was busy with other work)",
            flush=True,
        )

        walls = {}
        wall, cpu, output = timed(["snakemake", "-n"], project)
        jobs = planned_jobs(output)
        if jobs.get("train") != n_runs:
            sys.exit(f"bench_scheduler: expected {n_runs} train jobs, got {jobs}")
        walls["first"] = wall
        report(
            "snakemake -n, all to run, first parse", wall, cpu,
            f"({jobs['train']} train jobs; writes {n_runs} settings markers)",
        )  # fmt: skip
        wall, cpu, _ = timed(["snakemake", "-n"], project)
        walls["all"] = wall
        report("snakemake -n, all to run", wall, cpu)
        wall, cpu, _ = timed(["snakemake", "-n", "--quiet"], project)
        report("snakemake -n --quiet, all to run", wall, cpu, "(job stats only)")

        started = time.perf_counter()
        fake_records(project, params)
        fake_report_outputs(project, output)
        print(f"(wrote {n_runs:,} records in {time.perf_counter() - started:.1f} s)", flush=True)

        for attempt in (1, 2):
            wall, cpu, output = timed(["snakemake", "-n"], project)
            if "Nothing to be done" not in output:
                sys.exit(f"bench_scheduler: the no-op rerun planned jobs:\n{output[-3000:]}")
            walls[f"noop{attempt}"] = wall
            report(f"snakemake -n, no-op rerun ({attempt})", wall, cpu, "(Nothing to be done)")

        wall, cpu, output = timed(
            [sys.executable, "-m", "ssmbench.cli", "status", "--format", "json"], project
        )
        counts = json.loads(output[output.index("{") :])["counts"]
        report("ssmbench status", wall, cpu, f"({counts['done']:,} done)")

        met = walls["all"] <= GOAL_SECONDS and walls["noop2"] <= GOAL_SECONDS
        print(
            f"goal <= {GOAL_SECONDS:.0f} s each (all to run, no-op): {'met' if met else 'MISSED'}"
        )

        failed = False
        if not args.no_trace:
            how = "strace" if shutil.which("strace") else "audit-hook"
            opens = traced_opens(project, how)
            print(
                f"no-op rerun under {how}: {opens['data_files']} dataset files opened under "
                f"data/ (of {n_data_files}) besides {opens['metas']} prepared meta.json, "
                f"{opens['data_dirs']} data/ directories listed; "
                f"{opens['records']} record opens seen (the trace works)"
            )
            for path in opens["examples"]:
                print(f"  opened: {path}")
            failed = opens["data_files"] > 0 or opens["records"] == 0
        if args.profile:
            profile_noop(project, args.profile)
        return 1 if failed or not met else 0
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
