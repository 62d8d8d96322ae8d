"""Wall and CPU time of `ssmbench plan` for the paper suites, cold and warm.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_plan.py [SUITE ...]

Each suite is planned twice in a fresh folder (so the project's MMac cache,
``.ssmbench/cache/mmac.json`` there, starts empty): cold, then warm. Both read the MMac
table the package ships (``ssmbench.mmac_table``): where it is current, cold counts no
model. Prints one line per suite: the time of each plan (wall, and the process's CPU time: the
steadier figure on a shared machine) and the bill's first line.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAPER_SUITES = ("uea-paper", "monster-paper", "uea6-paper", "physiome-paper")


def _plan(suite: str, cwd: str, env: dict) -> tuple[float, float, str]:
    """(wall s, CPU s, the bill's first line) of one `ssmbench plan` in ``cwd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "ssmbench", "--params", str(REPO / "params.yaml"), "--suite",
         suite, "plan"],
        cwd=cwd, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout.splitlines()[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("suites", nargs="*", default=list(PAPER_SUITES))
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    for suite in args.suites:
        with tempfile.TemporaryDirectory() as cwd:
            cold = _plan(suite, cwd, env)
            warm = _plan(suite, cwd, env)
        print(f"{suite:<16} cold {cold[0]:5.1f} s wall {cold[1]:5.1f} s CPU   "
              f"warm {warm[0]:5.1f} s wall {warm[1]:5.1f} s CPU   {cold[2]}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
