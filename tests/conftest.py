"""Shared fixtures: the repository root, the real UEA files beside it, and temporary
copies of the project for the tests that run the real `snakemake` and `dvc`; and how the
tests share a machine under pytest-xdist (`make test`: `-n auto --dist loadgroup`)."""

from __future__ import annotations

import copy
import os
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from ssmbench.params_file import read_params, read_params_and_files

REPO = Path(__file__).resolve().parents[1]
#: the real UEA archive of the tests that need one: the folder the product's own setting
#: names in the environment (SSMBENCH_UEA_ARCHIVE, ssmbench.params_file.INPUT_PATHS), else
#: the folder data/uea of a `shared` folder beside the repository
SHARED_UEA = Path(os.environ.get("SSMBENCH_UEA_ARCHIVE") or REPO.parent / "shared" / "data" / "uea")
# pytest-xdist workers share the cores: each worker's torch, and the tools its tests start
# (they inherit the environment), get an equal share of intra-op threads instead of every
# worker spinning threads on every core. Set before any test module imports torch.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _share = (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, _share)))

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


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Markers derived from what a test is:

    * an ``integration`` test (the real snakemake / dvc) is also ``slow``, so that
      ``pytest -m "not slow"`` leaves out every test of more than ~10 s;
    * a test that uses a module-scoped fixture of its own module (a training run, compiled
      simulations, prepared datasets) joins that module's xdist group, so that under
      ``--dist loadgroup`` the fixture is built once, on one worker, not once per worker.
      This runs before pytest-xdist reads the groups; an explicit ``xdist_group`` is kept.

    On an xdist worker the slow tests, and the groups holding one, are then handed out
    first (the workers take them in collection order), so the short ones fill the end of
    the run instead of one worker finishing a long test alone.
    """
    for item in items:
        if item.get_closest_marker("integration"):
            item.add_marker(pytest.mark.slow)
        info, module = getattr(item, "_fixtureinfo", None), getattr(item, "module", None)
        if info is None or module is None or item.get_closest_marker("xdist_group"):
            continue
        module = module.__name__
        if any(
            d.scope == "module" and getattr(d.func, "__module__", None) == module
            for defs in info.name2fixturedefs.values()
            for d in defs
        ):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        slow_groups = {_group(i) for i in items if i.get_closest_marker("slow")}
        items.sort(key=lambda i: _group(i) not in slow_groups)  # stable: groups stay whole


def _group(item) -> str:
    """The unit pytest-xdist's loadgroup hands to one worker: the group, else the test."""
    mark = item.get_closest_marker("xdist_group")
    return f"group:{mark.args[0]}" if mark else item.nodeid


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_uea() -> Path:
    """The real UEA archive folder (`SHARED_UEA`, with its SHA256SUMS). Without one the
    tests that need it skip, and fail in CI (env CI set), which must provide it."""
    if not (SHARED_UEA / "SHA256SUMS").is_file():
        reason = f"no real UEA archive folder at {SHARED_UEA} (with its SHA256SUMS)"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but there is {reason}: CI provides one.")
        pytest.skip(f"{reason}; set SSMBENCH_UEA_ARCHIVE to a copy of the archive")
    return SHARED_UEA


def tool_env(project: Path | None = None) -> dict:
    """Environment for subprocesses: this venv's tools first; with `project`, its own copy
    of the package shadows the installed one (so edits in the copy are what runs)."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    if project is not None:
        env["PYTHONPATH"] = str(project / "src")
    env.setdefault("PYTHONHASHSEED", "0")
    return env


def make_project(dest: Path, edit=None) -> Path:
    """Copy the workflow into `dest` with params.yaml passed through `edit(params)`."""
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
        else:
            shutil.copy2(src, dest / name)
    params = read_params(REPO / "params.yaml")
    if edit is not None:
        edit(params)
    write_params(dest, params)
    return dest


def write_params(root: Path, params: dict) -> None:
    """Write `params` (read_params' one mapping) into the project `root` as the repository
    lays it out: params.yaml, and each study file with the entries the repository keeps
    there (their values as in `params`; an entry the repository does not have stays in
    params.yaml's own section). DVC then tracks an edit where it tracks the original."""
    studies = yaml.safe_load((REPO / "params.yaml").read_text())["studies"]
    _, files = read_params_and_files(REPO / "params.yaml")
    shared = copy.deepcopy(params)
    shared["studies"] = list(studies)
    per_file: dict[str, dict] = {name: {} for name in studies}
    for dotted, name in files.items():
        *section, entry = dotted.split(".")
        source = shared
        for part in section:
            source = source.get(part) or {}
        if entry not in source:
            continue  # the edit removed it
        target = per_file[name]
        for part in section:
            target = target.setdefault(part, {})
        target[entry] = source.pop(entry)
    for section in ("models", "suites"):
        if not shared.get(section):
            shared.pop(section, None)
    if not (shared.get("tuning") or {}).get("searches", True):
        shared["tuning"].pop("searches")
    (root / "params.yaml").write_text(yaml.safe_dump(shared, sort_keys=False))
    (root / "params").mkdir(exist_ok=True)
    for name, body in per_file.items():
        (root / name).write_text(yaml.safe_dump(body, sort_keys=False))


def signal_at_training_batch(monkeypatch, n: int, signum=None) -> None:
    """Send `signum` (default SIGUSR1) to this process during the n-th training batch
    (1-based, counted over epochs), before its loss: the batch is abandoned, and the
    checkpoint holds the state after the one before it. Evaluation batches (no
    gradients) are not counted."""
    import signal

    import torch

    from ssmbench.train.objective import Objective

    signum = signal.SIGUSR1 if signum is None else signum
    real = Objective.batch_sums
    count = {"n": 0}

    def batch_sums(self, out, yb, mb):
        if torch.is_grad_enabled():
            count["n"] += 1
            if count["n"] == n:
                os.kill(os.getpid(), signum)
        return real(self, out, yb, mb)

    monkeypatch.setattr(Objective, "batch_sums", batch_sums)


@pytest.fixture(scope="session")
def motor_imagery_archive(tmp_path_factory) -> Path:
    """An archive_dir holding a real slice of the UEA archive's MotorImagery as ``.ts.xz``
    (the first 20 TRAIN and 10 TEST rows, 64 channels, 500 steps) and its ``SHA256SUMS``,
    written from the compressed archive folder of tests/uea_slice.py; skips without it."""
    from uea_slice import motor_imagery_slice

    return motor_imagery_slice(tmp_path_factory.mktemp("uea-xz"), compression="xz")
