"""Every setting's default, in one table: the ``default`` of each setting in the JSON
Schema (``params.schema.yaml``), the lowest place of the precedence (`ssmbench.precedence`).

The schema's ``$defs`` hold each training and data setting's type, range and default:

* ``protocol_values``: what every run reads (optimizer, lr, the validation split, the stop
  rule, checkpointing, ``reading`` key by key...);
* ``batch_and_epoch_values``: the epochs and batch every benchmark takes.

Each data source's own settings (``archive_dir``, ``revision``...), for a benchmark of that
source, are declared with their defaults in the source's folder
(``ssmbench.data.source_settings``: ``data/<source>/params.schema.yaml``).

`setting_defaults` gives them as one place of settings; a run's resolved settings start
from it, so every reader takes ``settings[key]`` and holds no default of its own, and
``ssmbench explain`` shows a value no place sets with `DEFAULT_ORIGIN`. The key lists the
precedence and the checks take (`protocol_keys`, `batch_and_epoch_keys`) come from the
same table: a new setting is its schema entry (type, range, default) and its reader.

The schema and the sources' settings are read when a default is first asked for (yaml and
the source table imported then): a command that runs on the standard library alone
imports this module and reads neither.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from types import MappingProxyType

__all__ = [
    "DEFAULT_ORIGIN",
    "SCHEMA_PATH",
    "batch_and_epoch_keys",
    "defaults_view",
    "protocol_keys",
    "setting_defaults",
    "source_defaults",
]

SCHEMA_PATH = Path(__file__).with_name("params.schema.yaml")
#: the origin of a value that no place sets (``ssmbench explain``, a record's ``origins``)
DEFAULT_ORIGIN = "default (params.schema.yaml)"


@functools.cache
def _defs() -> MappingProxyType:
    # imported here: a command that runs on the standard library alone (`ssmbench offline
    # unpack`) imports this module and reads no schema
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return MappingProxyType(yaml.load(SCHEMA_PATH.read_text(), Loader=loader)["$defs"])


def _properties(name: str) -> dict:
    return _defs()[name]["properties"]


def _source_properties(source: str | None) -> dict:
    """The settings ``source`` declares, each with its default where it has one ({} for no
    source, or one the table lacks)."""
    from ssmbench.data.source_registry import SOURCES

    found = SOURCES.get(source) if source is not None else None
    return {} if found is None else found.settings.keys


def _default(node: dict) -> tuple[bool, object]:
    """(whether the setting has a default, the default): its ``default``, or for an object
    whose every key has one (``reading``), the dict of those."""
    if "default" in node:
        return True, node["default"]
    keys = node.get("properties") or {}
    if keys and all("default" in sub for sub in keys.values()):
        return True, {key: sub["default"] for key, sub in keys.items()}
    return False, None


@functools.cache
def defaults_view(source: str | None = None) -> MappingProxyType:
    """`setting_defaults` as one read-only mapping per source, read once (its dict values are
    shared: a caller copies what it keeps, as the precedence's places are copied)."""
    values = {}
    for properties in (
        _properties("protocol_values"),
        _properties("batch_and_epoch_values"),
        _source_properties(source),
    ):
        for key, node in properties.items():
            has, value = _default(node)
            if has:
                values[key] = value
    return MappingProxyType(values)


def setting_defaults(source: str | None = None) -> dict:
    """The default of every setting that has one, for a run of a benchmark of ``source``
    (its source's own besides the protocol's and the batch and epochs'), as a new dict."""
    return copy.deepcopy(dict(defaults_view(source)))


def source_defaults(source: str | None) -> dict:
    """The defaults of ``source``'s own settings alone (its folder's), as a new dict: what a
    data step of a benchmark of ``source`` reads besides its entry."""
    return {
        key: copy.deepcopy(value)
        for key, node in _source_properties(source).items()
        for has, value in [_default(node)]
        if has
    }


@functools.cache
def protocol_keys() -> frozenset[str]:
    """The protocol's settings (``protocol_values``): what every run reads, and what a
    suite's ``overrides`` may set for every benchmark."""
    return frozenset(_properties("protocol_values"))


@functools.cache
def batch_and_epoch_keys() -> frozenset[str]:
    """The settings every benchmark can take (``batch_and_epoch_values``)."""
    return frozenset(_properties("batch_and_epoch_values"))
