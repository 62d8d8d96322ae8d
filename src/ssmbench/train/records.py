"""Run records: provenance.

A record exists only if its run finished: it is written last, atomically
(`ssmbench.io.atomic_write_json`), so a killed job never leaves half a record.
"""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata

VERSIONED_PACKAGES = ("torch", "numpy", "pandas", "scikit-learn", "aeon", "ptflops", "ssmbench")


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def provenance() -> dict:
    """Where and with what a run was made: versions, git commit, host, hardware."""
    versions = {"python": platform.python_version()}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "versions": versions,
        "git_commit": commit,
        "git_dirty": None if status is None else bool(status),
        "hostname": socket.gethostname(),
        "cpu": platform.processor() or platform.machine(),
        "platform": platform.platform(),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "argv": sys.argv,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
