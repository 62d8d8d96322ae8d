"""The frame every deep classifier shares: the registry's constructor contract, the pooling
over time steps and the Linear–GELU–Linear head.

A family's classifier subclasses ``SequenceClassifier``. Its constructor takes
``(n_channels, n_classes, length, [per_step,] **hyperparameters)``, calls
``super().__init__(n_channels, n_classes, length, per_step)``, builds its body and then its
``head`` (in that order: the head's initial weights are drawn last), and ends its forward
pass with ``self.readout(features)`` on channels-last features (B, L, d) (a family that
computes (B, d, L) passes the transposed view and pools with
``MeanOverSteps(channels_first=True)``):

* pooled: ``head(global_pool(features))`` -> (B, K), the mean over the L steps;
* ``per_step=True``: ``head(features)`` -> (B, L, K), one output per step (the families whose
  constructor takes ``per_step``: ``SUPPORTS_PER_STEP``).

``HYPERPARAMS`` is read from the constructor's signature (``hyperparams.py``).
"""

from __future__ import annotations

import inspect

import torch
import torch.nn as nn

from .hyperparams import ConstructorHyperparams

__all__ = [
    "ClassifierHead",
    "CountedMeanOverSteps",
    "MeanOverSteps",
    "SequenceClassifier",
    "optional_dropout",
]


def optional_dropout(p: float) -> nn.Module:
    """Element-wise dropout, or the identity when ``p`` is 0."""
    return nn.Dropout(p) if p > 0 else nn.Identity()


class ClassifierHead(nn.Sequential):
    """Linear(d_in, d_hidden) -> GELU -> [dropout] -> Linear(d_hidden, K): the MS4N authors'
    head (``model/MS4N.py``), shared by the families whose sizes in the MS4N paper's Table 4
    imply it. ``dropout=None`` leaves the dropout slot out (parameter names ``0.*``, ``2.*``);
    a float puts ``optional_dropout(dropout)`` there (``0.*``, ``3.*``)."""

    def __init__(
        self, d_in: int, d_hidden: int, n_classes: int, dropout: float | None = None
    ) -> None:
        layers = [nn.Linear(d_in, d_hidden), nn.GELU()]
        if dropout is not None:
            layers.append(optional_dropout(dropout))
        layers.append(nn.Linear(d_hidden, n_classes))
        super().__init__(*layers)


class MeanOverSteps(nn.Module):
    """Global average pooling of (B, L, d) over L -> (B, d), as ``Tensor.mean`` (which
    ptflops does not count).

    ``channels_first=True`` is for features computed as (B, d, L) and handed over as their
    (B, L, d) view: the mean then runs over the stored (B, d, L) layout, because a
    reduction's rounding depends on the memory order it walks.
    """

    def __init__(self, channels_first: bool = False) -> None:
        super().__init__()
        self.channels_first = channels_first

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.channels_first:
            return x.transpose(-1, -2).mean(dim=-1)
        return x.mean(dim=-2)


class CountedMeanOverSteps(nn.Module):
    """The same pooling through ``nn.AdaptiveAvgPool1d(1)``, which ptflops counts as one MAC
    per element: the families whose published MMac contains that count use it."""

    def __init__(self) -> None:
        super().__init__()
        self.pool = nn.AdaptiveAvgPool1d(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x.transpose(-1, -2)).squeeze(-1)  # (B, d, L) -> (B, d)


def with_time_channel(x: torch.Tensor, steps: torch.Tensor | None, length: int) -> torch.Tensor:
    """x (B, C, L) with the time t / (L − 1) prepended as channel 0: (B, C + 1, L).

    t = Δ_0 + … + Δ_k (the timestamps, from the step sizes the training side passes; None:
    unit steps, as a dataset without timestamps gives), L the model's input length. The
    TIDES reference feeds its Mamba baselines linspace(0, L, L) / L of the full grid, before
    dropping (uea/droprate.py): on regular data ours is that shifted by one step and scaled
    by L / (L − 1); on a drop-rate variant (t from 0) our L is
    the longest kept series, so the channel is the reference's times a constant, which the
    input projection absorbs."""
    if steps is None:
        steps = x.new_ones(x.shape[0], x.shape[-1])
    t = torch.cumsum(steps.to(x.dtype), dim=1)  # (B, L)
    return torch.cat([(t / max(int(length) - 1, 1)).unsqueeze(1), x], dim=1)


class SequenceClassifier(nn.Module):
    """(B, C, L) -> logits (B, K), or (B, L, K) with ``per_step``; see the module docstring."""

    #: hyperparameters accepted from params.yaml and their types (from the constructor)
    HYPERPARAMS = ConstructorHyperparams()
    #: whether the constructor takes ``per_step`` (set for each subclass)
    SUPPORTS_PER_STEP = False
    #: what ``forward`` takes: the values X alone; a time-aware family declares
    #: ``("values", "steps")`` and is called ``forward(x, steps=Δ)`` with Δ (B, L)
    INPUTS: tuple[str, ...] = ("values",)

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls.SUPPORTS_PER_STEP = "per_step" in inspect.signature(cls).parameters

    head: nn.Module

    def __init__(
        self, n_channels: int, n_classes: int, length: int | None, per_step: bool = False
    ) -> None:
        super().__init__()
        self.n_channels = n_channels
        self.n_classes = n_classes
        self.length = length
        self.per_step = per_step
        self.global_pool: nn.Module = MeanOverSteps()

    def readout(self, features: torch.Tensor) -> torch.Tensor:
        """Channels-last features (B, L, d) -> (B, K) pooled, or (B, L, K) per step."""
        if self.per_step:
            return self.head(features)
        return self.head(self.global_pool(features))
