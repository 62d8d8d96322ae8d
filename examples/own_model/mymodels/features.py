"""Summary features of a batch of series (B, C, L), shared by the models of this package."""

from __future__ import annotations

import torch


def mean_and_spread(x: torch.Tensor) -> torch.Tensor:
    """(B, C, L) -> (B, 2C): each channel's mean and standard deviation over time."""
    mean = x.mean(dim=-1)
    spread = x.std(dim=-1, unbiased=False)  # 0 for a series of one step, never NaN
    return torch.cat([mean, spread], dim=-1)
