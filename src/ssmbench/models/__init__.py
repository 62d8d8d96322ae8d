"""Model registry: params.yaml model entries -> ``torch.nn.Module``.

A params.yaml ``models:`` entry is a dict with ``family`` plus hyperparameters, e.g.
``{"family": "ms4", "d_model": 64, "d_state": 64, "n_layers": 1, "layer_norm": True,
"dropout": 0.0}``. Hyperparameters left out take the model class defaults.
Every built model maps float32 (B, C, L) to logits (B, K); families with
``SUPPORTS_PER_STEP`` can also be built with ``per_step=True`` to map it to (B, L, K), one
output vector per step (regression targets per step: the TIDES tasks).
"""

from __future__ import annotations

from .families import FAMILIES
from .ms4 import MS4Classifier, S4DClassifier
from .registry import (
    _check_value,
    build_model,
    constructor_defaults,
    family_group,
    family_is_estimator,
    is_estimator,
    model_inputs,
    supports_per_step,
    table4_gaps,
    validate_model_params,
)
from .s4d import S4DKernel, S4DLayer

__all__ = [
    "FAMILIES",
    "MS4Classifier",
    "S4DClassifier",
    "S4DKernel",
    "S4DLayer",
    "_check_value",
    "build_model",
    "constructor_defaults",
    "family_group",
    "family_is_estimator",
    "is_estimator",
    "model_inputs",
    "supports_per_step",
    "table4_gaps",
    "validate_model_params",
]
