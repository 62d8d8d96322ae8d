"""Hyperparameter searches as params.yaml declares them (``tuning:``), without Optuna: the
search of a (benchmark, model), its space and what each name in it means, the checks
``ssmbench check`` runs before any job, and the tuned-parameters file that the tune stage
writes and every train job of that (benchmark, dataset, model) reads.

A search (``tuning.searches.<model>``)::

    benchmarks: [physiome]        # where the model is tuned (on each of their datasets)
    fold: 0                       # the fold (seed) the trials train on; its test rows unused
    n_trials: 50                  # the budget: finished trials over every worker
    sampler_seed: 0               # TPE's seed (the TIDES code's hypersearch: TPESampler)
    n_startup_trials: 10          # TPE's random trials first
    settings: {max_epochs: 50}    # the trials' training settings over the run's own
    space:
      lr: {type: float, low: 1.0e-4, high: 1.0e-2, log: true}
      d_model: {type: categorical, choices: [32, 64]}
      n_layers: {type: int, low: 1, high: 4}

Each name of a space is either a training setting (``lr``, ``weight_decay``,
``lr_factor``, ``batch_size``, ...: ``TRAINING_KEYS``) or a hyperparameter of the model's
family (checked by building the model entry with every bound and choice); never both.

A suite runs the searches of its (benchmark, model) pairs only when it says so:
``suites.<s>.tuning: {}`` (as declared) or ``{n_trials: 3, settings: {max_epochs: 3}}``
(every search smaller, e.g. a preview). A suite without ``tuning`` trains the model
entries as they are.

The tuned file (``paths.tuned/<benchmark>/<dataset>/<model>.json``) holds the best trial's
``params`` with the search that found them, the same values split into ``model_params``
and ``training_settings`` (what a train job applies), and the sha256 of its own content
(``content_sha256``, ``ssmbench.staleness.sealed``). ``tuned_params`` reads it back and
refuses a file of another model, benchmark or dataset, with names or values outside the
space (in ``params``, ``model_params`` or ``training_settings``, which must agree), or
whose content is not what the tune stage wrote (changed by hand, or without its
``content_sha256``).
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from numbers import Integral, Real
from pathlib import Path

from ssmbench.staleness import content_problem

#: The kinds of a space entry and their keys (``type`` included).
ENTRY_KEYS = {
    "float": {"type", "low", "high", "log", "step"},
    "int": {"type", "low", "high", "log", "step"},
    "categorical": {"type", "choices"},
}
#: What a trial maximises or minimises, by the run's ``monitor``.
DIRECTIONS = {"val_accuracy": "maximize", "val_loss": "minimize"}
#: TPE's random trials before it models the space (Optuna's default; the TIDES
#: hypersearch scripts pass max(5, --num_startup_trials))
DEFAULT_STARTUP_TRIALS = 10
#: The name of the tuned-parameters file's format (its ``format`` key).
TUNED_FORMAT = "ssmbench-tuned-1"
#: The suite's searches, one file in paths.tuned beside the tuned files (the workflow's
#: ``tuned`` target writes it): ``{"suite": name, "tuned": [each tuned file, relative]}``.
SEARCHES_INDEX = "searches.json"


class SearchError(ValueError):
    """A search, its space or a tuned file that cannot be used; the message names it."""


def search_of(params: dict, benchmark: str, model: str, suite: str | None = None) -> dict | None:
    """The search that tunes ``model`` on ``benchmark`` in the suite (with the suite's
    ``tuning`` applied), or None when it is not tuned there: the suite has no ``tuning``
    key (its runs then use the model entries as they are), or no search names the model
    and benchmark."""
    spec = params["suites"][suite or params["suite"]]
    search = ((params.get("tuning") or {}).get("searches") or {}).get(model)
    if "tuning" not in spec or search is None:
        return None
    if benchmark not in (search.get("benchmarks") or []):
        return None
    search = copy.deepcopy(search)
    overrides = spec.get("tuning") or {}
    if "n_trials" in overrides:
        search["n_trials"] = overrides["n_trials"]
    search["settings"] = {**(search.get("settings") or {}), **(overrides.get("settings") or {})}
    search.setdefault("fold", 0)
    search.setdefault("sampler_seed", 0)
    search.setdefault("n_startup_trials", DEFAULT_STARTUP_TRIALS)
    return search


def split_params(space: dict, values: dict, training_keys) -> tuple[dict, dict]:
    """``values`` (name -> value) as (model hyperparameters, training settings)."""
    model, training = {}, {}
    for name, value in values.items():
        (training if name in training_keys else model)[name] = value
    return model, training


def space_problems(where: str, space, model_entry: dict, training_keys, validate) -> list[str]:
    """Every problem of a search space: empty, a malformed entry, a name that is neither a
    training setting nor a hyperparameter of the model's family, a bound or choice the
    family refuses. ``validate(entry)`` raises ValueError for a bad model entry."""
    if not isinstance(space, dict) or not space:
        return [f"{where}: the search space is empty; name at least one hyperparameter"]
    problems = []
    for name, entry in space.items():
        at = f"{where}.{name}"
        problems += _entry_problems(at, entry)
        if problems and problems[-1].startswith(at):
            continue
        if name in training_keys:
            continue
        for value in _corner_values(entry):
            try:
                validate({**model_entry, name: value})
            except ValueError as exc:
                problems.append(
                    f"{at}: {name!r} is not a training setting (those are: "
                    f"{', '.join(sorted(training_keys))}), and as a hyperparameter of family "
                    f"{model_entry.get('family')!r} the value {value!r} is refused: {exc}"
                )
                break
    return problems


def _entry_problems(at: str, entry) -> list[str]:
    if not isinstance(entry, dict) or entry.get("type") not in ENTRY_KEYS:
        return [f"{at}: expected a mapping with type: float, int or categorical; got {entry!r}"]
    kind = entry["type"]
    extra = sorted(set(entry) - ENTRY_KEYS[kind])
    if extra:
        return [f"{at}: unknown key(s) {extra} for type {kind} (allowed: "
                f"{sorted(ENTRY_KEYS[kind])})"]  # fmt: skip
    if kind == "categorical":
        choices = entry.get("choices")
        if not isinstance(choices, list) or not choices:
            return [f"{at}: choices must be a non-empty list; got {choices!r}"]
        return []
    low, high = entry.get("low"), entry.get("high")
    number = Integral if kind == "int" else Real
    if not all(isinstance(v, number) and not isinstance(v, bool) for v in (low, high)):
        return [f"{at}: low and high must be {'integers' if kind == 'int' else 'numbers'}; "
                f"got {low!r}, {high!r}"]  # fmt: skip
    if not (math.isfinite(low) and math.isfinite(high)) or low > high:
        return [f"{at}: needs finite low <= high; got {low!r}, {high!r}"]
    if entry.get("log") and low <= 0:
        return [f"{at}: log: true needs low > 0; got {low!r}"]
    step = entry.get("step")
    if step is not None and (isinstance(step, bool) or not isinstance(step, number) or step <= 0):
        return [f"{at}: step must be a positive {'integer' if kind == 'int' else 'number'}"]
    if step is not None and entry.get("log"):
        return [f"{at}: step and log: true cannot be combined (Optuna refuses it)"]
    return []


def _corner_values(entry: dict) -> list:
    if entry["type"] == "categorical":
        return list(entry["choices"])
    return [entry["low"], entry["high"]]


def suggest(trial, space: dict) -> dict:
    """One value per name of ``space`` from an Optuna trial (``suggest_float`` /
    ``suggest_int`` / ``suggest_categorical``)."""
    values = {}
    for name, entry in space.items():
        kind = entry["type"]
        if kind == "categorical":
            values[name] = trial.suggest_categorical(name, entry["choices"])
        elif kind == "int":
            values[name] = trial.suggest_int(
                name, entry["low"], entry["high"], step=entry.get("step", 1),
                log=bool(entry.get("log", False)),
            )  # fmt: skip
        else:
            step = entry.get("step")
            values[name] = trial.suggest_float(
                name, float(entry["low"]), float(entry["high"]),
                step=None if step is None else float(step), log=bool(entry.get("log", False)),
            )  # fmt: skip
    return values


def in_space(entry: dict, value) -> bool:
    """Whether a search could have drawn ``value`` from ``entry``: one of its choices, or
    a number within its bounds, an integer for ``int``, on its ``step`` from ``low``."""
    if entry["type"] == "categorical":
        return any(
            value == c and isinstance(value, bool) == isinstance(c, bool) for c in entry["choices"]
        )
    if isinstance(value, bool) or not isinstance(value, Real):
        return False
    if entry["type"] == "int" and not float(value).is_integer():
        return False
    if not entry["low"] <= value <= entry["high"]:
        return False
    step = entry.get("step")
    if step:
        steps = (value - entry["low"]) / step
        return abs(steps - round(steps)) <= 1e-9 * max(1.0, abs(steps))
    return True


def tuned_file(tuned_dir: str | Path, benchmark: str, dataset: str, model: str) -> Path:
    """Where the tune stage writes a (benchmark, dataset, model)'s best parameters."""
    return Path(tuned_dir) / benchmark / dataset / f"{model}.json"


def tuned_params(path: str | Path, benchmark: str, dataset: str, model: str, space: dict) -> dict:
    """The tuned file at ``path``, checked against the run that reads it: the same
    benchmark, dataset and model, ``params`` naming exactly the space's names with values
    inside it. Raises SearchError naming the file and what is wrong."""
    path = Path(path)
    try:
        tuned = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SearchError(
            f"{path}: no tuned parameters for {model} on {benchmark}/{dataset}; run the tune "
            f"stage first (snakemake ... tuned, or `ssmbench tune --benchmark {benchmark} "
            f"--dataset {dataset} --model {model}`)"
        ) from None
    except (OSError, ValueError) as exc:
        raise SearchError(f"{path}: not a readable tuned-parameters file ({exc}); delete it "
                          "and run the tune stage again") from exc  # fmt: skip
    if not isinstance(tuned, dict) or tuned.get("format") != TUNED_FORMAT:
        raise SearchError(f"{path}: not a tuned-parameters file (format "
                          f"{TUNED_FORMAT!r}); delete it and run the tune stage again")  # fmt: skip
    for key, want in (("benchmark", benchmark), ("dataset", dataset), ("model", model)):
        if tuned.get(key) != want:
            raise SearchError(
                f"{path}: was tuned for {key} {tuned.get(key)!r}, not {want!r}; it does not "
                "match the run that reads it. Delete it and run the tune stage again"
            )
    values = tuned.get("params")
    if not isinstance(values, dict) or set(values) != set(space):
        have = sorted(values) if isinstance(values, dict) else values
        raise SearchError(
            f"{path}: its params {have} do not match the search space of {model} "
            f"({sorted(space)}); the space changed since it was tuned. Run the tune stage "
            "again (delete the file and its study journal to start the search over)"
        )
    again = (
        f"run the tune stage again (`ssmbench tune --benchmark {benchmark} --dataset "
        f"{dataset} --model {model}`) or restore the file as the tune stage wrote it"
    )
    applied = {}
    for part in ("params", "model_params", "training_settings"):
        part_values = tuned.get(part, {} if part != "params" else None)
        if not isinstance(part_values, dict):
            raise SearchError(f"{path}: its {part} is not a mapping ({part_values!r}); {again}")
        for name, value in part_values.items():
            if name not in space or not in_space(space[name], value):
                where = (
                    f"the search space of {name}, {space[name]}" if name in space
                    else f"the search space of {model} ({sorted(space)})"
                )  # fmt: skip
                raise SearchError(
                    f"{path}: {part}.{name} = {value!r} is outside {where} "
                    f"(tuning.searches.{model}.space); the tune stage writes values of the "
                    f"space only, so the space changed or the file was changed by hand: "
                    f"{again}"
                )
            if part != "params":
                if name in applied or value != values[name]:
                    raise SearchError(
                        f"{path}: {part}.{name} = {value!r} is not the params.{name} = "
                        f"{values[name]!r} it was split from: the file was changed by hand; "
                        f"{again}"
                    )
                applied[name] = value
    unapplied = sorted(set(values) - set(applied))
    if ("model_params" in tuned or "training_settings" in tuned) and unapplied:
        raise SearchError(
            f"{path}: params {unapplied} are in neither its model_params nor its "
            f"training_settings, so a run would not apply them: the file was changed by "
            f"hand; {again}"
        )
    edited = content_problem(tuned)
    if edited:
        raise SearchError(f"{path}: changed by hand: {edited}; {again}")
    return tuned


def search_digest(search: dict, base_spec: dict) -> str:
    """12 hex digits of what a study's trials depend on: the search but its budget, and
    the run they start from (model entry, training settings, code)."""
    what = {
        "search": {k: v for k, v in search.items() if k != "n_trials"},
        "model_params": base_spec["model_params"],
        "settings": {k: v for k, v in base_spec["settings"].items()
                     if k not in ("checkpoint_every", "checkpoint_min_seconds")},
        "code": base_spec.get("code"),
    }  # fmt: skip
    text = json.dumps(what, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def tuned_is_current(tuned_path: Path, search: dict, base_spec: dict) -> bool:
    """Whether the tuned file at ``tuned_path`` came from this search (budget included) on
    this base run and is as the tune stage wrote it (`tuned_params` accepts it): then the
    tune stage keeps it."""
    try:
        tuned = json.loads(Path(tuned_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not (
        isinstance(tuned, dict)
        and tuned.get("format") == TUNED_FORMAT
        and tuned.get("search") == search
        and tuned.get("search_digest") == search_digest(search, base_spec)
    ):
        return False
    try:
        tuned_params(tuned_path, base_spec["benchmark"], base_spec["dataset"],
                     base_spec["model"], search["space"])  # fmt: skip
    except SearchError:
        return False
    return True


def check_journal(path: Path) -> None:
    """A search's Optuna journal (one JSON entry a line) that a search can resume from:
    every finished line parses (an unfinished last line, a write cut short, is moved aside
    when the search opens: ``train.tune.mend_unfinished_entry``). Raises SearchError naming
    the file, the line and how to start again; and one naming a folder where the journal
    should be, or a file where one of its folders should be."""
    from ssmbench.os_errors import write_target_problem

    path = Path(path)
    if (problem := write_target_problem(path, "the search's Optuna journal")) is not None:
        raise SearchError(problem)
    if not path.is_file():
        return
    with open(path, "rb") as f:
        for number, line in enumerate(f, start=1):
            if not line.endswith(b"\n"):
                return  # the last line, unfinished: moved aside when the search opens
            try:
                json.loads(line)
            except ValueError as exc:
                raise SearchError(
                    f"{path}:{number}: a damaged Optuna journal (the line is not one whole "
                    f"JSON entry: {exc}); the search cannot resume from it. Move it aside to "
                    f"start the search again: mv {path} {path}.damaged"
                ) from None
