"""Training: the protocol's epoch loop (protocol.py), a run's set-up: seed, data, split,
model (run_setup.py), a non-deep model's fit (estimator_run.py), what a run minimises and
reports (objective.py), the checks that make a run sound (checks.py), the fold's rows and
split (fold_split.py), the batch size and how X is read (batch_order.py), the optimizer (optim.py),
checkpoints (checkpoint.py), stop signals (stop.py), a run's record and curve, what
they hold and how they are published as one unit (record.py), and the record's
provenance (provenance.py); and the optional malloc settings of a training process
(below)."""

# Optional glibc malloc settings for training processes (`ssmbench train --fast-malloc`).
# Tensors above 32 MB (long sequences: a (64, 64, 10000) complex FFT buffer is 330 MB) are
# otherwise mmap'ed and unmapped on every step, and re-faulting their pages costs more
# than the arithmetic: an MS4N step at B=64, L=10,000 took 4.2 s with glibc's defaults and
# 1.9 s with these (benchmarks/bench_kernel.py, 2 cores). The price is memory: freed
# blocks stay in a fragmented heap, and at B=256, L=1,000 the training peak went from
# 1.27 GiB to 2.4 GiB (benchmarks/bench_scale.py). So it is off by default.
MALLOC_ENV = {
    "MALLOC_MMAP_MAX_": "0",
    "MALLOC_TRIM_THRESHOLD_": str(64 * 2**30),
}


def restart_with_malloc_env(argv: list[str]) -> None:
    """Re-executes this process with MALLOC_ENV set, unless it already is (glibc reads
    these variables at start-up only). `argv` is the command line to run again."""
    import os
    import sys

    if all(os.environ.get(key) == value for key, value in MALLOC_ENV.items()):
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *argv], {**os.environ, **MALLOC_ENV})
