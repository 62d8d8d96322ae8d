"""benchmarks/gpu_check.py, the script to run on a CUDA machine, keeps working: its
``--small`` dry run goes through every check on this machine's CPU and says it is not the
GPU check; ConvTran's device copy gives the CPU's logits; it names the scan each model took
(on the CPU: Mamba1 fused, Mamba2 parallel, the TIDES family fused by numba, MS4N none)."""

from __future__ import annotations

import re
import subprocess
import sys

from conftest import REPO

from ssmbench.models.numba_runtime import numba_missing
from ssmbench.models.scan_paths import (
    CHUNKED_LINEAR,
    FUSED_CPU_SELECTIVE,
    FUSED_TIDES_CPU,
    PARALLEL_SSD,
    SEQUENTIAL_LOOP,
)


def test_gpu_check_dry_run():
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_check.py"), "--small"],
                          capture_output=True, text=True, timeout=300, cwd=REPO)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    for part in ("[1] Mamba", "[2] ConvTran", "[3] one training epoch", "Mamba1: pure",
                 "Mamba2: pure", "MS4N:", "total"):  # fmt: skip
        assert part in out, out
    if out.startswith("device: CPU"):
        assert "NOT the GPU check" in out.splitlines()[0]
    diff = float(re.search(r"max \|Δ logits\| ([0-9.e+-]+)", out).group(1))
    assert diff < 1e-4
    if out.startswith("device: CPU"):
        scans = dict(re.findall(r"^    ([\w-]+): ([a-z]+ \([^)]+\)|none)$", out, re.M))
        tides = CHUNKED_LINEAR if numba_missing() else FUSED_TIDES_CPU
        assert scans == {
            "Mamba1": FUSED_CPU_SELECTIVE,
            "Mamba1-logncde": FUSED_CPU_SELECTIVE,
            "Mamba2": PARALLEL_SSD,
            "TIDES": tides,
            "S5": tides,
            "S5-logncde": tides,
            "MambaS": tides,
            "FF-TIDES": SEQUENTIAL_LOOP,
            "MS4N": "none",
        }, out
        assert f"[scan: {FUSED_CPU_SELECTIVE}]" in out.split("Mamba1: pure", 1)[1].splitlines()[0]
