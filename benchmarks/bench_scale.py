"""MONSTER scale: prepare and train MS4N on a many-GB dataset with a small, N-independent RSS.

What it does (each heavy part in its own subprocess, so that each peak RSS is its own):

1. ``make``: writes a synthetic MONSTER-format dataset into ``<workdir>/<tag>/raw/SynthScale/``:
   ``SynthScale_X.npy`` float32 (N, C=3, L=1000) written chunk by chunk with plain
   sequential writes (never the whole array in memory), ``SynthScale_y.npy`` (K=10
   classes; each class shifts the channel means a little, so the loss can fall) and five
   ``test_indices_fold_k.txt`` (a seeded random partition of the rows). N follows from
   ``--gb`` (GiB of X).
2. ``prepare``: ``ssmbench.data.monster.prepare.prepare_monster`` on that raw folder (the real code
   path: one sequential pass over X that hashes and scans it, X hard-linked, labels and
   folds checked). ``fetch_monster`` is not run: it would only hard-link and hash the files
   once more, and ``prepare_monster`` does not need its ``provenance.json``.
3. ``train``: MS4N (``build_model`` with the params.yaml ``MS4N`` entry), Adam (the
   protocol's lr), ``--steps`` optimisation steps at batch ``--batch`` (256, MONSTER's),
   batches of the training rows of fold 0 read by ``ssmbench.train.fold_split.iterate_batches``
   in block-shuffled order through a ``BlockReader`` (``ssmbench.train.batch_order``, the
   params.yaml sizes: how ``ssmbench train`` reads an X above the in-memory budget; here
   at both sizes), shuffled with a seeded ``torch.Generator``. It runs under glibc's
   default malloc (``--fast-malloc``: ``MALLOC_ENV``) and with ``--threads`` (default 1)
   torch threads, as ``ssmbench train`` does.
4. ``load``: reading throughput. The same ``--steps`` random-index batches through
   ``iterate_batches`` alone (no model), against a sequential read of the same number of
   bytes (the first rows of X, in batch-sized slices) through a plain ``np.memmap``. Each
   measurement is made cold: X's pages are dropped from the page cache with
   ``posix_fadvise(POSIX_FADV_DONTNEED)`` before it (after ``fsync``; the memory map of the
   previous measurement is closed first), and the fraction of X still cached is checked
   with ``mincore`` and printed. Each is then repeated warm (straight after, from the page
   cache). Also printed: the read amplification (bytes of X that entered the page cache
   per byte asked for; the kernel's read-around on page faults, up to the device's
   ``read_ahead_kb``) and, for comparison only, the cold random read with
   ``madvise(MADV_RANDOM)`` on the memory map (no read-around; not what the training code
   does). Then the block-shuffled reading of ``ssmbench.train.batch_order`` (used for an
   X above ``protocol.reading.in_memory_max_gb``), with params.yaml's block and buffer
   sizes: the batches of a block-shuffled epoch's first whole windows (at least
   ``--block-batches`` batches; an epoch reads whole windows), read cold by
   ``BlockReader`` (what training does: one ``pread`` a block, 4 threads, the next
   window read ahead while the current one is served: ``BlockReader.follow``; the last
   window measured reads one more ahead that is not counted) and, to compare, by the
   same reader without reading ahead and through the memory map with ``MADV_RANDOM`` and
   with ``MADV_NORMAL`` (read-around), against a cold sequential read of the same bytes;
   these five alternate ``--repeats`` times and each keeps its median (the disk's rate
   drifts), and each prints its own peak RSS. The prepare and train phases also start
   from a dropped page cache.

Peak RSS is reported per phase as ``VmHWM`` (/proc/self/status; the high-water mark of
the phase's process image), ``ru_maxrss`` (getrusage; on Linux it also counts the image
before ``exec``, here the small stdlib-only parent), and the maxima of ``VmRSS``,
``RssAnon`` (heap: tensors, arrays) and ``RssFile`` (pages of the memory-mapped X that the
process has touched; clean, reclaimable page cache) sampled every 20 ms by a thread.
The goal is a training peak RSS <= 1.5 GiB that does not grow with N: with
``--compare-small`` (default on) the whole chain runs again on a dataset 1/4 the size and
the summary puts both side by side. (RssFile grows with the number of distinct rows
touched, not with N: over a full epoch it would approach the file size, but those pages
are page cache that the kernel reclaims under pressure, not process memory.)

Usage:
    python benchmarks/bench_scale.py [--gb 6] [--steps 50] [--workdir DIR] [--keep]
        [--no-compare-small] [--threads 1] [--fast-malloc] [--block-batches 400] [--repeats 3]
    python benchmarks/bench_scale.py --gb 0.3 --steps 5          # quick check
One phase alone (e.g. on a kept workdir): --phase train --data <workdir>/large
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from proc_status import memory_status

ROOT = Path(__file__).resolve().parents[1]
NAME = "SynthScale"
C, L, K = 3, 1000, 10
N_FOLDS = 5
MiB = 1 << 20
GiB = 1 << 30
RSS_GOAL = 1.5 * GiB
RESULT = "RESULT "
PHASES = ("make", "prepare", "train", "load")


# --------------------------------------------------------------------------- measuring
def _status() -> dict[str, int]:
    """The memory fields the phases report, in bytes."""
    status = memory_status()
    fields = ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem")
    return {k: status[k] for k in fields if k in status}


class RssSampler:
    """Samples /proc/self/status every `interval` seconds in a thread; keeps the maxima."""

    def __init__(self, interval: float = 0.02):
        self.interval = interval
        self.peak: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        for key, value in _status().items():
            self.peak[key] = max(self.peak.get(key, 0), value)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> RssSampler:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


def _memory_report(sampler: RssSampler) -> dict:
    import resource

    status = _status()
    return {
        "ru_maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,  # KiB on Linux
        "VmHWM": status.get("VmHWM"),
        "peak_VmRSS": sampler.peak.get("VmRSS"),
        "peak_RssAnon": sampler.peak.get("RssAnon"),
        "peak_RssFile": sampler.peak.get("RssFile"),
    }


def _drop_cache(path: Path) -> None:
    """Drop the file's clean pages from the page cache (makes the next read cold)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)  # dirty pages are not dropped
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _cached_fraction(path: Path) -> float | None:
    """Fraction of the file's pages in the page cache (mincore on a mapping that is never
    touched, so it does not change this process's RSS); None when it cannot be told."""
    import ctypes
    import ctypes.util
    import mmap

    import numpy as np

    size = path.stat().st_size
    if size == 0:
        return 0.0
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_long,
        ]
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    except (OSError, AttributeError):
        return None
    pages = -(-size // mmap.PAGESIZE)
    vec = np.zeros(pages, dtype=np.uint8)
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr is None or addr == ctypes.c_void_p(-1).value:
            return None
        try:
            if libc.mincore(addr, size, vec.ctypes.data) != 0:
                return None
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)
    return float(np.count_nonzero(vec & 1)) / pages


def _read_ahead_kb(path: Path) -> int | None:
    """read_ahead_kb of the block device holding `path` (the kernel's read-around on a
    page fault in a file mapping is up to this much); None when not a plain block device."""
    dev = os.stat(path).st_dev
    sys_dev = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    for q in (sys_dev / "queue", sys_dev / ".." / "queue"):  # a partition: its disk's queue
        try:
            return int((q / "read_ahead_kb").read_text())
        except (OSError, ValueError):
            continue
    return None


def _log(msg: str) -> None:
    print(f"[bench_scale] {msg}", file=sys.stderr, flush=True)


def _emit(result: dict) -> None:
    print(RESULT + json.dumps(result), flush=True)


# --------------------------------------------------------------------------- phases
def phase_make(data: Path, gb: float, seed: int) -> dict:
    """Synthetic MONSTER raw files; X written sequentially, one ~32 MiB chunk at a time."""
    import numpy as np

    row_bytes = C * L * 4
    N = max(2 * N_FOLDS, math.ceil(gb * GiB / row_bytes))
    src = data / "raw" / NAME
    src.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, size=N, dtype=np.int64)
    class_means = rng.normal(0.0, 0.5, size=(K, C, 1)).astype(np.float32)
    chunk = max(1, (32 * MiB) // row_bytes)
    buf = np.empty((chunk, C, L), dtype=np.float32)
    x_path = src / f"{NAME}_X.npy"
    t0 = time.perf_counter()
    with RssSampler() as sampler:
        header = {"descr": "<f4", "fortran_order": False, "shape": (N, C, L)}
        with open(x_path, "wb") as f:
            np.lib.format.write_array_header_1_0(f, header)
            for s in range(0, N, chunk):
                e = min(N, s + chunk)
                part = buf[: e - s]
                rng.standard_normal(out=part, dtype=np.float32)
                part += class_means[y[s:e]]
                f.write(memoryview(part).cast("B"))
            f.flush()
            os.fsync(f.fileno())
        np.save(src / f"{NAME}_y.npy", y)
        perm = rng.permutation(N)
        for k, part in enumerate(np.array_split(perm, N_FOLDS)):
            (src / f"test_indices_fold_{k}.txt").write_text(
                "\n".join(map(str, np.sort(part).tolist())) + "\n", encoding="ascii"
            )
    seconds = time.perf_counter() - t0
    _drop_cache(x_path)  # do not leave GBs of the new file in the page cache
    size = x_path.stat().st_size
    _log(f"make: wrote {x_path} ({size / GiB:.2f} GiB, N={N}) in {seconds:.1f} s")
    return {
        "N": N,
        "x_bytes": size,
        "raw_bytes": sum(p.stat().st_size for p in src.iterdir()),
        "seconds": seconds,
        **_memory_report(sampler),
    }


def phase_prepare(data: Path) -> dict:
    from ssmbench.data.monster.prepare import prepare_monster

    raw, out = data / "raw", data / "prepared"
    _drop_cache(raw / NAME / f"{NAME}_X.npy")
    cached = _cached_fraction(raw / NAME / f"{NAME}_X.npy")
    t0 = time.perf_counter()
    with RssSampler() as sampler:
        path = prepare_monster(NAME, raw, out)
    seconds = time.perf_counter() - t0
    meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    x_bytes = (path / "X.npy").stat().st_size
    _log(f"prepare: {path} in {seconds:.1f} s (X {meta['x_storage']})")
    return {
        "seconds": seconds,
        "x_storage": meta["x_storage"],
        "cached_before": cached,
        "MBps": x_bytes / 1e6 / seconds,
        **_memory_report(sampler),
    }


def phase_train(data: Path, steps: int, batch: int, threads: int, seed: int, params: Path) -> dict:
    import torch
    import torch.nn.functional as F

    from ssmbench.config import load_params
    from ssmbench.data.store import PreparedDataset
    from ssmbench.models import build_model
    from ssmbench.reading_plan import plan_reading
    from ssmbench.train.batch_order import BlockReader, iterate_batches, plan_order
    from ssmbench.train.run_setup import seed_everything

    torch.set_num_threads(threads)
    seed_everything(seed)
    cfg = load_params(params)
    model_params = cfg["models"]["MS4N"]
    lr = float(cfg["protocol"]["lr"])
    path = data / "prepared" / NAME
    _drop_cache(path / "X.npy")
    cached = _cached_fraction(path / "X.npy")
    with RssSampler() as sampler:
        ds = PreparedDataset(path)
        X, y = ds.X, ds.y
        meta = ds.meta
        train_idx = ds.train_indices(0)
        model = build_model(
            "MS4N", int(meta["C"]), int(meta["n_classes"]), int(meta["L"]), model_params
        )
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        shuffle = torch.Generator().manual_seed(seed)
        # as `ssmbench train` reads an X above protocol.reading.in_memory_max_gb (here
        # whatever its size, so the two sizes compare): block-shuffled epochs, BlockReader
        reading = dict(cfg["protocol"].get("reading") or {})
        plan = plan_reading({"reading": {**reading, "in_memory_max_gb": 0}}, X.shape)
        X = BlockReader(path / "X.npy", train_idx, plan.block_rows, 2 * plan.buffer_blocks)

        def epoch(X=X, y=y):
            order = plan_order(plan, train_idx, shuffle)
            X.follow(order)  # reads the next window ahead, as a training run's reader
            return iterate_batches(X, y, order, batch)

        batches = epoch()
        model.train()
        step_s, wait_s, losses = [], [], []
        t_start = time.perf_counter()
        for step in range(steps):
            t0 = time.perf_counter()
            try:
                xb, yb = next(batches)
            except StopIteration:  # next epoch (a new shuffle from the same generator)
                batches = epoch()
                xb, yb = next(batches)
            t1 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            losses.append(loss.item())
            t2 = time.perf_counter()
            wait_s.append(t1 - t0)
            step_s.append(t2 - t0)
            sampler.sample()
            if step == 0 or (step + 1) % 10 == 0 or step + 1 == steps:
                _log(
                    f"train: step {step + 1}/{steps} loss={losses[-1]:.4f} "
                    f"({step_s[-1]:.2f} s, batch read {wait_s[-1] * 1e3:.0f} ms)"
                )
        total = time.perf_counter() - t_start
        del batches, X, y
    return {
        "steps": steps,
        "batch": batch,
        "threads": torch.get_num_threads(),
        "n_train": int(train_idx.size),
        "cached_before": cached,
        "seconds": total,
        "median_step_s": statistics.median(step_s),
        "median_read_s": statistics.median(wait_s),
        "read_fraction": sum(wait_s) / sum(step_s),
        "first_loss": losses[0],
        "last_loss": losses[-1],
        **_memory_report(sampler),
    }


def phase_load(
    data: Path,
    steps: int,
    batch: int,
    seed: int,
    params: Path,
    block_batches: int,
    repeats: int = 3,
) -> dict:
    import functools
    import gc
    import mmap

    import numpy as np
    import torch

    from ssmbench.config import load_params
    from ssmbench.data.store import PreparedDataset
    from ssmbench.reading_plan import plan_reading
    from ssmbench.train.batch_order import BlockReader, BlockShuffledOrder, iterate_batches

    path = data / "prepared" / NAME
    x_path, y_path = path / "X.npy", path / "y.npy"
    ds = PreparedDataset(path)
    train_idx = ds.train_indices(0)
    n_batches = min(steps, -(-train_idx.size // batch))  # at most one epoch of batches

    def random_read(advise_random: bool = False) -> int:
        X, y = ds.X, ds.y
        if advise_random:  # no read-around on page faults (np.memmap keeps its mmap in _mmap)
            X._mmap.madvise(mmap.MADV_RANDOM)
        shuffle = torch.Generator().manual_seed(seed)
        nbytes = 0
        for i, (xb, _) in enumerate(iterate_batches(X, y, train_idx, batch, generator=shuffle)):
            nbytes += xb.numel() * xb.element_size()
            if i + 1 == n_batches:
                break
        return nbytes

    # the same number of rows (hence bytes) as the random batches, from row 0 on
    n_rows = min(n_batches * batch, train_idx.size)

    def sequential_read() -> int:
        X = np.load(x_path, mmap_mode="r", allow_pickle=False)  # an np.memmap
        nbytes = 0
        for s in range(0, n_rows, batch):
            xb = np.array(X[s : min(n_rows, s + batch)], dtype=np.float32)  # a copy, as X[batch]
            nbytes += xb.nbytes
        return nbytes

    # Block-shuffled batches (ssmbench.train.batch_order) with params.yaml's
    # protocol.reading sizes, in block mode whatever the budget: the batches of an epoch's
    # first windows (whole windows, as an epoch reads them: at least `block_batches`
    # batches), read as training reads them (BlockReader: one pread a block, reading the
    # next window ahead), and, to compare, by the same reader without reading ahead and
    # through the memory map with MADV_RANDOM (PreparedDataset.X) and with the kernel's
    # default advice (read-around).
    reading = dict(load_params(params)["protocol"].get("reading") or {})
    plan = plan_reading({"reading": {**reading, "in_memory_max_gb": 0}}, ds.X.shape)

    def block_order() -> BlockShuffledOrder:
        return BlockShuffledOrder(train_idx, torch.Generator().manual_seed(seed),
                                  plan.block_rows, plan.buffer_blocks)  # fmt: skip

    starts = block_order().window_starts
    n_windows = min(len(starts) - 1, int(np.searchsorted(starts, block_batches * batch)))
    block_rows_read = int(starts[n_windows])
    n_block_batches = -(-block_rows_read // batch)

    def block_read(via: str = "pread", ahead: bool = True) -> int:
        order = block_order()
        if via == "pread":
            X = BlockReader(x_path, train_idx, plan.block_rows, 2 * plan.buffer_blocks)
            if ahead:
                X.follow(order)
        else:
            X = np.load(x_path, mmap_mode="r", allow_pickle=False)
            X._mmap.madvise(mmap.MADV_RANDOM if via == "madv_random" else mmap.MADV_NORMAL)
        nbytes = 0
        for xb, _ in iterate_batches(X, ds.y, order[:block_rows_read], batch):
            nbytes += xb.numel() * xb.element_size()
        if via == "pread":  # timed: the reads still in flight (ahead of the last window)
            X.close()
        return nbytes

    def sequential_block_bytes() -> int:
        X = np.load(x_path, mmap_mode="r", allow_pickle=False)
        nbytes = 0
        for s in range(0, block_rows_read, batch):
            nbytes += np.array(X[s : min(block_rows_read, s + batch)], dtype=np.float32).nbytes
        return nbytes

    def measure(read, cold: bool) -> dict:
        gc.collect()  # the previous measurement's memory map is closed
        if cold:
            _drop_cache(x_path)
            _drop_cache(y_path)
        cached = _cached_fraction(x_path)
        with RssSampler(interval=0.01) as own:
            t0 = time.perf_counter()
            nbytes = read()
            seconds = time.perf_counter() - t0
        after = _cached_fraction(x_path)
        return {
            "bytes": nbytes,
            "seconds": seconds,
            "MBps": nbytes / 1e6 / seconds,
            "cached": cached,
            # this measurement's own peak resident set (sampled every 10 ms)
            "peak_VmRSS": own.peak.get("VmRSS"),
            "peak_RssFile": own.peak.get("RssFile"),
            # bytes of X brought into the page cache per byte asked for (read-ahead)
            "amplification": None
            if cached is None or after is None
            else (after - cached) * x_path.stat().st_size / nbytes,
        }

    out = {"n_batches": n_batches, "batch": batch, "read_ahead_kb": _read_ahead_kb(x_path)}
    with RssSampler() as sampler:
        out["seq_cold"] = measure(sequential_read, cold=True)
        out["seq_warm"] = measure(sequential_read, cold=False)
        out["rand_cold"] = measure(random_read, cold=True)
        out["rand_warm"] = measure(random_read, cold=False)
        out["rand_cold_madv"] = measure(functools.partial(random_read, True), cold=True)
        # the disk's rate drifts (a shared, host-cached virtual disk): sequential and
        # block reads alternate, `repeats` times each, and each keeps its median
        reads = {
            "block_seq_cold": sequential_block_bytes,
            "block_cold": block_read,
            "block_cold_no_ahead": functools.partial(block_read, ahead=False),
            "block_cold_mmap_random": functools.partial(block_read, "madv_random"),
            "block_cold_mmap_normal": functools.partial(block_read, "madv_normal"),
        }
        tries: dict[str, list[dict]] = {key: [] for key in reads}
        for _ in range(repeats):
            for key, read in reads.items():
                tries[key].append(measure(read, cold=True))
        for key, runs in tries.items():
            best = sorted(runs, key=lambda m: m["MBps"])[len(runs) // 2]  # the median
            out[key] = {**best, "MBps_all": [m["MBps"] for m in runs],
                        "peak_VmRSS": max(m["peak_VmRSS"] or 0 for m in runs),
                        "peak_RssFile": max(m["peak_RssFile"] or 0 for m in runs)}  # fmt: skip
    out["ratio_cold"] = out["rand_cold"]["MBps"] / out["seq_cold"]["MBps"]
    out["ratio_warm"] = out["rand_warm"]["MBps"] / out["seq_warm"]["MBps"]
    out["block"] = {**plan.describe(), "n_batches": n_block_batches, "windows": n_windows}
    for key in ("block_cold", "block_cold_no_ahead", "block_cold_mmap_random",
                "block_cold_mmap_normal"):  # fmt: skip
        out[f"ratio_{key}"] = out[key]["MBps"] / out["block_seq_cold"]["MBps"]
    out.update(_memory_report(sampler))
    _log(
        f"load: {n_batches} batches x {batch}: random {out['rand_cold']['MBps']:.0f} MB/s, "
        f"sequential {out['seq_cold']['MBps']:.0f} MB/s (cold); {n_block_batches} "
        f"block-shuffled batches {out['block_cold']['MBps']:.0f} MB/s, sequential "
        f"{out['block_seq_cold']['MBps']:.0f} MB/s (cold)"
    )
    return out


# --------------------------------------------------------------------------- driver
def _run_phase(phase: str, data: Path, gb: float, args, env_extra: dict | None = None) -> dict:
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--phase",
        phase,
        "--data",
        str(data),
        "--gb",
        repr(gb),
        "--steps",
        str(args.steps),
        "--batch",
        str(args.batch),
        "--threads",
        str(args.threads),
        "--seed",
        str(args.seed),
        "--params",
        str(args.params),
        "--block-batches",
        str(args.block_batches),
        "--repeats",
        str(args.repeats),
    ]
    env = {**os.environ, **(env_extra or {})}
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=env, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT)]
    if proc.returncode != 0 or not lines:
        sys.stdout.write(proc.stdout)
        raise SystemExit(f"bench_scale: phase {phase} on {data} failed (exit {proc.returncode})")
    return json.loads(lines[-1][len(RESULT) :])


def _run_chain(data: Path, gb: float, args) -> dict:
    from ssmbench.train import MALLOC_ENV

    data.mkdir(parents=True, exist_ok=True)
    res = {}
    for phase in PHASES:
        env = MALLOC_ENV if phase == "train" and args.fast_malloc else None
        res[phase] = _run_phase(phase, data, gb, args, env)
    return res


def _mib(v) -> str:
    return "-" if v is None else f"{v / MiB:,.0f} MiB"


def _summary(runs: dict[str, dict], workdir: Path, args) -> str:
    cols = list(runs)
    heads = {"large": f"--gb {args.gb:g}", "small": f"1/4 (--gb {args.gb / 4:g})"}
    rows: list[tuple[str, ...]] = []

    def row(label, fn):
        rows.append((label, *(fn(runs[c]) for c in cols)))

    def pct(v):
        return "-" if v is None else f"{100 * v:.1f}%"

    row("X on disk", lambda r: f"{r['make']['x_bytes'] / GiB:.2f} GiB")
    row("raw files on disk", lambda r: f"{r['make']['raw_bytes'] / GiB:.2f} GiB")
    row("N (C=3, L=1000, K=10)", lambda r: f"{r['make']['N']:,}")
    row("write raw files", lambda r: f"{r['make']['seconds']:.1f} s")
    row("  peak RSS (VmHWM)", lambda r: _mib(r["make"]["VmHWM"]))
    row("prepare_monster", lambda r: f"{r['prepare']['seconds']:.1f} s")
    row("  X read rate", lambda r: f"{r['prepare']['MBps']:,.0f} MB/s")
    row("  X storage", lambda r: r["prepare"]["x_storage"])
    row("  X cached before (cold)", lambda r: pct(r["prepare"]["cached_before"]))
    row("  peak RSS VmHWM", lambda r: _mib(r["prepare"]["VmHWM"]))
    row("  peak RSS ru_maxrss", lambda r: _mib(r["prepare"]["ru_maxrss"]))
    row("  peak RssAnon / RssFile", lambda r: _anon_file(r["prepare"]))
    row(
        "train MS4N",
        lambda r: (
            f"{r['train']['steps']} steps x {r['train']['batch']}, {r['train']['seconds']:.1f} s"
        ),
    )
    row("  median s/step", lambda r: f"{r['train']['median_step_s']:.3f} s")
    row("  batch read share", lambda r: pct(r["train"]["read_fraction"]))
    row(
        "  loss first -> last",
        lambda r: f"{r['train']['first_loss']:.3f} -> {r['train']['last_loss']:.3f}",
    )
    row("  peak RSS VmHWM", lambda r: _mib(r["train"]["VmHWM"]))
    row("  peak RSS ru_maxrss", lambda r: _mib(r["train"]["ru_maxrss"]))
    row("  peak VmRSS (sampled)", lambda r: _mib(r["train"]["peak_VmRSS"]))
    row("  peak RssAnon / RssFile", lambda r: _anon_file(r["train"]))
    row("load: batches read", lambda r: f"{r['load']['n_batches']} x {r['load']['batch']}")
    row("  bytes per read", lambda r: f"{r['load']['rand_cold']['bytes'] / 1e6:,.1f} MB")
    for temp in ("cold", "warm"):
        row(
            f"  iterate_batches ({temp})",
            lambda r, t=temp: f"{r['load'][f'rand_{t}']['MBps']:,.0f} MB/s",
        )
        row(
            f"  seq. np.memmap ({temp})",
            lambda r, t=temp: f"{r['load'][f'seq_{t}']['MBps']:,.0f} MB/s",
        )
        row(f"  ratio random/seq ({temp})", lambda r, t=temp: f"{r['load'][f'ratio_{t}']:.3f}")
    row(
        "  iterate_batches cold, MADV_RANDOM",
        lambda r: f"{r['load']['rand_cold_madv']['MBps']:,.0f} MB/s",
    )
    row(
        "  read amplification cold rand/seq",
        lambda r: "/".join(
            "-" if a is None else f"{a:.1f}x"
            for a in (
                r["load"]["rand_cold"]["amplification"],
                r["load"]["seq_cold"]["amplification"],
            )
        ),
    )
    row(
        "  amplification rand MADV_RANDOM",
        lambda r: (
            "-"
            if r["load"]["rand_cold_madv"]["amplification"] is None
            else f"{r['load']['rand_cold_madv']['amplification']:.1f}x"
        ),
    )
    row("  device read_ahead_kb", lambda r: str(r["load"]["read_ahead_kb"]))
    row(
        "block shuffle (protocol.reading)",
        lambda r: (
            f"{r['load']['block']['block_rows']} rows ({r['load']['block']['block_mb']:.2f} MB)"
            f" x {r['load']['block']['buffer_blocks']}"
        ),
    )
    row(
        "  batches read (windows)",
        lambda r: f"{r['load']['block']['n_batches']} ({r['load']['block']['windows']})",
    )
    row("  bytes per read", lambda r: f"{r['load']['block_cold']['bytes'] / 1e6:,.1f} MB")
    row(
        "  seq. np.memmap (cold, median)",
        lambda r: (
            f"{r['load']['block_seq_cold']['MBps']:,.0f} MB/s of "
            + "/".join(f"{v:,.0f}" for v in r["load"]["block_seq_cold"]["MBps_all"])
        ),
    )
    for key, label in (
        ("block_cold", "BlockReader, pread (training)"),
        ("block_cold_no_ahead", "BlockReader, no read-ahead"),
        ("block_cold_mmap_random", "memmap MADV_RANDOM"),
        ("block_cold_mmap_normal", "memmap MADV_NORMAL"),
    ):
        row(
            f"  {label} (cold)",
            lambda r, k=key: (
                f"{r['load'][k]['MBps']:,.0f} MB/s of "
                + "/".join(f"{v:,.0f}" for v in r["load"][k]["MBps_all"])
                + f" = {r['load'][f'ratio_{k}']:.3f}x seq, "
                f"peak RSS {_mib(r['load'][k]['peak_VmRSS'])} "
                f"(file {_mib(r['load'][k]['peak_RssFile'])})"
            ),
        )
    row(
        "  full shuffle (cold), peak RSS",
        lambda r: (
            f"{r['load']['rand_cold']['MBps']:,.0f} MB/s = {r['load']['ratio_cold']:.3f}x seq, "
            f"{_mib(r['load']['rand_cold']['peak_VmRSS'])}"
        ),
    )
    row(
        "  X cached before cold reads",
        lambda r: (
            f"{pct(r['load']['seq_cold']['cached'])} / {pct(r['load']['rand_cold']['cached'])}"
        ),
    )
    row("  peak RSS VmHWM (memmap comparisons incl.)", lambda r: _mib(r["load"]["VmHWM"]))

    header = ("", *(heads[c] for c in cols))
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{widths[0]}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    lines = ["", "=" * 78, "bench_scale summary (MONSTER-format synthetic data, MS4N)", "=" * 78]
    lines.append(
        f"workdir {workdir} ({'kept' if args.keep else 'removed'}); torch threads "
        f"{args.threads}; train malloc "
        f"{'MALLOC_ENV (--fast-malloc)' if args.fast_malloc else 'glibc default'}; "
        f"seed {args.seed}; cold = posix_fadvise(DONTNEED) on X before the "
        f"measurement"
    )
    lines.append(fmt.format(*header))
    lines.extend(fmt.format(*r) for r in rows)
    peak = {c: runs[c]["train"]["VmHWM"] or runs[c]["train"]["ru_maxrss"] for c in cols}
    # the load phase's own high-water mark includes the memory-map comparisons (their
    # touched pages count in RSS); what training reads with is the BlockReader's
    worst = max(
        max(
            *(r[p]["VmHWM"] or r[p]["ru_maxrss"] for p in PHASES if p != "load"),
            r["load"]["block_cold"]["peak_VmRSS"],
        )
        for r in runs.values()
    )
    verdict = "met" if worst <= RSS_GOAL else "NOT met"
    lines.append(
        f"goal: peak RSS <= 1.5 GiB in every phase (load: its BlockReader reads): {verdict} "
        f"(largest {_mib(worst)})"
    )
    if "small" in runs:
        lines.append(
            f"N-independence: train peak VmHWM large/small = {peak['large'] / peak['small']:.3f} "
            f"for {runs['large']['make']['N'] / runs['small']['make']['N']:.1f}x the rows"
        )
    lines.append("=" * 78)
    return "\n".join(lines)


def _anon_file(r: dict) -> str:
    return f"{_mib(r['peak_RssAnon'])} / {_mib(r['peak_RssFile'])}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gb", type=float, default=6.0, help="size of X in GiB (default 6)")
    ap.add_argument("--steps", type=int, default=50, help="training steps / batches read")
    ap.add_argument("--batch", type=int, default=256, help="batch size (MONSTER: 256)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (ssmbench train: 1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="parent folder of the benchmark's new temporary folder (default: system temp)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the data folder afterwards")
    ap.add_argument(
        "--compare-small",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run everything again on a dataset 1/4 the size (default on)",
    )
    ap.add_argument(
        "--fast-malloc",
        action="store_true",
        help="train under ssmbench.train.MALLOC_ENV (as `ssmbench train --fast-malloc`)",
    )
    ap.add_argument("--params", type=Path, default=ROOT / "params.yaml")
    ap.add_argument(
        "--block-batches",
        type=int,
        default=400,
        help="block-shuffled batches read in the load phase (default 400: several windows)",
    )
    ap.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="cold block-shuffled and sequential reads, alternated; medians (default 3)",
    )
    ap.add_argument("--phase", choices=("all", *PHASES), default="all", help=argparse.SUPPRESS)
    ap.add_argument("--data", type=Path, default=None, help="one phase's data folder")
    args = ap.parse_args()
    if args.gb <= 0 or args.steps < 1 or args.batch < 1 or args.threads < 1:
        ap.error("--gb, --steps, --batch and --threads must be positive")

    if args.phase != "all":
        if args.data is None:
            ap.error("--phase needs --data")
        if args.phase == "make":
            _emit(phase_make(args.data, args.gb, args.seed))
        elif args.phase == "prepare":
            _emit(phase_prepare(args.data))
        elif args.phase == "train":
            _emit(
                phase_train(args.data, args.steps, args.batch, args.threads, args.seed, args.params)
            )
        else:
            _emit(phase_load(args.data, args.steps, args.batch, args.seed, args.params,
                             args.block_batches, args.repeats))  # fmt: skip
        return

    sizes = {"large": args.gb, **({"small": args.gb / 4} if args.compare_small else {})}
    need = sum(sizes.values()) * GiB * 1.02 + 256 * MiB  # X + y, folds; X is hard-linked
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="ssmbench-bench-scale-", dir=args.workdir))
    free = shutil.disk_usage(workdir).free
    print(f"bench_scale: data in {workdir} ({'kept' if args.keep else 'removed at the end'})")
    if free < need:
        shutil.rmtree(workdir, ignore_errors=True)
        raise SystemExit(
            f"bench_scale: {workdir} has {free / GiB:.1f} GiB free, needs about "
            f"{need / GiB:.1f} GiB; lower --gb or pick another --workdir"
        )
    try:
        runs = {tag: _run_chain(workdir / tag, gb, args) for tag, gb in sizes.items()}
        print(_summary(runs, workdir, args))
        with open(workdir / "results.json", "w", encoding="utf-8") as f:
            json.dump(runs, f, indent=2)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
