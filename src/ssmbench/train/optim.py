"""The optimizer of a deep training run: params.yaml ``protocol.optimizer`` over parameter
groups, and its learning-rate schedule.

``param_groups: hints`` (the default): a layer may mark a parameter with ``p._optim =
{"weight_decay": 0.0, ...}`` (the S4D kernel's Λ, B, C and Δ do, as the reference S4 code
does): such a parameter goes into a group with those settings overriding the protocol's,
every other parameter into the default group with ``lr`` and ``weight_decay``. Groups
keep the model's parameter order, so with no hint in effect the update is the one a single
group makes.

``param_groups: tides`` (the TIDES reference's Physiome-ODE training,
``physiome_ode/tides_train_fn.py:_build_ssm_optimizer`` at 4b51adc): three groups, the SSM
core (a layer's ``CORE_PARAMETERS``: TIDES's static Re Λ, Im Λ, B, C) at ``lr`` without
weight decay; every other weight at ``lr · lr_factor`` with ``weight_decay``; biases and
log-steps at ``lr · lr_factor`` without.

``lr_schedule``: ``constant`` (the default) or ``cosine`` (``CosineAnnealingLR`` to 0 over
the epochs after ``warmup_epochs`` of ``LinearLR`` from 1/warmup, per epoch, as the same
reference file). The factor is a function of the epoch alone, so a resumed run continues
the schedule where it stopped.
"""

from __future__ import annotations

import math

import torch

#: protocol.param_groups: how the parameters are grouped (the module docstring)
PARAM_GROUPS = ("hints", "tides")
#: protocol.lr_schedule
LR_SCHEDULES = ("constant", "cosine")
#: the parameter names the TIDES grouping keeps out of weight decay (besides the core)
NO_DECAY_NAMES = ("bias", "log_step")

#: protocol.optimizer -> optimizer class (the schema's enum lists the same names)
OPTIMIZERS: dict[str, type[torch.optim.Optimizer]] = {
    "adam": torch.optim.Adam,
    "adamw": torch.optim.AdamW,
}


def parameter_groups(model: torch.nn.Module, lr: float, weight_decay: float) -> list[dict]:
    """The default group (``lr``, ``weight_decay``), then one group per distinct
    ``_optim`` hint, each with the hint's values over the defaults. Empty groups are left
    out."""
    defaults = {"lr": lr, "weight_decay": weight_decay}
    default: list[torch.nn.Parameter] = []
    hinted: dict[tuple, list[torch.nn.Parameter]] = {}
    for name, param in model.named_parameters():
        hint = getattr(param, "_optim", None)
        if hint is None:
            default.append(param)
            continue
        if not isinstance(hint, dict):
            raise TypeError(f"parameter {name}: _optim must be a dict, got {hint!r}")
        hinted.setdefault(tuple(sorted(hint.items())), []).append(param)
    groups = [{"params": default, **defaults}] if default else []
    for hint, params in hinted.items():
        groups.append({"params": params, **defaults, **dict(hint)})
    return groups


def tides_parameter_groups(
    model: torch.nn.Module, lr: float, weight_decay: float, lr_factor: float
) -> list[dict]:
    """The TIDES reference's three groups (module docstring), empty ones left out. A
    parameter with an ``_optim`` hint is an error: the two groupings do not combine."""
    core = {
        id(getattr(module, name))
        for module in model.modules()
        for name in getattr(module, "CORE_PARAMETERS", ())
        if isinstance(getattr(module, name, None), torch.nn.Parameter)
    }
    ssm, decayed, not_decayed = [], [], []
    for name, param in model.named_parameters():
        if getattr(param, "_optim", None) is not None:
            raise ValueError(
                f"parameter {name} has an _optim hint; param_groups: tides does not take "
                "hints (use param_groups: hints for this model)"
            )
        if id(param) in core:
            ssm.append(param)
        elif name.rsplit(".", 1)[-1] in NO_DECAY_NAMES:
            not_decayed.append(param)
        else:
            decayed.append(param)
    regular = lr * lr_factor
    groups = [
        {"params": ssm, "lr": lr, "weight_decay": 0.0},
        {"params": decayed, "lr": regular, "weight_decay": weight_decay},
        {"params": not_decayed, "lr": regular, "weight_decay": 0.0},
    ]
    return [g for g in groups if g["params"]]


def lr_factor_at(epoch: int, max_epochs: int, schedule: str, warmup_epochs: int = 0) -> float:
    """The learning-rate multiplier of 0-based ``epoch``: 1 (constant), or a linear warmup
    from 1 / warmup_epochs, then a cosine from 1 to 0 over ``max_epochs - warmup_epochs``."""
    if schedule not in LR_SCHEDULES:
        raise ValueError(f"lr_schedule {schedule!r} is not one of {LR_SCHEDULES}")
    if schedule == "constant":
        return 1.0
    warmup = int(warmup_epochs)
    if epoch < warmup:
        start = 1.0 / warmup
        return start + (1.0 - start) * epoch / warmup
    span = max(1, int(max_epochs) - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(epoch - warmup, span) / span))


def set_epoch_lr(optimizer: torch.optim.Optimizer, factor: float) -> None:
    """Each group's learning rate = its base rate (``build_optimizer``'s) · ``factor``."""
    for group in optimizer.param_groups:
        group["lr"] = group["base_lr"] * factor


def build_optimizer(model: torch.nn.Module, settings: dict) -> torch.optim.Optimizer:
    """``settings["optimizer"]`` over the groups ``param_groups`` names
    (``parameter_groups`` by hints, or ``tides_parameter_groups``); each group keeps its
    base rate as ``base_lr`` for the schedule. A hint key the optimizer does not take is an
    error naming the parameter group's key."""
    name = settings["optimizer"]
    if name not in OPTIMIZERS:
        raise ValueError(
            f"protocol.optimizer: unknown optimizer {name!r} (allowed: {', '.join(OPTIMIZERS)})"
        )
    cls = OPTIMIZERS[name]
    grouping = settings["param_groups"]
    if grouping not in PARAM_GROUPS:
        raise ValueError(f"param_groups {grouping!r} is not one of {PARAM_GROUPS}")
    weight_decay = settings["weight_decay"]
    if grouping == "tides":
        factor = float(settings["lr_factor"])
        groups = tides_parameter_groups(model, settings["lr"], weight_decay, factor)
    else:
        groups = parameter_groups(model, settings["lr"], weight_decay)
    optimizer = cls(groups, lr=settings["lr"])
    allowed = set(optimizer.defaults) | {"params"}
    for group in groups:
        unknown = sorted(set(group) - allowed)
        if unknown:
            raise ValueError(
                f"an _optim hint sets {unknown}, which {cls.__name__} does not take "
                f"(it takes: {', '.join(sorted(optimizer.defaults))})"
            )
    for group in optimizer.param_groups:
        group["base_lr"] = group["lr"]
    return optimizer
