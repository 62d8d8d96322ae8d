"""The names that become path components: benchmarks, datasets, models, suites.

A run's files live at ``<root>/{benchmark}/{dataset}/{model}/fold{k}...`` under each
configured root (paths.raw, paths.prepared, paths.runs, paths.checkpoints), so a name is a
single plain path component: never empty, never ``.`` or ``..``, never holding a ``/`` or
a ``\\``, never absolute. The patterns below say so once; the JSON Schema keeps its own
copy (tests/test_names.py checks that they are equal), Snakemake's wildcard_constraints
and the CLI use these.
"""

from __future__ import annotations

import re

#: a benchmark: lower case, so ``uea`` and ``UEA`` cannot be two folders
BENCHMARK_PATTERN = r"[a-z0-9][a-z0-9_]*"
#: a dataset, model or suite; the first character is no ``-`` (it would read as a flag)
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_-]*"
PATTERNS = {
    "benchmark": BENCHMARK_PATTERN,
    "dataset": NAME_PATTERN,
    "model": NAME_PATTERN,
    "suite": NAME_PATTERN,
}


def name_problem(kind: str, value: object) -> str | None:
    """Why `value` cannot be a `kind` name ("benchmark", "dataset", "model", "suite"), as
    a phrase for an error message; None when it can."""
    pattern = PATTERNS[kind]
    if not isinstance(value, str):
        return f"{value!r} is not a {kind} name: a name is a string"
    if value == "":
        return f"an empty {kind} name"
    if re.fullmatch(pattern, value):
        return None
    if value.startswith(("/", "\\")) or re.match(r"[A-Za-z]:[\\/]", value):
        why = "it is an absolute path"
    elif value in (".", "..") or any(part == ".." for part in re.split(r"[\\/]", value)):
        why = "it leads out of its folder (..)"
    elif "/" in value or "\\" in value:
        why = "it holds a path separator"
    else:
        why = "it holds a character a name may not hold"
    return f"{value!r} is not a {kind} name: {why}; a {kind} name matches {pattern}"
