"""The optimizer of a deep training run: params.yaml ``protocol.optimizer`` over parameter
groups built from the layers' ``_optim`` hints.

A layer may mark a parameter with ``p._optim = {"weight_decay": 0.0, ...}`` (the S4D
kernel's Λ, B, C and Δ do, as the reference S4 code does): such a parameter goes into a
group with those settings overriding the protocol's, every other parameter into the
default group with ``protocol.lr`` and ``protocol.weight_decay``. Groups keep the model's
parameter order, so with no hint in effect the update is the one a single group makes.
"""

from __future__ import annotations

import torch

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


def build_optimizer(model: torch.nn.Module, settings: dict) -> torch.optim.Optimizer:
    """``settings["optimizer"]`` (adam when absent) over `parameter_groups`. A hint key the
    optimizer does not take is an error naming the parameter group's key."""
    name = settings.get("optimizer", "adam")
    if name not in OPTIMIZERS:
        raise ValueError(
            f"protocol.optimizer: unknown optimizer {name!r} (allowed: {', '.join(OPTIMIZERS)})"
        )
    cls = OPTIMIZERS[name]
    groups = parameter_groups(model, settings["lr"], settings.get("weight_decay", 0.0))
    optimizer = cls(groups, lr=settings["lr"])
    allowed = set(optimizer.defaults) | {"params"}
    for group in groups:
        unknown = sorted(set(group) - allowed)
        if unknown:
            raise ValueError(
                f"an _optim hint sets {unknown}, which {cls.__name__} does not take "
                f"(it takes: {', '.join(sorted(optimizer.defaults))})"
            )
    return optimizer
