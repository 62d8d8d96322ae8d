"""The hyperparameters a model family accepts, read from its constructor's signature.

A family's constructor is ``(n_channels, n_classes, length, [per_step,] **hyperparameters)``;
every other parameter is a hyperparameter that params.yaml may set, typed by its annotation
(``int``, ``float``, ``bool`` or ``str``; ``int | None`` means an ``int`` whose default is
"derived"; a ``str`` takes one of the values the class lists in ``CHOICES``).
The registry checks params.yaml entries against this, so a hyperparameter is declared once:
in the constructor.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing

__all__ = ["CONTRACT_ARGS", "HYPERPARAMETER_TYPES", "ConstructorHyperparams", "hyperparams_of"]

#: constructor arguments the registry fills in itself (not params.yaml hyperparameters)
CONTRACT_ARGS = ("n_channels", "n_classes", "length", "per_step")
#: the types a params.yaml hyperparameter can have (``registry._check_value`` checks each)
HYPERPARAMETER_TYPES = (int, float, bool, str)


def _value_type(cls: type, name: str, annotation) -> type:
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        kinds = [a for a in typing.get_args(annotation) if a is not type(None)]
        annotation = kinds[0] if len(kinds) == 1 else annotation
    if annotation not in HYPERPARAMETER_TYPES:
        raise TypeError(
            f"{cls.__qualname__}: hyperparameter {name!r} must be annotated as one of "
            f"int, float, bool, str (optionally '| None'), got {annotation!r}"
        )
    return annotation


@functools.cache
def hyperparams_of(cls: type) -> dict[str, type]:
    """``{name: type}`` of the hyperparameters ``cls(...)`` accepts: its constructor's
    parameters other than ``CONTRACT_ARGS``, typed by their annotations."""
    signature = inspect.signature(cls, eval_str=True)
    hyper = {}
    for name, parameter in signature.parameters.items():
        if name in CONTRACT_ARGS or parameter.kind in (
            parameter.VAR_POSITIONAL,
            parameter.VAR_KEYWORD,
        ):
            continue
        hyper[name] = _value_type(cls, name, parameter.annotation)
    return hyper


class ConstructorHyperparams:
    """Class attribute ``HYPERPARAMS``: ``hyperparams_of`` the class it is read from (so a
    subclass with its own constructor gets its own)."""

    def __get__(self, instance, owner: type) -> dict[str, type]:
        return dict(hyperparams_of(owner))
