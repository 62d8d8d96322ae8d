"""Model size and compute: trainable parameters and MMac of one forward pass.

Counting convention for ``mmac``
--------------------------------
Units are real multiply-accumulates (MACs) for ONE sample of shape (1, C, L), reported
in millions (MMac). Standard layers are counted by ptflops' module hooks (Linear and
Conv1d: in·out per position plus bias; GELU, LayerNorm: per element, as ptflops does).
ptflops' functional/tensor-op patching is switched off so that nothing is counted twice;
reshapes, the global average pool and dropout count as zero.

Every ``S4DLayer`` (input (B, H, L), state size N, so N/2 complex modes) is counted as a
whole by a custom hook, with one complex multiply = 4 real MACs and FFT length n = 2L:

* kernel Vandermonde  K = 2 Re(W · exp(ΛΔ l)):   4 · H · N/2 · L
  (the complex exponentials themselves are not counted)
* FFTs: one real FFT / inverse real FFT of length n is counted as n · log2(n) MACs
  (about half of the 2 n log2 n real MACs of a radix-2 complex FFT of length n).
  There are B·H forward FFTs of the input, H of the kernel and B·H inverse FFTs:
  (2B + 1) · H · n log2 n
* spectral product  u_f · k_f:                    4 · B · H · (L + 1)
* D skip term and GELU:                           2 · B · H · L

The MS4 GLU channel mixing (``ChannelGLU``: a Conv1d(H, 2H, 1) evaluated as a linear map
on the channels-last view) is counted like ptflops counts a Conv1d, plus the gate:
B · L · (2H · H + 2H) + B · L · H.

Two conventions (``convention=``)
---------------------------------
* ``"paper"`` (the default, and the records' ``mmac``): what the MS4N paper's tables
  report. ptflops does not see the S4D layer's kernel generation and FFT convolution (they
  are tensor ops, not modules), so the paper's figures leave them out: an S4D layer counts
  only its per-element work, 3 · B · H · L (the D skip's multiply and add, and the GELU).
  With that, MS4N's and MS4's per-domain MMac of Table 4 are reproduced in all six MONSTER
  domains to the digits printed (tests/test_complexity.py); counting the convolution
  (below) gives 2.2–2.6x the published figures.
* ``"full"`` (the records' ``mmac_full``): everything above, the kernel and FFTs included,
  which is what a forward pass really costs.
"""

from __future__ import annotations

import contextlib
import copy
import io
import math

import torch
import torch.nn as nn

from .models.ms4 import ChannelGLU
from .models.s4d import S4DLayer

__all__ = ["count_params", "domain_averages", "mmac", "s4d_layer_macs"]


def count_params(model: nn.Module) -> int:
    """Number of trainable parameter elements (a complex parameter counts by numel)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def s4d_layer_macs(batch: int, d_model: int, d_state: int, length: int) -> int:
    """MACs of one S4DLayer forward pass under the convention of this module."""
    B, H, N2, L = batch, d_model, d_state // 2, length
    n = 2 * L
    kernel = 4 * H * N2 * L
    ffts = (2 * B + 1) * H * n * math.log2(n)
    product = 4 * B * H * (L + 1)
    pointwise = 2 * B * H * L
    return int(round(kernel + ffts + product + pointwise))


CONVENTIONS = ("paper", "full")
#: the longest series that `mmac(device="auto")` counts by a real forward pass of one
#: sample on the CPU (milliseconds at this length); longer ones go to the meta device,
#: whose first use in a process costs ~1.5 s of set-up but no memory or arithmetic
AUTO_CPU_MAX_LENGTH = 1024


def _bhl(module: S4DLayer, x: torch.Tensor) -> tuple[int, int, int]:
    """(B, H, L) of an S4D layer's input, whichever layout it takes."""
    B, a, b = x.shape
    return (B, b, a) if module.channels_last else (B, a, b)


def _s4d_layer_hook(module: S4DLayer, inputs: tuple, output: torch.Tensor) -> None:
    B, H, L = _bhl(module, inputs[0])
    module.__flops__ += s4d_layer_macs(B, H, module.d_state, L)


def _s4d_layer_hook_paper(module: S4DLayer, inputs: tuple, output: torch.Tensor) -> None:
    B, H, L = _bhl(module, inputs[0])
    module.__flops__ += 3 * B * H * L  # D skip (multiply, add) and GELU; no convolution


def _channel_glu_hook(module: ChannelGLU, inputs: tuple, output: torch.Tensor) -> None:
    B, L, H = inputs[0].shape  # channels last
    module.__flops__ += B * L * (2 * H * H + 2 * H) + B * L * H


def _own_macs_hook(convention: str, sink: list[int]):
    def hook(module: nn.Module, inputs: tuple, output) -> None:
        sink.append(int(module.count_macs(inputs, output, convention)))

    return hook


def mmac(
    model: nn.Module,
    n_channels: int,
    length: int,
    device: str = "auto",
    convention: str = "paper",
) -> float:
    """Millions of MACs for one forward pass of one sample (1, C, L); prints nothing.

    Works on a deep copy of ``model`` (ptflops attaches hooks and switches to eval mode),
    with the global random state restored after. ``device="meta"`` runs the pass on
    PyTorch's meta device: shapes only, no memory or arithmetic, so a long input
    (MONSTER's AudioMNIST, L = 47,998) through a quadratic attention costs nothing. The
    hooks count from shapes, so the figure is the same on either device. ``"auto"``: the
    CPU up to ``AUTO_CPU_MAX_LENGTH`` steps, else meta.
    """
    from ptflops import get_model_complexity_info

    if convention not in CONVENTIONS:
        raise ValueError(f"convention {convention!r} is not one of {CONVENTIONS}")
    if device == "auto":
        device = "cpu" if length <= AUTO_CPU_MAX_LENGTH else "meta"
    s4d_hook = _s4d_layer_hook_paper if convention == "paper" else _s4d_layer_hook
    work = copy.deepcopy(model).to(device)
    dtype = next((p.dtype for p in work.parameters() if p.is_floating_point()), torch.float32)

    def input_constructor(_res: tuple) -> torch.Tensor:
        if device == "meta":
            return torch.empty(1, n_channels, length, dtype=dtype, device="meta")
        gen = torch.Generator().manual_seed(0)
        return torch.randn(1, n_channels, length, generator=gen, dtype=dtype)

    hooks = {S4DLayer: s4d_hook, ChannelGLU: _channel_glu_hook}
    # A module of any family may count its own work (what ptflops' module hooks do not
    # see: tensor ops, attention products, scans) with a method
    # ``count_macs(inputs, output, convention) -> int`` (one forward call, whole batch).
    # It counts only its own work: its child modules (Linear, Conv1d...) keep their
    # ptflops hooks. (Not a ptflops custom hook: ptflops would then ignore the children.)
    own_macs: list[int] = []
    handles = [
        module.register_forward_hook(_own_macs_hook(convention, own_macs))
        for module in work.modules()
        if callable(getattr(module, "count_macs", None))
    ]

    sink = io.StringIO()
    with (
        contextlib.redirect_stdout(sink),
        contextlib.redirect_stderr(sink),
        torch.no_grad(),
        torch.random.fork_rng(devices=[]),
    ):
        macs, _ = get_model_complexity_info(
            work,
            (n_channels, length),
            as_strings=False,
            print_per_layer_stat=False,
            input_constructor=input_constructor,
            ost=sink,
            verbose=False,
            custom_modules_hooks=hooks,
            backend="pytorch",
            backend_specific_config={"count_functional": False},
        )
    for handle in handles:
        handle.remove()
    if macs is None:
        raise RuntimeError(f"ptflops could not count the model:\n{sink.getvalue()}")
    return (macs + sum(own_macs)) / 1e6


def domain_averages(
    name: str,
    model_params: dict,
    benchmark: str = "monster",
    device: str = "meta",
    convention: str = "paper",
    builder=None,
) -> dict[str, dict[str, float]]:
    """Per domain of ``benchmark``: the mean parameter count and MMac of model ``name``
    built for each of the domain's datasets (its C, K and own L from the catalog), i.e.
    how the MS4N paper's Table 4 averages them. {domain: {"params", "mmac", "n"}}; a
    dataset whose C, K or L the catalog does not know is left out (``n`` counts the rest)."""
    from .data.catalog import catalog
    from .models import build_model

    sums: dict[str, list[float]] = {}
    for entry in catalog(benchmark=benchmark):
        C, K, L = entry.C, entry.n_classes, entry.L
        if None in (C, K, L):
            continue  # shape not in the catalog (UEA's InsectWingbeat: L varies by release)
        if builder is not None:  # a model not (yet) in the registry: builder(C, K, L)
            model = builder(C, K, L)
        else:
            model = build_model(name, C, K, L, model_params)
        acc = sums.setdefault(entry.domain, [0.0, 0.0, 0])
        acc[0] += count_params(model)
        acc[1] += mmac(model, C, L, device=device, convention=convention)
        acc[2] += 1
    return {d: {"params": p / n, "mmac": m / n, "n": n} for d, (p, m, n) in sums.items()}
