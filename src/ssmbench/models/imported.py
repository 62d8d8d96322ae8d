"""Model families named by import path: a params.yaml entry's ``family: package.module:Class``.

A researcher's own model lives in their own module, importable from their environment
(on ``PYTHONPATH``, or an installed package); ssmbench imports it where it is named and
never copies it into the package. Such a class meets the contract of a built-in family:

* a ``torch.nn.Module`` whose constructor is ``(n_channels, n_classes, length, **hyper)``
  (``per_step`` as well if it sets ``SUPPORTS_PER_STEP``), its hyperparameters annotated
  ``int``, ``float``, ``bool`` or ``str`` (``hyperparams.py``), mapping float32 (B, C, L)
  to logits (B, K); or
* a non-deep estimator: a subclass of ``ssmbench.models.estimators.Estimator`` (fit once
  per fold, ``fit``/``predict_proba``).

Optional class attributes are read as for a built-in: ``INPUTS``, ``SUPPORTS_PER_STEP``,
``GROUP``, ``CHOICES``, ``INT_MINIMUM``, ``TEST_PARAMS``. ``ssmbench check-model
package.module:Class`` runs the model contract on it (``ssmbench.model_contract``); the
training-code digest covers its own source files (``ssmbench.staleness``).
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: ``package.module:Class`` (a dotted module path, a colon, a class name)
IMPORT_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*$")
#: the constructor arguments the registry fills in itself
CONTRACT_ARGS = ("n_channels", "n_classes", "length")


class FamilyImportError(LookupError):
    """A ``family`` import path that does not give a model class; the message says why
    and what to change."""


def is_import_path(family: Any) -> bool:
    """Whether a params.yaml ``family`` names a class by import path (``a.b:C``)."""
    return isinstance(family, str) and IMPORT_PATH.match(family) is not None


def import_family(family: str) -> type:
    """The class ``family`` (``package.module:Class``) names, checked to be a model class
    (module docstring). Raises FamilyImportError naming what is wrong and what to do."""
    if not is_import_path(family):
        raise FamilyImportError(
            f"family {family!r} is not an import path; write it as package.module:Class"
        )
    module_name, _, class_name = family.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any failure of the user's module is reported
        hint = (
            "put its folder on PYTHONPATH or install its package in this environment"
            if isinstance(exc, ModuleNotFoundError)
            and exc.name
            and module_name.startswith(exc.name)  # fmt: skip
            else "fix the module so that it imports"
        )
        raise FamilyImportError(
            f"family {family!r}: module {module_name!r} does not import "
            f"({type(exc).__name__}: {exc}); {hint}"
        ) from None
    cls = getattr(module, class_name, None)
    if cls is None:
        public = sorted(n for n, v in vars(module).items() if inspect.isclass(v)
                        and v.__module__ == module.__name__)  # fmt: skip
        raise FamilyImportError(
            f"family {family!r}: module {module_name!r} has no attribute {class_name!r} "
            f"(its classes: {', '.join(public) or 'none'})"
        )
    problem = class_problem(cls)
    if problem:
        raise FamilyImportError(f"family {family!r}: {problem}")
    return cls


def class_problem(cls: Any) -> str | None:
    """Why ``cls`` cannot be a model family (not a class; neither an ``nn.Module`` nor an
    ``Estimator`` subclass; a constructor without ``n_channels, n_classes, length``), or
    None."""
    import torch.nn as nn

    from .estimators import Estimator

    if not inspect.isclass(cls):
        return f"{cls!r} is not a class"
    if not issubclass(cls, nn.Module | Estimator):
        return (
            f"{cls.__qualname__} is neither a torch.nn.Module nor a subclass of "
            "ssmbench.models.estimators.Estimator (a model maps (B, C, L) to logits (B, K); "
            "an estimator fits once per fold)"
        )
    try:
        parameters = inspect.signature(cls).parameters
    except (TypeError, ValueError) as exc:
        return f"{cls.__qualname__}: its constructor's signature cannot be read ({exc})"
    takes_any = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
    missing = [a for a in CONTRACT_ARGS if a not in parameters and not takes_any]
    if missing:
        return (
            f"{cls.__qualname__}.__init__ lacks {', '.join(missing)}: a family's constructor "
            "is (n_channels, n_classes, length, **hyperparameters)"
        )
    return None


def required_hyperparams(cls: type) -> list[str]:
    """The constructor's hyperparameters without a default (the contract's own
    arguments aside): a params entry must give each."""
    parameters = inspect.signature(cls).parameters.values()
    return [
        p.name
        for p in parameters
        if p.default is p.empty
        and p.name not in (*CONTRACT_ARGS, "per_step")
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def entry_problems(name: str, entry: Mapping[str, Any]) -> list[str]:
    """What of a params.yaml model entry an imported family cannot take, before any job:
    the import (FamilyImportError's message) and constructor arguments without a default
    that the entry does not give. Empty for a built-in family."""
    family = entry.get("family") if isinstance(entry, Mapping) else None
    if not is_import_path(family):
        return []
    try:
        cls = import_family(family)
    except FamilyImportError as exc:
        return [str(exc)]
    missing = [k for k in required_hyperparams(cls) if k not in entry]
    if missing:
        return [
            f"family {family!r}: the constructor of {cls.__qualname__} has no default for "
            f"{', '.join(missing)}; give {'it' if len(missing) == 1 else 'them'} in the "
            f"entry of {name!r}"
        ]
    return []


def source_file(cls: type) -> Path:
    """The file that defines ``cls``."""
    return Path(sys.modules[cls.__module__].__file__).resolve()
