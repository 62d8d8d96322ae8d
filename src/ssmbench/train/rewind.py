"""What a training batch changes before its optimizer step, kept so that a batch abandoned
on a stop signal can be undone, and the checkpoint written is the state before it.

A signal inside the batch (``ssmbench.train.stop.StopRequest.abandoning``) stops it at once
instead of after it: the weights and the optimizer state are untouched until the
optimizer step (outside the abandonable part), but the forward pass has already drawn from
the random generators (dropout) and moved the running statistics of batch and instance
norms. `BatchRewind` keeps both as they were at the batch's start:

* torch's CPU and CUDA generator states, before every batch (microseconds);
* the running-statistics buffers of every norm module that tracks them, before every
  batch (a copy of a few small tensors; none for models without such norms);
* Python's and NumPy's global random states are not drawn from by a training batch in
  ssmbench; rather than copy them before every batch (tens of microseconds), their digest
  at the epoch's start is compared with the one at the stop: equal, the checkpoint is
  exact; different (a model that does draw from them), the batch cannot be rewound and no
  checkpoint is written for it (the run resumes from the previous one, and says so).

A model whose forward changes any other buffer would be rewound wrongly:
``tests/test_model_contract.py`` checks that no model's training batch does.
"""

from __future__ import annotations

import hashlib
import random

import numpy as np
import torch
from torch.nn.modules.batchnorm import _NormBase

from ssmbench.train import checkpoint as ckpt


def norm_statistics(model: torch.nn.Module) -> list[torch.Tensor]:
    """The buffers a training forward of `model` changes: the running mean, variance and
    batch count of each batch/instance norm that tracks running statistics."""
    return [
        buffer
        for module in model.modules()
        if isinstance(module, _NormBase) and module.track_running_stats
        for buffer in module.buffers(recurse=False)
    ]


def host_random_digest() -> str:
    """sha256 of Python's and NumPy's global random states."""
    digest = hashlib.sha256(repr(random.getstate()).encode())
    state = np.random.get_state(legacy=False)
    digest.update(np.ascontiguousarray(state["state"]["key"]).tobytes())
    digest.update(repr((state["state"]["pos"], state["has_gauss"], state["gauss"])).encode())
    return digest.hexdigest()


class BatchRewind:
    """The state a batch may change before its optimizer step, as it was at its start."""

    def __init__(self, model: torch.nn.Module):
        self.statistics = norm_statistics(model)
        self.epoch_digest = ""
        self.generators: dict = {}
        self.saved: list[torch.Tensor] = []

    def start_epoch(self) -> None:
        self.epoch_digest = host_random_digest()

    def start_batch(self) -> None:
        self.generators = {
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        }
        self.saved = [buffer.detach().clone() for buffer in self.statistics]

    def undo(self, shuffle: torch.Generator, shuffle_state: torch.Tensor) -> dict | None:
        """Put the norm statistics back as they were at the batch's start and return the
        random states of that moment (the checkpoint's ``rng``; the shuffling generator
        `shuffle` as it was at the epoch's start, `shuffle_state`); None when Python's or
        NumPy's generator moved during the epoch (the batch's start cannot be restored)."""
        with torch.no_grad():
            for buffer, saved in zip(self.statistics, self.saved, strict=True):
                buffer.copy_(saved)
        if host_random_digest() != self.epoch_digest:
            return None
        rng = ckpt.rng_state(shuffle)
        rng.update(self.generators, shuffle=shuffle_state)
        return rng
