"""A source's settings: the keys of params.yaml ``benchmarks.<b>`` that a benchmark of that
source reads, declared in the source's folder (``<source>/params.schema.yaml``, its
`Source`'s ``settings_schema``), so that a source's settings come with its folder. The file
is a mapping of these keys:

* ``keys``: key -> its JSON Schema, with its ``default`` where it has one. ``ssmbench.
  params_file`` merges every source's into the params schema's ``benchmark_values``
  (defaults left out: they are each source's): a benchmark may set any source's key, as it
  may set any of the schema's own, and a key two sources declare must be declared alike.
  The defaults are the lowest place of a benchmark of the source's settings
  (``ssmbench.setting_defaults``), so its readers hold none of their own. A suite may set
  the keys for a benchmark of the source (``benchmark_overrides``).
* ``dataset_keys``: those of its keys a dataset may set for itself
  (``benchmarks.<b>.dataset_overrides.<dataset>``), over the benchmark's value.
* ``location_keys``: those of its keys that say where the dataset's files are read from
  (a local copy's folder), not what they are: a record is not held to them
  (``ssmbench.staleness.location_keys``), its data's digests are.
* ``readers``: the code that reads a key the code does not read as a run's
  ``settings["<key>"]`` (a nested key, a dotted path below ``benchmarks.<b>``:
  ``drop.seed``; or one a source takes without naming it), a reader being
  ``module:function`` or ``module``; ``ssmbench.config_readers`` lists them and
  tests/test_config.py holds them, and every key's reading, to the code.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field
from pathlib import Path

#: a settings file's keys
FILE_KEYS = ("keys", "dataset_keys", "location_keys", "readers")


@dataclass(frozen=True)
class SourceSettings:
    """One source's settings, as its ``params.schema.yaml`` declares them (the module
    docstring); empty for a source without one."""

    keys: dict[str, dict] = field(default_factory=dict)
    dataset_keys: tuple[str, ...] = ()
    location_keys: tuple[str, ...] = ()
    readers: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def defaults(self) -> dict:
        """The default of each of its keys that has one, as a new dict (a caller's edit of a
        value reaches no other caller)."""
        return {k: copy.deepcopy(v["default"]) for k, v in self.keys.items() if "default" in v}


@functools.cache
def read_source_settings(path: Path) -> SourceSettings:
    """The settings ``path`` declares, read once per process. A file that is not as the
    module docstring says raises ValueError naming it and what is wrong."""
    import yaml  # here: the Source type imports with the standard library alone

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    text = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)

    def bad(what: str) -> ValueError:
        return ValueError(f"{path}: {what}")

    if not isinstance(text, dict) or set(text) - set(FILE_KEYS):
        raise bad(f"expected a mapping with keys among {', '.join(FILE_KEYS)}")
    keys = text.get("keys") or {}
    if not isinstance(keys, dict) or not all(isinstance(v, dict) for v in keys.values()):
        raise bad("keys: expected a mapping of setting -> its JSON Schema (a mapping)")
    per_dataset = tuple(text.get("dataset_keys") or ())
    locations = tuple(text.get("location_keys") or ())
    for field_name, listed in (("dataset_keys", per_dataset), ("location_keys", locations)):
        if set(listed) - set(keys):
            raise bad(f"{field_name}: {sorted(set(listed) - set(keys))} not among its keys")
    readers = {
        str(key): tuple(found) if isinstance(found, list) else found
        for key, found in (text.get("readers") or {}).items()
    }
    for key, found in readers.items():
        if key.split(".")[0] not in keys:
            raise bad(f"readers: {key!r} is below none of its keys")
        if not isinstance(found, tuple) or not found or not all(isinstance(r, str) for r in found):
            raise bad(f"readers: {key}: expected a list of readers (module or module:function)")
    return SourceSettings(
        keys=keys, dataset_keys=per_dataset, location_keys=locations, readers=readers
    )
