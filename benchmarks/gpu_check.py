"""The CUDA paths, checked and timed in one short run (aim: under 5 minutes on one GPU).

1. Mamba1 / Mamba2 (params.yaml entries): mamba-ssm's fused scans (``selective_scan_fn``,
   ``mamba_chunk_scan_combined``) against the pure-PyTorch scans of ``mamba_scan.py`` on the
   same weights and input: max |Δ| of the logits and of the gradients (relative to the
   largest gradient), and the forward + backward time of each. Where mamba-ssm cannot be
   imported (a machine without a package index needs a built wheel of it), it says so
   and times the pure-PyTorch path alone.
2. ConvTran (the MONSTER configuration) on CUDA against the same model on the CPU: max |Δ|
   of the logits, and a training step's time on each.
3. MS4N and Mamba2: one training epoch (Adam, cross-entropy) over a synthetic MONSTER-sized
   set (8,192 rows, C = 9, L = 256, 6 classes: UCIActivity's shape) at batch 256: seconds
   per epoch and peak GPU memory.
4. The scan each model with a recurrence takes on this device as a run trains it (its
   params.yaml entry, one forward pass): the name its layers record
   (``ssmbench.models.scan_paths``, the run record's ``scan``): fused (mamba_ssm's kernels;
   on the CPU, the numba kernels of Mamba1 and of the TIDES family), parallel, chunked,
   stepwise or sequential (pure PyTorch); "none" for a model without a scan. Sections 1
   and 3 print the scan of each pass they time as well.

    .venv/bin/python benchmarks/gpu_check.py            # on the GPU
    .venv/bin/python benchmarks/gpu_check.py --small    # any machine: tiny sizes, a dry run

Without CUDA it runs on the CPU and says that it is not the GPU check (``--small`` makes
that quick: the test suite runs it so that the script keeps working).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parents[1]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(fn, device: torch.device, repeats: int) -> float:
    """Median seconds of ``fn()`` after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        _sync(device)
        t0 = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _model(name: str, C: int, K: int, L: int, device: torch.device, seed: int = 0):
    from ssmbench.config import model_entry
    from ssmbench.models import build_model
    from ssmbench.params_file import read_params

    params = read_params(REPO / "params.yaml")
    torch.manual_seed(seed)
    return build_model(name, C, K, L, model_entry(params, name)).to(device)


def _fwd_bwd(model, x, y):
    def run():
        model.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()

    return run


def _scan(model) -> str:
    """The scan path(s) ``model``'s last forward pass ran, or "none" (no scan layer)."""
    from ssmbench.models.scan_paths import scan_of

    return scan_of(model) or "none"


def check_mamba(device: torch.device, B: int, C: int, L: int, repeats: int) -> None:
    from ssmbench.models.mamba_scan import fused_available

    fused = device.type == "cuda" and fused_available()
    print(
        f"[1] Mamba fused vs pure PyTorch, B={B} C={C} L={L}: mamba-ssm "
        f"{'importable' if fused_available() else 'NOT importable: fused path not checked'}"
    )
    for name in ("Mamba1", "Mamba2"):
        model = _model(name, C, 4, L, device)
        x = torch.randn(B, C, L, device=device)
        y = torch.randint(0, 4, (B,), device=device)
        results = {}
        for path in ["fused", "pure"] if fused else ["pure"]:
            for mixer in model.mixers:
                mixer.use_fused = path == "fused"
            run = _fwd_bwd(model, x, y)
            run()
            logits = model(x).detach()
            grads = [p.grad.detach().clone() for p in model.parameters() if p.grad is not None]
            results[path] = (logits, grads, _timed(run, device, repeats), _scan(model))
        t_p, scan_p = results["pure"][2:]
        line = f"    {name}: pure {t_p * 1e3:.1f} ms/step [scan: {scan_p}]"
        if fused:
            logits_f, grads_f, t_f, scan_f = results["fused"]
            logits_p, grads_p, _, _ = results["pure"]
            scale = max(g.abs().max().item() for g in grads_p) or 1.0
            pairs = zip(grads_f, grads_p, strict=True)
            grad_diff = max((a - b).abs().max().item() for a, b in pairs) / scale
            line += (f", fused {t_f * 1e3:.1f} ms/step [scan: {scan_f}] "
                     f"({t_p / t_f:.1f}x); "
                     f"max |Δ logits| {(logits_f - logits_p).abs().max().item():.2e}, "
                     f"max |Δ grad| / max |grad| {grad_diff:.2e}")  # fmt: skip
        print(line, flush=True)


def check_convtran(device: torch.device, B: int, C: int, L: int, repeats: int) -> None:
    print(f"[2] ConvTran on {device.type} vs CPU, B={B} C={C} L={L}")
    model = _model("ConvTran", C, 5, L, torch.device("cpu")).eval()
    on_device = copy.deepcopy(model).to(device)  # before any training-mode pass (BatchNorm)
    x = torch.randn(B, C, L)
    y = torch.randint(0, 5, (B,))
    with torch.no_grad():
        cpu_logits = model(x)
        dev_logits = on_device(x.to(device)).cpu()
    cpu_step = _timed(_fwd_bwd(model.train(), x, y), torch.device("cpu"), 1)
    dev_step = _timed(_fwd_bwd(on_device.train(), x.to(device), y.to(device)), device, repeats)
    print(
        f"    max |Δ logits| {(dev_logits - cpu_logits).abs().max().item():.2e}; "
        f"step: cpu {cpu_step * 1e3:.0f} ms, {device.type} {dev_step * 1e3:.1f} ms",
        flush=True,
    )


def check_epochs(device: torch.device, N: int, C: int, L: int, batch: int) -> None:
    print(f"[3] one training epoch, {N} rows, C={C} L={L}, batch {batch}")
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(N, C, L, generator=gen)
    y = torch.randint(0, 6, (N,), generator=gen)
    for name in ("MS4N", "Mamba2"):
        model = _model(name, C, 6, L, device)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        _sync(device)
        t0 = time.perf_counter()
        for start in range(0, N, batch):
            xb = X[start : start + batch].to(device, non_blocking=True)
            yb = y[start : start + batch].to(device, non_blocking=True)
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
        _sync(device)
        seconds = time.perf_counter() - t0
        peak = (f", peak GPU memory {torch.cuda.max_memory_allocated(device) / 2**20:,.0f} MiB"
                if device.type == "cuda" else "")  # fmt: skip
        print(f"    {name}: {seconds:.2f} s/epoch, final batch loss {loss.item():.3f}{peak} "
              f"[scan: {_scan(model)}]", flush=True)  # fmt: skip


#: params.yaml entries whose layers have a scan (and MS4N, which has none), for section 4
SCAN_MODELS = ("Mamba1", "Mamba1-logncde", "Mamba2", "TIDES", "S5", "S5-logncde", "MambaS",
               "FF-TIDES", "MS4N")  # fmt: skip


def check_scans(device: torch.device, B: int, C: int, L: int) -> None:
    """Section 4: one forward pass of each ``SCAN_MODELS`` entry as a run builds it, and
    the scan its layers took."""
    from ssmbench.models import model_inputs

    print(f"[4] the scan each model takes on {device.type}, B={B} C={C} L={L}")
    x = torch.randn(B, C, L, device=device)
    extra = {"steps": torch.ones(B, L, device=device),
             "mask": torch.ones(B, C, L, dtype=torch.bool, device=device)}  # fmt: skip
    for name in SCAN_MODELS:
        model = _model(name, C, 4, L, device).train()
        inputs = {k: v for k, v in extra.items() if k in model_inputs(model)}
        with torch.no_grad():
            model(x, **inputs)
        print(f"    {name}: {_scan(model)}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="tiny sizes (a dry run anywhere)")
    args = ap.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    start = time.perf_counter()
    if device.type == "cuda":
        print(f"device: {torch.cuda.get_device_name(device)}, torch {torch.__version__}, "
              f"CUDA {torch.version.cuda}")  # fmt: skip
    else:
        print(f"device: CPU (no CUDA): NOT the GPU check, only that the script runs "
              f"(torch {torch.__version__})")  # fmt: skip
    if args.small:
        check_mamba(device, 2, 3, 64, 1)
        check_convtran(device, 2, 3, 64, 1)
        check_epochs(device, 64, 3, 32, 32)
        check_scans(device, 2, 3, 32)
    else:
        check_mamba(device, 64, 9, 1024, 5)
        check_convtran(device, 64, 9, 1024, 5)
        check_epochs(device, 8192, 9, 256, 256)
        check_scans(device, 8, 9, 256)
    print(f"total {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
