"""Scoring a model on rows of a prepared dataset: the batches with the extra inputs the
model takes, the loss and accuracy (or MSE) over a set of rows, and the test fold's and
each separate test set's results as a run record holds them. ``train.protocol`` trains
with these; they read nothing from disk but the dataset's memory maps.
"""

from __future__ import annotations

import math

import torch

from ssmbench.train.batch_order import iterate_batches
from ssmbench.train.checks import check_loss


def batches_of(objective, X, y, mask, indices, batch_size, generator=None, inputs=None):
    """iterate_batches as (x, y, target-mask-or-None, {extra inputs}), with the task's
    target dtype; ``inputs``: the extra inputs a model takes beyond the values ({} none:
    e.g. ``steps``, the rows' physical step sizes), by name."""
    for batch in iterate_batches(
        X, y, indices, batch_size, generator,
        target_dtype=objective.target_dtype, target_mask=mask, inputs=inputs or None,
    ):  # fmt: skip
        xb, yb, *rest = batch
        mb = rest.pop(0) if mask is not None else None
        extra = rest.pop(0) if inputs else {}
        yield xb, yb, mb, extra


def forward_batch(model, xb, extra):
    """The model on a batch, given the extra inputs it takes by name (``model(x,
    steps=Δ, mask=M)``; none: ``model(x)``)."""
    return model(xb, **extra)


@torch.no_grad()
def evaluate(
    model,
    objective,
    X,
    y,
    mask,
    indices,
    batch_size,
    device,
    stage: str = "evaluation",
    inputs=None,
    with_mae: bool = False,
) -> tuple[float, ...]:
    """(mean loss, accuracy) or (MSE, nan) over `indices`, in eval mode; ``with_mae``
    (regression): (MSE, nan, MAE), both pooled over the observed targets. A non-finite
    batch loss raises `DivergedError` naming `stage` and the batch. ``inputs``: the extra
    inputs a model takes (``batches_of``)."""
    model.eval()
    loss_sum, second, n_rows, abs_sum = 0.0, 0.0, 0, 0.0
    with_mae = with_mae and objective.task == "regression"
    n_batches = math.ceil(len(indices) / batch_size)
    batches = batches_of(objective, X, y, mask, indices, batch_size, inputs=inputs)
    for batch, (xb, yb, mb, extra) in enumerate(batches):
        xb, yb = xb.to(device), yb.to(device)
        mb = mb.to(device) if mb is not None else None
        extra = {k: v.to(device) for k, v in extra.items()}
        out = forward_batch(model, xb, extra)
        _, batch_loss, batch_second = objective.batch_sums(out, yb, mb)
        check_loss(batch_loss, stage, batch, n_batches, xb, model)
        loss_sum += batch_loss
        second += batch_second
        n_rows += len(yb)
        if with_mae:
            abs_sum += objective.abs_error_sum(out, yb, mb)
    summary = objective.summarise(loss_sum, second, n_rows)
    return (*summary, abs_sum / max(1.0, second)) if with_mae else summary


def score_test_sets(objective, score, test_idx, test_sets, log, target_var=None) -> dict:
    """The test fold's loss and error, and each separate test set's (fixed_test_sets:
    one per Δ or drop rate). ``score(rows) -> (loss, accuracy)`` or, for regression,
    ``(MSE, nan, MAE)``; ``target_var(rows)`` (regression): the variance of the set's
    observed targets, so that a report can give the relative error √(MSE / Var y)."""
    test_loss, test_acc, *test_mae = score(test_idx)
    per_test_set = {}
    for key, rows in test_sets.items():
        set_loss, set_acc, *set_mae = score(rows)
        per_test_set[key] = {
            "n": int(len(rows)),
            "loss": set_loss,
            "error": objective.error(set_loss, set_acc),
            **({"accuracy": set_acc} if objective.task == "classification" else {}),
            **({"mae": set_mae[0]} if set_mae else {}),
            **({"target_var": target_var(rows)} if target_var is not None else {}),
        }
        log(f"test set {key}: loss={set_loss:.4f} error={per_test_set[key]['error']:.4f}")
    return {
        # classification: error = 1 - accuracy; regression: error = the test MSE
        "error_metric": "error" if objective.task == "classification" else "mse",
        "test_accuracy": test_acc if objective.task == "classification" else None,
        "test_error": objective.error(test_loss, test_acc),
        "test_loss": test_loss,
        # regression: the mean absolute error over the observed test targets
        "test_mae": test_mae[0] if test_mae else None,
        "test_sets": per_test_set,
    }
