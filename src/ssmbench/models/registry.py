"""The model registry's functions: check a params.yaml model entry, build it, and say
what kind of model it is. The family table itself is ``families.FAMILIES``."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import torch.nn as nn

from .families import FAMILIES
from .hyperparams import hyperparams_of


def is_estimator(model: Any) -> bool:
    """Whether a model (class or instance) is a non-deep estimator fit once per fold
    (QUANT, Hydra, ExtraTrees), not a torch module trained by epochs."""
    return getattr(model, "KIND", None) == "estimator"


#: What a model may take besides its values X (B, C, L): the physical step sizes Δ (B, L).
MODEL_INPUTS = ("values", "steps", "mask")


def model_inputs(model: Any) -> tuple[str, ...]:
    """The inputs a model (class or instance) declares (``INPUTS``): ``("values",)`` for
    every model that reads X alone; a time-aware family adds ``"steps"`` (called
    ``model(x, steps=Δ)``, Δ (B, L)), a model that reads which values were observed adds
    ``"mask"`` (``model(x, mask=M)``, M bool (B, C, L)). An instance may declare other
    inputs than its class (an option such as ``time_channel``)."""
    inputs = tuple(getattr(model, "INPUTS", ("values",)))
    unknown = [i for i in inputs if i not in MODEL_INPUTS]
    if unknown or "values" not in inputs:
        raise ValueError(
            f"{getattr(model, '__name__', type(model).__name__)}.INPUTS = {inputs!r}: each "
            f"input must be one of {MODEL_INPUTS}, and 'values' among them"
        )
    return inputs


def family_is_estimator(family: str) -> bool:
    """``is_estimator`` for a params.yaml family name."""
    return is_estimator(FAMILIES[family])


def family_group(family: str) -> str | None:
    """The MS4N paper's group of a params.yaml family (its class's ``GROUP``: SSM,
    Transformer, Hybrid, RNN, CNN, NonDL), None for a family it does not have or an
    unknown name."""
    return getattr(FAMILIES.get(family), "GROUP", None)


def table4_gaps(family: str) -> dict[tuple[str, str], str]:
    """Where a family says it does not reproduce the MS4N paper's Table 4, and why:
    ``{(key, domain or "*"): reason}`` from its class's ``TABLE4_GAPS`` (e.g. FCN's MMac)."""
    return dict(getattr(FAMILIES[family], "TABLE4_GAPS", {}))


def _check_value(name: str, key: str, value: Any, kind: type, minimum: int | None = 1) -> None:
    """Raises ValueError unless ``value`` is a valid ``kind`` (an int: at least ``minimum``,
    None for any)."""

    def bad(expected: str) -> ValueError:
        return ValueError(
            f"model {name!r}: hyperparameter {key!r} must be {expected}, got {value!r}"
        )

    if kind is bool:
        if not isinstance(value, bool):
            raise bad("a boolean")
        return
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad("an integer")
        if minimum is not None and value < minimum:
            raise bad("a positive integer" if minimum == 1 else f"an integer >= {minimum}")
        if key == "d_state" and value % 2:
            raise bad("an even integer (N/2 complex modes)")
        return
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise bad("a number")
        if key == "dropout" and not 0.0 <= value < 1.0:
            raise bad("in [0, 1)")
        if key == "max_features" and not 0.0 < value <= 1.0:
            raise bad("a fraction in (0, 1]")
        return
    if kind is str:
        if not isinstance(value, str):
            raise bad("a string")
        return
    raise AssertionError(f"unsupported hyperparameter type {kind}")  # pragma: no cover


def validate_model_params(name: str, model_params: Mapping[str, Any]) -> dict[str, Any]:
    """Checks a params.yaml model entry without building it.

    Returns the hyperparameters (without ``family``) as a new dict. Raises ``ValueError``
    naming the model for: a missing or unknown family, an unknown hyperparameter key
    (listing the allowed ones), a value of the wrong type or range (an integer must be
    positive unless its class's ``INT_MINIMUM`` gives another minimum, or None for any), or a
    string that is not one of its class's ``CHOICES``.
    """
    if not isinstance(model_params, Mapping):
        raise ValueError(f"model {name!r}: entry must be a mapping, got {model_params!r}")
    family = model_params.get("family")
    if family is None:
        raise ValueError(f"model {name!r}: missing 'family' (allowed families: {sorted(FAMILIES)})")
    if family not in FAMILIES:
        raise ValueError(
            f"model {name!r}: unknown family {family!r} (allowed families: {sorted(FAMILIES)})"
        )
    allowed = hyperparams_of(FAMILIES[family])  # the constructor's, as ``HYPERPARAMS``
    hyper = {k: v for k, v in model_params.items() if k != "family"}
    for key, value in hyper.items():
        if key not in allowed:
            raise ValueError(
                f"model {name!r} (family {family!r}): unknown hyperparameter {key!r}; "
                f"allowed: {sorted(allowed)}"
            )
        # an integer is positive unless the class's INT_MINIMUM says otherwise
        minimum = getattr(FAMILIES[family], "INT_MINIMUM", {}).get(key, 1)
        _check_value(name, key, value, allowed[key], minimum)
        choices = getattr(FAMILIES[family], "CHOICES", {}).get(key)
        if choices is not None and value not in choices:
            raise ValueError(
                f"model {name!r} (family {family!r}): hyperparameter {key!r} must be one of "
                f"{tuple(choices)}, got {value!r}"
            )
    return hyper


def build_model(
    name: str,
    n_channels: int,
    n_classes: int,
    length: int,
    model_params: Mapping[str, Any],
    per_step: bool = False,
) -> nn.Module:
    """Builds the model ``name`` described by its params.yaml entry ``model_params``.

    ``n_classes`` is the number of outputs (classes, or regression targets per row or per
    step). ``per_step=True`` asks for one output vector per time step, (B, L, K).
    """
    hyper = validate_model_params(name, model_params)
    cls = FAMILIES[model_params["family"]]
    if "dropout" in hyper:
        hyper["dropout"] = float(hyper["dropout"])
    if per_step:
        if not supports_per_step(model_params):
            raise ValueError(
                f"model {name!r} (family {model_params['family']!r}) has no per-step output, "
                f"which this dataset's per-step regression targets need"
            )
        hyper["per_step"] = True
    return cls(n_channels=n_channels, n_classes=n_classes, length=length, **hyper)


def constructor_defaults(model_params: Mapping[str, Any]) -> dict[str, tuple[Any, str]]:
    """{hyperparameter: (default, origin)} of the family's constructor hyperparameters that
    ``model_params`` leaves out: what `build_model` leaves to the constructor, so a run's
    every hyperparameter can be shown (``ssmbench explain``). The origin names the class:
    ``default (ssmbench.models.tides:TIDESClassifier)``."""
    cls = FAMILIES[model_params["family"]]
    origin = f"default ({cls.__module__}:{cls.__qualname__})"
    hyper = hyperparams_of(cls)
    return {
        key: (p.default, origin)
        for key, p in inspect.signature(cls).parameters.items()
        if key in hyper and key not in model_params and p.default is not inspect.Parameter.empty
    }


def length_problem(name: str, model_params: Mapping[str, Any], length: int) -> str | None:
    """Why the model ``name`` cannot be built for series of ``length`` steps (e.g. a
    log-signature window or a window count longer than the series), or None. Asked of a
    family that defines ``length_problem(hyper, length)`` (a classmethod; ``hyper`` the
    constructor's hyperparameters with their defaults), before any job runs."""
    cls = FAMILIES[model_params["family"]]
    check = getattr(cls, "length_problem", None)
    if check is None:
        return None
    hyper = {
        key: p.default
        for key, p in inspect.signature(cls.__init__).parameters.items()
        if p.default is not inspect.Parameter.empty
    }
    hyper.update(validate_model_params(name, model_params))
    return check(hyper, length)


def supports_per_step(model_params: Mapping[str, Any]) -> bool:
    """Whether the model's family can output one vector per time step."""
    return bool(getattr(FAMILIES[model_params["family"]], "SUPPORTS_PER_STEP", False))
