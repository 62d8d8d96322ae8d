"""One training batch's forward and backward in parts of a few rows (``micro_batch_rows``).

The gradient is the whole batch's: each part's loss is weighted by its share of the batch's
loss (rows for classification, observed targets for regression; `Objective.part_weight`)
and the parts' gradients add up in ``.grad`` before the one optimiser step. Only the
summation order differs, so parameters move the same within float rounding
(tests/test_micro_batches.py); S4D kernels are computed once per batch, not per part
(``s4d.kernels_once_per_batch``). What changes is the size of every activation: on CPU, a
part whose activations stay under glibc's mmap threshold (32 MiB at most) reuses freed
heap memory, where a whole batch's tensors are fresh mappings whose pages the kernel
zero-fills on every allocation. MS4N at B = 64, L = 10,000 trains a step 2.8x faster in
parts of 2 rows than whole, with an eighth of the peak memory (benchmarks/bench_kernel.py,
docs/benchmarks.md). On a GPU the caching allocator has no such cost and small
parts use the device less well (MS4N's step on an H200 in parts: 2.7x slower than whole at
L = 1,000, 9.2x at 10,000), so the setting is a CPU one: a run on any other device
trains each batch whole and says so (``effective_micro_batch_rows``: a warning in the log,
the record's ``micro_batches``). That changes no result: the gradient is the same within
float rounding either way (only dropout's masks are drawn per part, from the same
distribution).

Refused for models with batch statistics (BatchNorm in training mode normalises over the
rows it sees, so parts would change the model), and with dropout the masks are drawn per
part: the same distribution, other draws than the whole batch's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import torch
import torch.nn as nn

from ssmbench.config import ConfigError
from ssmbench.models.s4d import kernels_once_per_batch
from ssmbench.train.evaluation import forward_batch


def check_micro_batching(model: nn.Module, rows: int | None, where: str) -> None:
    """Raise ConfigError when ``rows`` (the ``micro_batch_rows`` setting, None: off) cannot
    be used with ``model``; ``where`` names the run for the message."""
    if rows is None:
        return
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise ConfigError(f"{where}: micro_batch_rows must be null or an integer >= 1: {rows!r}")
    norms = sorted({type(m).__name__ for m in model.modules()
                    if isinstance(m, nn.modules.batchnorm._BatchNorm)})  # fmt: skip
    if norms:
        raise ConfigError(
            f"{where}: micro_batch_rows = {rows} would change the model: it normalises with "
            f"batch statistics ({', '.join(norms)}), which parts of a batch would not share. "
            "Set micro_batch_rows: null for this benchmark (or suite) in params.yaml."
        )


def effective_micro_batch_rows(
    rows: int | None, device: torch.device | str
) -> tuple[int | None, str | None]:
    """The rows per part a run on ``device`` uses for the ``micro_batch_rows`` setting
    ``rows`` (None: the whole batch), and why it does not use ``rows`` (None when it does).

    Parts are a CPU setting (module docstring): applied on the CPU, and on any other device
    the whole batch, with the reason to log and record."""
    device = torch.device(device)
    if rows is None or device.type == "cpu":
        return rows, None
    return None, (
        f"micro_batch_rows = {rows} is not applied on {device.type}: parts of a batch help "
        "the CPU's heap only and slow a GPU down, so each batch is one forward/backward "
        "there (the same gradient within float rounding: the same results)"
    )


def micro_batches_record(asked: int | None, reason: str | None) -> dict | None:
    """The record's ``micro_batches``: None when ``micro_batch_rows`` is null; else the rows
    asked, whether the run used them, and ``effective_micro_batch_rows``' reason if not."""
    if asked is None:
        return None
    return {"rows": asked, "applied": reason is None, "reason": reason}


def backward_batch(
    model: nn.Module,
    objective,
    xb: torch.Tensor,
    yb: torch.Tensor,
    mb: torch.Tensor | None,
    extra: dict[str, torch.Tensor],
    rows: int | None,
    check: Callable[[float, torch.Tensor], None],
) -> tuple[float, float]:
    """Forward and backward of one training batch, whole (``rows`` None) or in parts of
    ``rows`` rows; the model's ``regulariser()`` (if any) is added once. ``check(loss,
    inputs)`` sees each part's mean loss before its backward (a NaN must not reach the
    gradient). Returns the batch's summed loss and its second figure (`batch_sums`)."""
    penalty = getattr(model, "regulariser", None)  # e.g. Log-NCDE's Lip(2)
    n = len(yb)
    rows = n if rows is None else rows
    # S4D kernels: computed once for all the parts, their gradients summed, then one backward
    with kernels_once_per_batch(model) if rows < n else contextlib.nullcontext():
        return _parts(model, objective, xb, yb, mb, extra, rows, check, penalty)


def _parts(model, objective, xb, yb, mb, extra, rows, check, penalty) -> tuple[float, float]:
    n = len(yb)
    loss_sum, second = 0.0, 0.0
    for start in range(0, n, rows):
        part = slice(start, min(start + rows, n))
        x_part, y_part = xb[part], yb[part]
        m_part = mb[part] if mb is not None else None
        out = forward_batch(model, x_part, {k: v[part] for k, v in extra.items()})
        loss, part_loss, part_second = objective.batch_sums(out, y_part, m_part)
        check(float(loss.detach()), x_part)  # the part's mean loss
        if rows < n:
            loss = loss * objective.part_weight(y_part, m_part, yb, mb)
        if start == 0 and callable(penalty):
            loss = loss + penalty()
        loss.backward()
        loss_sum += part_loss
        second += part_second
    return loss_sum, second
