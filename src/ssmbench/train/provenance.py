"""Run records: provenance, in a file of its own beside the record.

`provenance()` says where and with what a run was made. Every probe is best effort: a
value it cannot find is ``None`` (no git, no SLURM, no GPU), and no probe can raise, so a
finished run never loses its record to its provenance.

A record holds what the run computed, so that a rerun of the same code, data and
settings on the same machine writes the same bytes (DVC hashes the records into
dvc.lock). What differs from one such run to the next is in ``fold{k}.provenance.json``
beside it (`provenance_path_of`, `provenance_text`): the keys below, the run's
``RUN_FACT_KEYS`` (wall-clock seconds, resumes) and each epoch's seconds
(``epoch_seconds``). It holds the sha256 of the record it belongs to
(``record_sha256``); .dvcignore keeps it out of DVC's hashes. `record_provenance` reads it
back for a record, and reads the same keys from a record that holds them itself (written
before the file existed).

Keys (docs/contracts.md):

* ``versions``: Python, the pinned libraries (``VERSIONED_PACKAGES``; ``None`` if not
  installed) and torch's CUDA / cuDNN builds;
* ``git_commit``, ``git_dirty`` of the working directory, which is the project root under
  Snakemake: ``git_dirty`` is true when a tracked file differs from the commit, except the
  files the pipeline writes itself (``pipeline_written_paths``: ``dvc.lock`` and every out,
  metric and plot of ``dvc.yaml``), which ``dvc repro`` updates on an unmodified clone;
  untracked files do not count;
* ``hostname``, ``cpu`` (the CPU model, e.g. "AMD EPYC 7763 64-Core Processor"),
  ``cpu_count`` (CPUs this process may use), ``platform``;
* ``gpu`` (``torch.cuda.get_device_name()`` of the current device when CUDA is available,
  else ``None``), ``gpu_count``, ``cuda_visible_devices``;
* ``slurm_job_id`` (``SLURM_JOB_ID``), ``slurm_restart_count`` (``SLURM_RESTART_COUNT``:
  how often SLURM requeued this job, e.g. after a preemption; 0 under SLURM when unset),
  ``slurm`` (partition, node list, cluster, array ids, GPUs and CPUs of the allocation;
  ``None`` outside SLURM);
* ``attempt``: Snakemake's attempt (1, then 2, 3... for each retry), read from
  ``SSMBENCH_ATTEMPT``, which the training rule sets from ``{resources.attempt}``
  (Snakemake passes a job's attempt to resource functions only); ``None`` when the run was
  not started by the workflow;
* ``argv``, ``created`` (UTC, ISO 8601).
"""

from __future__ import annotations

import json
import os
import platform
import socket
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import yaml

from ssmbench.provenance_file import (  # noqa: F401 (the names this module's readers use)
    EPOCH_SECONDS_KEY,
    PROVENANCE_KEYS,
    PROVENANCE_SUFFIX,
    RECORD_SHA256_KEY,
    RUN_FACT_KEYS,
    is_provenance_file,
    provenance_path_of,
    record_provenance,
    with_provenance,
)

VERSIONED_PACKAGES = (
    "torch",
    "numpy",
    "pandas",
    "scipy",
    "scikit-learn",
    "aeon",
    "numba",
    "ptflops",
    "mamba-ssm",
    "snakemake",
    "snakemake-executor-plugin-slurm",
    "dvc",
    "ssmbench",
)

#: the environment variable that carries Snakemake's attempt number into the job
ATTEMPT_ENV = "SSMBENCH_ATTEMPT"

#: SLURM's description of the allocation, as recorded under ``slurm``
SLURM_VARIABLES = {
    "job_id": "SLURM_JOB_ID",
    "job_name": "SLURM_JOB_NAME",
    "array_job_id": "SLURM_ARRAY_JOB_ID",
    "array_task_id": "SLURM_ARRAY_TASK_ID",
    "restart_count": "SLURM_RESTART_COUNT",
    "partition": "SLURM_JOB_PARTITION",
    "nodelist": "SLURM_JOB_NODELIST",
    "cluster": "SLURM_CLUSTER_NAME",
    "cpus_per_task": "SLURM_CPUS_PER_TASK",
    "mem_per_node_mb": "SLURM_MEM_PER_NODE",
    "gpus": "SLURM_JOB_GPUS",
    "step_id": "SLURM_STEP_ID",
}


#: DVC's pipeline file and the lock file that ``dvc repro`` rewrites beside it.
DVC_PIPELINE = "dvc.yaml"
DVC_LOCK = "dvc.lock"


def _git(*args: str, strip: bool = True) -> str | None:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if strip else out.stdout


def _declared_paths(entries) -> list[str]:
    """The paths of a dvc.yaml ``outs``/``metrics``/``plots`` list: each entry is a path or
    a one-key mapping {path: options}."""
    paths = []
    for entry in entries or ():
        if isinstance(entry, str):
            paths.append(entry)
        elif isinstance(entry, dict):
            paths.extend(key for key in entry if isinstance(key, str))
    return paths


def pipeline_written_paths(project: str | os.PathLike = ".") -> list[Path]:
    """What ``dvc repro`` writes into the project: ``dvc.lock`` and every out, metric and
    plot that ``{project}/dvc.yaml`` declares (absolute paths; a folder stands for all it
    holds). Only ``dvc.lock`` when there is no readable dvc.yaml."""
    project = Path(project).resolve()
    written = [project / DVC_LOCK]
    try:
        pipeline = yaml.safe_load((project / DVC_PIPELINE).read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return written
    if not isinstance(pipeline, dict):
        return written
    stages = pipeline.get("stages")
    for stage in stages.values() if isinstance(stages, dict) else ():
        if not isinstance(stage, dict):
            continue
        wdir = project / str(stage.get("wdir") or ".")
        for key in ("outs", "metrics", "plots"):
            written += [(wdir / p).resolve() for p in _declared_paths(stage.get(key))]
    for key in ("metrics", "plots"):
        written += [(project / p).resolve() for p in _declared_paths(pipeline.get(key))]
    return written


def _within(path: Path, folders: list[Path]) -> bool:
    return any(path == f or f in path.parents for f in folders)


def git_dirty(project: str | os.PathLike = ".") -> bool | None:
    """Whether a tracked file of the git work tree holding ``project`` differs from its
    commit, not counting ``pipeline_written_paths(project)``; None outside git."""
    top = _git("-C", str(project), "rev-parse", "--show-toplevel")
    if top is None:
        return None
    status = _git(
        "-C", top, "status", "--porcelain", "-z", "--untracked-files=no", "--no-renames",
        strip=False,
    )  # fmt: skip
    if status is None:
        return None
    # Porcelain lines are "XY path", the path relative to the top of the work tree.
    changed = [Path(top, entry[3:]).resolve() for entry in status.split("\0") if entry]
    ignored = pipeline_written_paths(project)
    return any(not _within(path, ignored) for path in changed)


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        return None


def cpu_model() -> str | None:
    """The CPU's model name: /proc/cpuinfo on Linux (x86 "model name", ARM "Model" or
    "Hardware"), sysctl on macOS, else what `platform` knows (often only "x86_64")."""
    try:
        fields: dict[str, str] = {}
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            key, sep, value = line.partition(":")
            if sep and value.strip():
                fields.setdefault(key.strip().lower(), value.strip())
        for key in ("model name", "model", "hardware", "cpu model", "processor"):
            value = fields.get(key)
            if value and not value.isdigit():
                return value
    except OSError:
        pass
    if sys.platform == "darwin":
        brand = _sysctl("machdep.cpu.brand_string")
        if brand:
            return brand
    return platform.processor() or platform.machine() or None


def _sysctl(name: str) -> str | None:
    try:
        out = subprocess.run(["sysctl", "-n", name], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _cpu_count() -> int | None:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()


def _torch_info() -> dict:
    """torch's CUDA/cuDNN builds and the GPU this process uses (None on CPU)."""
    info: dict = {"cuda": None, "cudnn": None, "gpu": None, "gpu_count": 0}
    try:
        import torch
    except Exception:  # no torch: nothing to say about GPUs
        return info
    try:
        info["cuda"] = torch.version.cuda
        info["cudnn"] = (
            torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        )
        if torch.cuda.is_available():
            info["gpu_count"] = torch.cuda.device_count()
            info["gpu"] = torch.cuda.get_device_name(torch.cuda.current_device())
    except Exception:  # a broken driver must not cost the record
        pass
    return info


def _versions() -> dict:
    versions: dict = {"python": platform.python_version()}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
        except Exception:  # a broken distribution's metadata
            versions[name] = None
    return versions


def slurm_info(environ: dict | None = None) -> dict | None:
    """The SLURM allocation this process runs in (``SLURM_VARIABLES``), or None outside
    SLURM. ``restart_count`` is 0 when SLURM has not requeued the job."""
    env = os.environ if environ is None else environ
    if not env.get("SLURM_JOB_ID"):
        return None
    info = {key: env.get(var) or None for key, var in SLURM_VARIABLES.items()}
    info["restart_count"] = _int_or_none(info["restart_count"]) or 0
    for key in ("cpus_per_task", "mem_per_node_mb"):
        info[key] = _int_or_none(info[key])
    return info


def provenance() -> dict:
    """Where and with what a run was made (the keys are listed in the module docstring).
    Never raises: what cannot be found is None."""
    torch_info = _torch_info()
    versions = _versions()
    versions["cuda"] = torch_info["cuda"]
    versions["cudnn"] = torch_info["cudnn"]
    commit = _git("rev-parse", "HEAD")
    try:
        dirty = git_dirty() if commit else None
    except Exception:  # a probe never costs the record
        dirty = None
    slurm = slurm_info()
    try:
        hostname = socket.gethostname()
    except OSError:
        hostname = None
    try:
        cpu = cpu_model()
    except Exception:
        cpu = None
    return {
        "versions": versions,
        "git_commit": commit,
        "git_dirty": dirty,
        "hostname": hostname,
        "cpu": cpu,
        "cpu_count": _cpu_count(),
        "platform": platform.platform(),
        "gpu": torch_info["gpu"],
        "gpu_count": torch_info["gpu_count"],
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "slurm_job_id": slurm["job_id"] if slurm else None,
        "slurm_restart_count": slurm["restart_count"] if slurm else None,
        "slurm": slurm,
        "attempt": _int_or_none(os.environ.get(ATTEMPT_ENV)),
        "argv": sys.argv,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def provenance_text(facts: dict, record_sha256: str) -> str:
    """A provenance file's text: ``facts`` (`provenance()` and the run's
    ``RUN_FACT_KEYS`` and ``epoch_seconds``) and the sha256 of the record they belong to.
    A NaN or inf is a ValueError naming the field (JSON has none)."""
    content = {**facts, RECORD_SHA256_KEY: record_sha256}
    try:
        text = json.dumps(content, indent=2, sort_keys=True, allow_nan=False)
    except ValueError as exc:
        raise ValueError(f"provenance not written: JSON has no NaN or inf ({exc})") from exc
    return text + "\n"
