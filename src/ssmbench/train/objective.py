"""What a run minimises and reports, by the dataset's task: the loss of a batch, the
summed loss and accuracy of an epoch, and the error a record states."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F


class Objective:
    """What a run minimises and reports, by the dataset's task.

    * classification: cross-entropy on logits (B, K); accuracy; error = 1 - accuracy.
    * regression: mean squared error over the *observed* targets (``target_mask.npy`` when
      the dataset has one, else all); error = that MSE. The model's output is mapped to
      the target's shape: y (N,) <- (B, 1); y (N, L) <- per step (B, L, 1); y (N, C', L)
      <- per step (B, L, C'), transposed; y (N, K') <- (B, K').
    """

    def __init__(self, meta: dict, y_shape: tuple[int, ...]):
        self.task = meta.get("task", "classification")
        L = int(meta["L"])
        self.per_step = False
        if self.task == "classification":
            self.n_outputs = int(meta["n_classes"])
        elif self.task == "regression":
            tail = tuple(y_shape[1:])
            if len(tail) == 0:
                self.n_outputs = 1
            elif len(tail) == 1 and tail[0] == L:
                self.n_outputs, self.per_step = 1, True
            elif len(tail) == 2 and tail[1] == L:
                self.n_outputs, self.per_step = tail[0], True
            elif len(tail) == 1:
                self.n_outputs = tail[0]
            else:
                raise ValueError(
                    f"regression targets of shape {y_shape} are not (N,), (N, K), (N, L) "
                    f"or (N, C, L) with L = {L}"
                )
        else:
            raise ValueError(f"task {self.task!r} is neither classification nor regression")
        self.target_dtype = np.int64 if self.task == "classification" else np.float32
        self.y_ndim = len(y_shape)

    def prediction(self, out: torch.Tensor) -> torch.Tensor:
        """The model output in the target's shape."""
        if self.task == "classification":
            return out  # logits (B, K)
        if self.per_step:
            return out[..., 0] if self.y_ndim == 2 else out.transpose(1, 2)
        return out[:, 0] if self.y_ndim == 1 else out

    def batch_sums(self, out, yb, mb) -> tuple[torch.Tensor, float, int]:
        """(loss of the batch to optimise, its summed loss, summed correct or count)."""
        pred = self.prediction(out)
        if self.task == "classification":
            loss = F.cross_entropy(pred, yb)
            return loss, loss.item() * len(yb), (pred.argmax(dim=1) == yb).sum().item()
        if mb is not None:
            # Unobserved targets may hold NaN: zero them *before* the difference, since a
            # NaN there would reach the gradient even through a masked-out square.
            zero = torch.zeros((), dtype=pred.dtype, device=pred.device)
            sq = torch.where(mb, pred - torch.where(mb, yb, zero), zero).square()
            n_obs = int(mb.sum().item())
        else:
            sq = (pred - yb).square()
            n_obs = sq.numel()
        loss = sq.sum() / max(1, n_obs)
        return loss, sq.sum().item(), n_obs

    def part_weight(self, yb_part, mb_part, yb, mb) -> float:
        """The share of a batch's loss that a part of its rows carries: `batch_sums`' loss
        of each part times this, summed over the parts, is the batch's loss (rows for
        classification; observed targets for regression)."""
        if self.task == "classification":
            return len(yb_part) / len(yb)
        if mb is None:
            return yb_part.numel() / yb.numel()
        return int(mb_part.sum().item()) / max(1, int(mb.sum().item()))

    def abs_error_sum(self, out, yb, mb) -> float:
        """The summed absolute error over the observed targets of a regression batch (the
        MAE's numerator; its count is `batch_sums`'s)."""
        pred = self.prediction(out)
        if mb is None:
            return (pred - yb).abs().sum().item()
        zero = torch.zeros((), dtype=pred.dtype, device=pred.device)
        return torch.where(mb, pred - torch.where(mb, yb, zero), zero).abs().sum().item()

    def summarise(self, loss_sum: float, second: float, n_rows: int) -> tuple[float, float]:
        """(mean loss, accuracy) for classification; (MSE, nan) for regression, where
        ``second`` counts the observed target values."""
        if self.task == "classification":
            return loss_sum / n_rows, second / n_rows
        return loss_sum / max(1.0, second), float("nan")

    def error(self, loss: float, accuracy: float) -> float:
        return 1.0 - accuracy if self.task == "classification" else loss
