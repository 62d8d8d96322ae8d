"""H-InceptionTime ("HInception" in the MS4N paper): InceptionTime with hand-crafted filters.

Sources
-------
* Ismail-Fawaz, Devanne, Weber, Forestier (2022), "Deep Learning for Time Series
  Classification Using New Hand-Crafted Convolution Filters" (IEEE BigData 2022):
  H-InceptionTime = InceptionTime whose first module also applies 17 fixed filters —
  increasing-trend and decreasing-trend detectors of lengths 2, 4, 8, 16, 32, 64 and
  peak detectors of lengths 6, 12, 24, 48, 96 — followed by a ReLU.
* Ismail Fawaz et al. (2020), "InceptionTime: Finding AlexNet for Time Series
  Classification": Inception modules (bottleneck 1x1 conv; three convolutions of kernel
  40, 20, 10; a max-pool(3) -> 1x1 conv branch; concatenation, BatchNorm, ReLU), depth 6,
  a residual 1x1-conv + BatchNorm shortcut every 3 modules, global average pooling,
  softmax layer. InceptionTime is an ensemble of 5 such networks.
* Reference implementations: https://github.com/MSD-IRIMAS/CF-4-TSC
  ``classifiers/H_Inception.py`` (the filters, their "same" alignment, bottleneck size =
  number of filters) and https://github.com/aeon-toolkit/aeon
  ``aeon/networks/_inception.py`` (``use_custom_filters=True``; ``kernel_size // 2**i``).
  The filter formulas were taken from those files; the code is written anew.

What Table 4 of the MS4N paper pins down
----------------------------------------
Table 4's HInception is ONE network, not the 5-network ensemble, and a much narrower one
than the references' default (32 filters, depth 6: 422,217 parameters for C = 1, K = 7, 5.6x
the published 74,928 for Audio; the ensemble of 5 would be 2.1 million). Its MMac grows by
64.5 per input channel and time step, and its Param by about 64 per input channel, with no
jump between C = 1 and C > 1 — the signature of the per-step input projection
``Linear(C, 64)`` of the MS4N authors' own models (MS4N, GRU, LSTM, Mamba in Table 4 all have 64
parameters per input channel), not of InceptionTime's first module (whose bottleneck is
skipped for C = 1 and whose shortcut would add 4·n_filters per channel). A least-squares fit
over the six domains gives MMac = L·(75,095 + 64.5 C) + 2,160 MACs, to within 0.005 MMac.
With that projection, the reference network with ``n_filters = 12`` (depth 6, kernels
40/20/10, bottleneck 12, residual shortcuts, 17 hand-crafted filters) reproduces Table 4
within 1.1 % (Param) and 0.13 % (MMac) in every domain — the best of a search over n_filters
4..48, depth 1..6, kernel sets, bottleneck/shortcut/filter variants and head types (none of
which was exact). The authors' code for this baseline is not public (their repository,
https://github.com/h-saadatmand/MS4N, ships MS4N only), so ``n_filters = 12`` is a fitted
width, not a documented one.

Architecture (x: (B, C, L) float32 -> logits (B, K); D = d_model = 64, F = n_filters = 12)
------------------------------------------------------------------------------------------
    h = Linear(C, D) at every step, as (B, D, L)                      (input_projection)
    f = ReLU(hand-crafted filters(x))   17 fixed filters on the raw input  (B, 17, L)
    module 1: b = Conv1d(D, F, 1)(h)                                  bottleneck
              [Conv1d(F, F, 40), Conv1d(F, F, 20), Conv1d(F, F, 10)](b),
              Conv1d(D, F, 1)(MaxPool1d(3, 1, 1)(h)), f  -> concat    (B, 4F + 17, L)
              BatchNorm, ReLU
    modules 2..6: same without f (input 4F + 17, then 4F)             (B, 4F, L)
    after modules 3 and 6: ReLU(z + BN(Conv1d(res_in, 4F, 1)(res_in)))
    logits = Linear(4F, K)(mean over L)                               (B, K)
All convolutions have no bias and "same" padding (PyTorch, like Keras, pads an even kernel
one step more on the right).

Parameter count (D = 64, F = 12): 64 C + 64 (projection) + 74,362 + 49 K; 74,833 for Audio
(C = 1, mean K = 7; published 74,928). The 17 hand-crafted filters (438 taps in all) are a
fixed buffer, not parameters.

MMac and the two conventions
----------------------------
ptflops sees every convolution, BatchNorm, ReLU, max-pool and linear layer. The
hand-crafted filters are computed with ``torch.nn.functional.conv1d`` on the channel sum of
the input (below) and count themselves (``HandCraftedFilters.count_macs``): "paper" leaves
them out — the fit above shows Table 4's figures have no 438 C-per-step term — and "full"
counts 438 multiply-accumulates per step on the channel sum plus the C − 1 additions of
that sum.

Choices and deviations
----------------------
* The input projection ``Linear(C, 64)`` is not part of H-InceptionTime; it is added because
  Table 4's counts require it (see above). ``input_projection=False`` gives the reference
  network on the raw channels (bottleneck skipped when C = 1, as in the references).
* ``n_filters = 12`` instead of 32, one network instead of an ensemble of 5 (fitted to
  Table 4; the ensemble is not what Table 4 measured).
* The hand-crafted filters act on the raw input (as in the references, where they act on
  the network input). The references replicate each filter over the C input channels of a
  ``Conv1D(filters=1)``, which equals filtering the sum of the channels; this module sums
  the channels once and applies the 17 filters as one convolution with a 144-tap bank
  (each filter placed at its own "same" offset, zeros elsewhere).
* Logits out (softmax in the loss); global average pooling is ``mean`` (not counted by
  ptflops); PyTorch default initialisation (the references use Keras' Glorot uniform).
* ``length`` is accepted (registry contract) and unused: the network works at any L, also
  when L is shorter than the kernels ("same" padding).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .frame import MeanOverSteps, SequenceClassifier

__all__ = ["HInceptionClassifier", "HandCraftedFilters", "InceptionModule", "hand_crafted_filters"]


def hand_crafted_filters(max_cf_length: int = 6) -> list[np.ndarray]:
    """The 17 fixed filters of H-InceptionTime (Ismail-Fawaz et al. 2022), as 1-D arrays.

    Increasing-trend detectors of lengths 2^1..2^max_cf_length: -1, +1, -1, +1, ...;
    decreasing-trend detectors of the same lengths: +1, -1, +1, ...; peak detectors for
    k = 2^2..2^max_cf_length, of length k + k/2: six parabolic pieces of length k/4
    (negative, then twice-as-high positive, then negative), as in CF-4-TSC.
    """
    sizes = [2**i for i in range(1, max_cf_length + 1)]
    filters = []
    for k in sizes:  # increasing trend
        f = np.ones(k)
        f[np.arange(k) % 2 == 0] = -1.0
        filters.append(f)
    for k in sizes:  # decreasing trend
        f = np.ones(k)
        f[np.arange(k) % 2 == 1] = -1.0
        filters.append(f)
    for k in sizes[1:]:  # peaks
        q = k // 4
        left = np.linspace(0.0, 1.0, q + 1)[1:] ** 2  # (k/4)
        right = left[::-1]
        f = np.concatenate([-left, -right, 2 * left, 2 * right, -left, -right])  # k + k/2
        filters.append(f)
    return filters


class HandCraftedFilters(nn.Module):
    """Fixed H-InceptionTime filters on the channel sum of the input. (B, C, L) -> (B, 17, L).

    Each filter f of length k uses "same" padding (k − 1)//2 on the left, like Keras/PyTorch.
    All filters sit in one (n_filters, 1, k_max) bank at offset (k_max − 1)//2 − (k − 1)//2,
    so a single convolution with left padding (k_max − 1)//2 gives every filter's output.
    """

    def __init__(self, max_cf_length: int = 6) -> None:
        super().__init__()
        filters = hand_crafted_filters(max_cf_length)
        k_max = max(len(f) for f in filters)
        bank = np.zeros((len(filters), 1, k_max), dtype=np.float32)
        centre = (k_max - 1) // 2
        for i, f in enumerate(filters):
            offset = centre - (len(f) - 1) // 2
            bank[i, 0, offset : offset + len(f)] = f
        self.register_buffer("bank", torch.from_numpy(bank), persistent=False)
        self.n_out = len(filters)
        self.taps = int(sum(len(f) for f in filters))  # 438 for max_cf_length = 6
        self.pad = (centre, k_max - 1 - centre)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = x.sum(dim=1, keepdim=True)  # (B, 1, L): the filters are shared over channels
        s = F.pad(s, self.pad)  # (B, 1, L + k_max - 1)
        return F.conv1d(s, self.bank.to(s.dtype))  # (B, 17, L)

    def count_macs(self, inputs: tuple, output, convention: str) -> int:
        if convention == "paper":
            return 0  # Table 4 has no term for these filters (see the module docstring)
        B, C, L = inputs[0].shape
        return int(B * L * (self.taps + C - 1))


class InceptionModule(nn.Module):
    """One Inception module. (B, c_in, L) -> (B, 4F + n_extra, L)."""

    def __init__(
        self,
        c_in: int,
        n_filters: int,
        kernel_size: int = 40,
        use_bottleneck: bool = True,
        n_extra: int = 0,
    ) -> None:
        super().__init__()
        nf = n_filters
        self.bottleneck = (
            nn.Conv1d(c_in, nf, 1, bias=False) if use_bottleneck and c_in > 1 else nn.Identity()
        )
        c_mid = nf if use_bottleneck and c_in > 1 else c_in
        kernels = [kernel_size // 2**i for i in range(3)]  # 40, 20, 10
        self.convs = nn.ModuleList(
            [nn.Conv1d(c_mid, nf, k, padding="same", bias=False) for k in kernels]
        )
        self.pool = nn.MaxPool1d(3, stride=1, padding=1)
        self.pool_conv = nn.Conv1d(c_in, nf, 1, bias=False)
        self.bn = nn.BatchNorm1d(4 * nf + n_extra)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor, extra: torch.Tensor | None = None) -> torch.Tensor:
        b = self.bottleneck(x)  # (B, F, L)
        branches = [conv(b) for conv in self.convs]  # 3 x (B, F, L)
        branches.append(self.pool_conv(self.pool(x)))  # (B, F, L)
        if extra is not None:
            branches.append(extra)  # (B, n_extra, L)
        return self.act(self.bn(torch.cat(branches, dim=1)))  # (B, 4F + n_extra, L)


class _Shortcut(nn.Module):
    """Residual: ReLU(z + BN(Conv1d(c_in, c_out, 1)(x)))."""

    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(c_in, c_out, 1, bias=False)
        self.bn = nn.BatchNorm1d(c_out)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return self.act(z + self.bn(self.conv(x)))


class HInceptionClassifier(SequenceClassifier):
    """Single H-InceptionTime network behind a per-step Linear(C, 64) (see module docstring).

    Its head is InceptionTime's softmax layer (Linear(4F, K)), not the frame's
    Linear-GELU-Linear head: Table 4's 49 parameters per class fit it."""

    #: the MS4N paper's group of the family (its Figures 3 and 7; report.style colours)
    GROUP = "CNN"

    #: small hyperparameters for the contract tests
    TEST_PARAMS = {"d_model": 8, "n_filters": 4, "depth": 3, "kernel_size": 8}

    def __init__(
        self,
        n_channels: int,
        n_classes: int,
        length: int | None = None,
        d_model: int = 64,
        n_filters: int = 12,
        depth: int = 6,
        kernel_size: int = 40,
        input_projection: bool = True,
        custom_filters: bool = True,
        use_residual: bool = True,
        use_bottleneck: bool = True,
    ) -> None:
        super().__init__(n_channels, n_classes, length)
        if kernel_size < 4:
            raise ValueError(f"kernel_size must be >= 4 (kernels k, k/2, k/4), got {kernel_size}")
        self.global_pool = MeanOverSteps(channels_first=True)
        self.use_residual = use_residual
        self.input_proj = nn.Linear(n_channels, d_model) if input_projection else None
        c_in = d_model if input_projection else n_channels
        self.filters = HandCraftedFilters() if custom_filters else None
        self.filters_act = nn.ReLU() if custom_filters else None
        n_extra = self.filters.n_out if custom_filters else 0
        out = 4 * n_filters
        self.blocks = nn.ModuleList()
        self.shortcuts = nn.ModuleList()
        res_in, c = c_in, c_in
        for d in range(depth):
            extra = n_extra if d == 0 else 0
            self.blocks.append(InceptionModule(c, n_filters, kernel_size, use_bottleneck, extra))
            c = out + extra
            if use_residual and d % 3 == 2:
                self.shortcuts.append(_Shortcut(res_in, out))
                res_in = out
        self.head = nn.Linear(c, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        extra = self.filters_act(self.filters(x)) if self.filters is not None else None
        if self.input_proj is not None:
            h = self.input_proj(x.transpose(-1, -2)).transpose(-1, -2)  # (B, D, L)
        else:
            h = x  # (B, C, L)
        res = h
        shortcut = iter(self.shortcuts)
        for d, module in enumerate(self.blocks):
            h = module(h, extra if d == 0 else None)
            if self.use_residual and d % 3 == 2:
                h = next(shortcut)(res, h)  # (B, 4F, L)
                res = h
        return self.readout(h.transpose(-1, -2))  # (B, K)
