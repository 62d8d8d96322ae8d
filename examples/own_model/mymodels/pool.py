"""MeanPoolLinear: a deliberately simple baseline to put beside the studies' models.

Each channel's mean and standard deviation over time, a hidden layer, logits. It reads
X alone (``INPUTS`` defaults to values), so every benchmark of the suite can train it.
Its constructor is the family contract ssmbench builds models by:
``(n_channels, n_classes, length, **hyperparameters)``, each hyperparameter annotated
(int, float, bool or str) so that a params entry is checked against it.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from .features import mean_and_spread


class MeanPoolLinear(nn.Module):
    #: small hyperparameters for `ssmbench check-model`'s contract checks
    TEST_PARAMS = {"hidden": 8}

    def __init__(self, n_channels: int, n_classes: int, length: int, hidden: int = 64,
                 dropout: float = 0.0) -> None:  # fmt: skip
        super().__init__()
        self.norm = nn.LayerNorm(2 * n_channels)
        self.hidden = nn.Linear(2 * n_channels, hidden)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(hidden, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (B, C, L) -> features (B, 2C) -> (B, hidden) -> logits (B, K)
        h = torch.relu(self.hidden(self.norm(mean_and_spread(x))))
        return self.head(self.dropout(h))
