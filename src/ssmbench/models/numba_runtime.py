"""What the fused CPU kernels (numba) share: whether they can run, how many threads they
take, and the one log line a fallback to a reference scan writes.

* Threads follow torch's intra-op count (``torch.set_num_threads``, which a run sets from
  its ``threads`` / SLURM ``cpus_per_task``), capped by the pool numba started with, and are
  set for the length of one kernel call: torch and the kernel never run at once (the
  kernel is called between torch ops on the same Python thread), so the two pools never
  oversubscribe the allocation.
* Compiled code is cached (``njit(cache=True)``): in ``__pycache__`` beside the module, or,
  where the package is installed read-only, in numba's per-user cache directory
  (``NUMBA_CACHE_DIR`` to choose another); the compile is paid once per machine and
  version, not once per run.
* A kernel that cannot take its inputs (numba missing, a dtype, device or layout it was
  not written for) is never an error: the caller runs its reference scan and
  ``fallback`` logs why, once per kernel and reason in a process.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Iterator

import torch

__all__ = ["fallback", "kernel_threads", "numba_missing"]

log = logging.getLogger("ssmbench.kernels")

_said: set[tuple[str, str]] = set()


@functools.cache
def numba_missing() -> str | None:
    """Why numba cannot run here (None when it can)."""
    try:
        import numba  # noqa: F401
    except Exception as exc:  # an ImportError, or a broken install's own error
        return f"numba does not import ({type(exc).__name__}: {exc})"
    return None


@contextlib.contextmanager
def kernel_threads() -> Iterator[int]:
    """Within the block numba's parallel loops use torch's thread count (capped by numba's
    pool); yields that count and restores numba's previous one after, and torch's: the
    first parallel loop of numba's OpenMP layer in a process starts its pool with
    omp_set_num_threads(pool size), which torch's OpenMP then reads as its own count
    (torch.get_num_threads() 1 -> 2), so every later torch op would run on numba's pool."""
    import numba

    torch_threads = torch.get_num_threads()
    n = max(1, min(torch_threads, numba.config.NUMBA_NUM_THREADS))
    before = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        yield n
    finally:
        numba.set_num_threads(before)
        if torch.get_num_threads() != torch_threads:
            torch.set_num_threads(torch_threads)


def fallback(kernel: str, reason: str) -> None:
    """Log, once per process for each (kernel, reason), that ``kernel`` gave way to its
    reference scan and why."""
    if (kernel, reason) in _said:
        return
    _said.add((kernel, reason))
    log.warning("%s: the reference scan runs instead of the fused kernel: %s", kernel, reason)
