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

__all__ = ["count_params", "mmac", "s4d_layer_macs"]


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


def _s4d_layer_hook(module: S4DLayer, inputs: tuple, output: torch.Tensor) -> None:
    u = inputs[0]
    B, H, L = u.shape
    module.__flops__ += s4d_layer_macs(B, H, module.d_state, L)


def _channel_glu_hook(module: ChannelGLU, inputs: tuple, output: torch.Tensor) -> None:
    B, H, L = inputs[0].shape
    module.__flops__ += B * L * (2 * H * H + 2 * H) + B * L * H


def mmac(model: nn.Module, n_channels: int, length: int) -> float:
    """Millions of MACs for one forward pass of one sample (1, C, L); prints nothing.

    Works on a deep copy of ``model`` (ptflops attaches hooks and switches to eval mode).
    """
    from ptflops import get_model_complexity_info

    work = copy.deepcopy(model).cpu()
    dtype = next((p.dtype for p in work.parameters() if p.is_floating_point()), torch.float32)

    def input_constructor(_res: tuple) -> torch.Tensor:
        gen = torch.Generator().manual_seed(0)
        return torch.randn(1, n_channels, length, generator=gen, dtype=dtype)

    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink), torch.no_grad():
        macs, _ = get_model_complexity_info(
            work,
            (n_channels, length),
            as_strings=False,
            print_per_layer_stat=False,
            input_constructor=input_constructor,
            ost=sink,
            verbose=False,
            custom_modules_hooks={S4DLayer: _s4d_layer_hook, ChannelGLU: _channel_glu_hook},
            backend="pytorch",
            backend_specific_config={"count_functional": False},
        )
    if macs is None:
        raise RuntimeError(f"ptflops could not count the model:\n{sink.getvalue()}")
    return macs / 1e6
