"""Where a run's settings come from: one order, one resolver.

A run (benchmark B, dataset D, model M, in suite S) takes its **training settings** from
these places, lowest first; a later place wins, and a dict setting (``reading``,
``generator``, ``drop``) is merged key by key, so each place names only what it changes:

====  ============================================  ====================================
 #    place                                         what it is for
====  ============================================  ====================================
 0    ``default (params.schema.yaml)``              every setting's default: the
                                                    schema's ``default``s, the source's
                                                    own for B's source
                                                    (`ssmbench.setting_defaults`)
 1    ``protocol``                                  what every run shares
 2    ``benchmarks.B``                              the benchmark's protocol (epochs,
                                                    batch, split, its generator)
 3    ``benchmarks.B.dataset_overrides.D``          one dataset's needs (MONSTER's
                                                    AudioMNIST batch 64)
 4    ``models.M.dataset_settings.D``               a study's settings of a model on a
                                                    dataset (Log-NCDE's lr per UEA set)
 5    ``suites.S.overrides``                        the suite, for every run it holds
                                                    (archive_dir, max_epochs of a
                                                    preview); a key only where it is a
                                                    protocol key or the benchmark has it
 6    ``suites.S.benchmark_overrides.B``            the suite, on one benchmark
 7    ``suites.S.model_overrides.M``                the suite, on one model (the drop
                                                    ablation's weight decay)
 8    the tuned file (``paths.tuned``)              the values a search chose
 9    ``command_line``                              the command line, for one invocation:
                                                    ``ssmbench --set KEY=VALUE``,
                                                    ``snakemake --config KEY=VALUE``
10    ``command_options``                           a command's own option, for one
                                                    invocation (``ssmbench train
                                                    --max-epochs``): origin
                                                    ``command line option --max-epochs``
====  ============================================  ====================================

No reader holds a default of its own: every setting the code reads has its default at
place 0, so a run's settings hold every value it reads.

Its **model hyperparameters**: ``models.M`` (less ``dataset_settings`` and
``dataset_params``), then ``models.M.dataset_params.D`` (the Log-NCDE benchmark's S5 per
UEA set), then the tuned file; a hyperparameter none of them sets is the default of the
family's constructor (`ssmbench.models.constructor_defaults`, which ``explain`` shows).

`resolve` walks these places and keeps, for every value, the place it came from
(`Resolved.settings_origin`, `Resolved.params_origin`; a dict setting per key, as
``reading.block_mb``): ``ssmbench explain`` prints them, as ``git config --show-origin``
does, and a run record stores them (``settings_origin``), so a record answers "why did this
run use lr 1e-4?". The suite has the last word over params.yaml, a search over the suite,
and the command line over all (``command_line``: what `command_line_settings` reads off
``--set`` / ``--config``; ``command_options``: what a command's own options set; neither
written in params.yaml).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field

from ssmbench.setting_defaults import (
    DEFAULT_ORIGIN,
    batch_and_epoch_keys,
    defaults_view,
    protocol_keys,
)
from ssmbench.staleness import EXECUTION_KEYS

#: Keys a suite's ``overrides`` may set for every benchmark: the protocol's (the schema's
#: ``protocol_values``, execution keys among them)
PROTOCOL_KEYS = set(protocol_keys())

#: training settings every benchmark can take, a benchmark may leave them to their
#: defaults (the schema's ``batch_and_epoch_values``)
BATCH_AND_EPOCH_KEYS = set(batch_and_epoch_keys())
#: what a search space or a search's ``settings`` may set besides model hyperparameters
#: (never ``epoch_test_scores``: a tuning trial has no test rows to score)
TRAINING_KEYS = (PROTOCOL_KEYS | BATCH_AND_EPOCH_KEYS) - set(EXECUTION_KEYS) - {"epoch_test_scores"}

#: what the command line may set (``command_line``): a training setting, or how a run
#: checkpoints
COMMAND_LINE_KEYS = TRAINING_KEYS | set(EXECUTION_KEYS)
#: the origin of a value set on the command line
COMMAND_LINE = "command line"
#: params' key of the settings a command's own options give (``train --max-epochs``)
COMMAND_OPTIONS = "command_options"
#: Keys of a benchmark's entry that are not settings: its dataset list and per-dataset places.
_BENCHMARK_NOT_SETTINGS = ("datasets", "dataset_overrides")
#: Keys of a model's entry that are not hyperparameters: its per-dataset places, and the
#: model a variant derives from.
_MODEL_NOT_PARAMS = ("dataset_settings", "dataset_params", "base")


@dataclass(frozen=True)
class Tuned:
    """A tuned file's values, as a last place: its path (the origin) and what it sets."""

    file: str
    model_params: Mapping = field(default_factory=dict)
    training_settings: Mapping = field(default_factory=dict)


@dataclass
class Resolved:
    """A run's settings and hyperparameters, each value with the place it came from."""

    settings: dict
    settings_origin: dict[str, str]
    model_params: dict
    params_origin: dict[str, str]


def _get(mapping, *keys) -> dict:
    for key in keys:
        mapping = (mapping or {}).get(key) if isinstance(mapping, Mapping) else None
    return mapping or {}


def _apply(values: dict, origins: dict, place: Mapping, origin: str) -> None:
    """``values`` updated with ``place`` (a dict value merged key by key into a dict
    already there), and ``origins`` with where each value now comes from: ``key``, or
    ``key.sub`` for each key of a dict value."""
    for key, value in place.items():
        if isinstance(value, dict | list):  # a place's own containers are never shared
            value = copy.deepcopy(value)
        merged = isinstance(value, dict) and isinstance(values.get(key), dict)
        if not merged or value:  # (a dict set whole by a lower place: {} as a default)
            origins.pop(key, None)
        if not merged and isinstance(values.get(key), dict):  # its keys' origins go too
            for name in [k for k in origins if k.startswith(f"{key}.")]:
                del origins[name]
        values[key] = {**values[key], **value} if merged else value
        if isinstance(value, dict) and value:
            origins.update({f"{key}.{sub}": origin for sub in value})
        else:
            origins[key] = origin


def merge_into(values: dict, place: Mapping) -> None:
    """``values`` updated with ``place`` by the rule of every place (`_apply`)."""
    _apply(values, {}, place, "")


def settings_places(
    params: dict, benchmark: str, dataset: str | None, model: str | None, suite: str
) -> list[tuple[str, Mapping]]:
    """The places of the module's table that a run has, in order: (the params.yaml key, or
    `DEFAULT_ORIGIN` for the defaults, what it sets). Without ``dataset``/``model``: the
    places of every run of the benchmark (what the split rule and the data stages read)."""
    bench = params["benchmarks"][benchmark]
    suite_entry = params["suites"][suite]
    places = [
        (DEFAULT_ORIGIN, defaults_view(bench.get("source"))),
        ("protocol", params["protocol"]),
        (f"benchmarks.{benchmark}",
         {k: v for k, v in bench.items() if k not in _BENCHMARK_NOT_SETTINGS}),
    ]  # fmt: skip
    if dataset is not None:
        places.append(
            (f"benchmarks.{benchmark}.dataset_overrides.{dataset}",
             _get(bench, "dataset_overrides", dataset))
        )  # fmt: skip
    # the suite's overrides reach the benchmarks that have the setting; protocol keys, all
    applies = PROTOCOL_KEYS | BATCH_AND_EPOCH_KEYS | {k for _, place in places for k in place}
    if model is not None and dataset is not None:
        places.append(
            (f"models.{model}.dataset_settings.{dataset}",
             _get(params["models"][model], "dataset_settings", dataset))
        )  # fmt: skip
    overrides = _get(suite_entry, "overrides")
    places += [
        (f"suites.{suite}.overrides", {k: v for k, v in overrides.items() if k in applies}),
        (f"suites.{suite}.benchmark_overrides.{benchmark}",
         _get(suite_entry, "benchmark_overrides", benchmark)),
    ]  # fmt: skip
    if model is not None:
        places.append(
            (f"suites.{suite}.model_overrides.{model}", _get(suite_entry, "model_overrides", model))
        )
    return [(origin, place) for origin, place in places if place]


def command_line_settings(pairs: list[str]) -> dict:
    """``KEY=VALUE`` pairs (``ssmbench --set``) as settings, each value read as YAML
    (``5``, ``1e-4``, ``true``, ``null``, text). Raises ValueError naming a pair that is
    not ``KEY=VALUE`` or a key that is not a training setting."""

    found = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--set {pair!r}: write it as KEY=VALUE (e.g. --set max_epochs=5)")
        if key not in COMMAND_LINE_KEYS:
            raise ValueError(
                f"--set {pair!r}: {key!r} is not a training setting (allowed: "
                f"{', '.join(sorted(COMMAND_LINE_KEYS))}); a model's hyperparameters change "
                "under a name of their own: a variant (base: <model>)"
            )
        found[key] = read_value(text)
    return found


def read_value(text: str):
    """A command line's ``VALUE`` as YAML (``5``, ``1e-4``, ``true``, ``null``, text),
    where YAML 1.1 would read a number without a dot (``3e-4``) as text: a number."""
    import yaml

    value = yaml.safe_load(text)
    if isinstance(value, str):
        for kind in (int, float):
            try:
                return kind(text)
            except ValueError:
                pass
    return value


def resolve_settings(
    params: dict,
    benchmark: str,
    dataset: str | None = None,
    model: str | None = None,
    suite: str | None = None,
    tuned: Tuned | None = None,
) -> tuple[dict, dict[str, str]]:
    """The training settings of a run (or, without ``model``/``dataset``, those every run
    of the benchmark shares) and the origin of each: the module's table, last place wins.
    ``suite`` defaults to params.yaml's ``suite``."""
    settings: dict = {}
    origins: dict[str, str] = {}
    for origin, place in settings_places(
        params, benchmark, dataset, model, suite or params["suite"]
    ):
        _apply(settings, origins, place, origin)
    if tuned is not None:
        _apply(settings, origins, tuned.training_settings, tuned.file)
    _apply(settings, origins, params.get("command_line") or {}, COMMAND_LINE)
    for key, value in (params.get(COMMAND_OPTIONS) or {}).items():
        _apply(settings, origins, {key: value}, option_origin(key))
    return settings, dict(sorted(origins.items()))


def option_origin(key: str) -> str:
    """The origin of a setting a command's own option gives (``max_epochs``: ``command line
    option --max-epochs``)."""
    return f"{COMMAND_LINE} option --{key.replace('_', '-')}"


def resolve_model_params(
    params: dict, model: str, dataset: str | None = None, tuned: Tuned | None = None
) -> tuple[dict, dict[str, str]]:
    """A model's hyperparameters on ``dataset`` and the origin of each: its entry, then
    the dataset's own (``dataset_params``), then the tuned file."""
    entry = params["models"][model]
    values: dict = {}
    origins: dict[str, str] = {}
    _apply(values, origins, {k: v for k, v in entry.items() if k not in _MODEL_NOT_PARAMS},
           f"models.{model}")  # fmt: skip
    if dataset is not None:
        _apply(values, origins, _get(entry, "dataset_params", dataset),
               f"models.{model}.dataset_params.{dataset}")  # fmt: skip
    base = entry.get("base")
    if base in params["models"]:  # a variant: a value its base gives is the base's
        inherited, places = resolve_model_params(params, base, dataset)
        for key, place in places.items():
            if key in values and values[key] == inherited.get(key):
                origins[key] = place
    if tuned is not None:
        _apply(values, origins, tuned.model_params, tuned.file)
    return values, dict(sorted(origins.items()))


def resolve(
    params: dict,
    benchmark: str,
    dataset: str,
    model: str,
    suite: str | None = None,
    tuned: Tuned | None = None,
) -> Resolved:
    """A run's training settings and model hyperparameters, each with its origin."""
    settings, settings_origin = resolve_settings(params, benchmark, dataset, model, suite, tuned)
    model_params, params_origin = resolve_model_params(params, model, dataset, tuned)
    return Resolved(settings, settings_origin, model_params, params_origin)


def _leaves(values: Mapping, origins: Mapping) -> list[tuple[str, object, str]]:
    """(key, value, place) per origin: ``key.sub`` for each key of a dict setting."""
    rows = []
    for name, place in origins.items():
        key, _, sub = name.partition(".")
        value = values.get(key)
        rows.append((name, value.get(sub) if sub and isinstance(value, Mapping) else value, place))
    return rows


def format_origins(
    spec: Mapping,
    suite: str,
    files: Mapping[str, str] | None = None,
    params_file: str = "params.yaml",
    model_defaults: Mapping[str, tuple[object, str]] | None = None,
) -> str:
    """A run's settings and hyperparameters, one per line with the file and key it came
    from (``ssmbench explain``), from a spec of `ssmbench.config.job_spec`. ``files``: the
    study file of each entry a study file adds (`ssmbench.params_file.read_params_and_files`);
    every other key is ``params_file``'s. ``model_defaults``: {hyperparameter: (value,
    origin)} of those no place sets, the constructor's defaults
    (`ssmbench.models.constructor_defaults`), listed with the model's hyperparameters."""
    import json

    run = f"{spec['benchmark']}/{spec['dataset']}/{spec['model']}/fold{spec['fold']}"
    tuned = spec.get("tuned") or {}
    lines = [f"{run} in suite {suite}: each value and the place it came from (last wins: "
             "docs/protocol.md, 'Where a run's settings come from')"]  # fmt: skip
    if tuned.get("missing"):
        lines.append(f"tuned file {tuned['file']}: not written yet; the tune stage's values "
                     "will go over those below")  # fmt: skip

    def where(origin: str) -> str:
        if origin == tuned.get("file"):
            return f"tuned file {origin}"
        if origin == COMMAND_LINE:
            return "command line (ssmbench --set, snakemake --config)"
        if origin.startswith((f"{COMMAND_LINE} option ", "default (")):
            return origin
        for entry, file in (files or {}).items():
            if origin == entry or origin.startswith(entry + "."):
                return f"{file}: {origin}"
        return f"{params_file}: {origin}"

    defaults = dict(model_defaults or {})
    for title, values, origins in (
        ("training settings", spec["settings"], spec["origins"]["settings"]),
        ("model hyperparameters",
         {**spec["model_params"], **{k: v for k, (v, _) in defaults.items()}},
         {**spec["origins"]["model_params"], **{k: o for k, (_, o) in defaults.items()}}),
    ):  # fmt: skip
        rows = [(k, json.dumps(v), where(p)) for k, v, p in _leaves(values, origins)]
        width_key = max((len(k) for k, _, _ in rows), default=0)
        width_value = max((len(v) for _, v, _ in rows), default=0)
        lines += ["", title]
        lines += [f"  {k:<{width_key}}  {v:<{width_value}}  {p}" for k, v, p in rows]
    return "\n".join(lines) + "\n"
