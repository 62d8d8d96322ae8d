"""Forward MMac per row of a model for an input shape, kept instead of counted again.

Counting a model's MMac (``complexity.mmac(convention="full")`` on the meta device) means
building it and tracing a forward pass; for the ~500 (model, dataset) pairs of a paper
grid that is most of what ``ssmbench plan`` would spend. So figures are kept, under a key
of everything a figure depends on (`mmac_key`):

* the code that builds and counts the model (`code_digest`): ``complexity.py`` and the
  models/ modules it imports (the S4D and MS4 hooks), ``models/registry.py`` and the
  models/ modules it imports (``build_model``), and the family's own modules
  (``code_digest.family_modules``), each as its syntax tree without docstrings;
* the versions of torch and ptflops (the counting runs through both);
* the model's hyperparameters as params.yaml resolves them for the dataset, and the
  input's C, L, the outputs K and the per-step mode.

Two tables are read, the first that holds a key wins:

* the project's cache (``.ssmbench/cache/mmac.json``): figures counted by earlier plans
  in this project, written back after each plan that counted one;
* the table the package ships (``calibration/mmac.json``, ``SHIPPED``), written by
  ``scripts/mmac_table.py`` for the (model, dataset) pairs of params.yaml's suites, so
  that a fresh clone's first plan of a paper grid counts nothing.

Editing a model's code, its hyperparameters or the counting changes the key: the old
figure is never found again, and the figure is counted afresh (and cached). A shipped
table left behind by code edits therefore costs time, never a wrong figure;
``tests/test_mmac_table.py`` holds that it is current for the paper suites and agrees
with counting the models.

Both tables are JSON objects of key -> MMac per row.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from pathlib import Path

#: the table the package ships (scripts/mmac_table.py writes it)
SHIPPED = Path(__file__).parent / "calibration" / "mmac.json"


@functools.cache
def _versions() -> tuple[str, str]:
    """torch's and ptflops' release (torch without its build tag: +cpu, +cu130)."""
    from importlib.metadata import version

    return version("torch").split("+")[0], version("ptflops")


@functools.cache
def _shared_modules() -> tuple[Path, ...]:
    """The modules every family's figure depends on: complexity.py, models/registry.py
    and the models/ modules each imports."""
    from ssmbench.code_digest import MODELS_NOT_WALKED, PACKAGE, walk_modules

    models = PACKAGE / "models"
    counting = walk_modules(PACKAGE / "complexity.py", models, MODELS_NOT_WALKED)
    building = walk_modules(models / "registry.py", models, MODELS_NOT_WALKED)
    return tuple(dict.fromkeys([*counting, *building]))


@functools.cache
def code_digest(family: str) -> str:
    """Digest of the code a model of ``family`` is built and counted with (module
    docstring), and torch's and ptflops' versions."""
    from ssmbench.code_digest import family_modules, imported_family_root, modules_digest
    from ssmbench.models.imported import is_import_path

    paths = list(dict.fromkeys([*_shared_modules(), *family_modules(family)]))
    root = imported_family_root(family) if is_import_path(family) else None
    return modules_digest(paths, root) + ":" + ":".join(_versions())


def mmac_key(family: str, model_params: dict, C: int, L: int, K: int, per_step: bool) -> str:
    """The key of a figure: a hash of everything it depends on (module docstring)."""
    text = json.dumps(
        [code_digest(family), model_params, C, L, K, per_step], sort_keys=True, default=str
    )
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def read_table(path: Path) -> dict[str, float]:
    """A table's figures; an absent or unreadable file, or one that is not an object of
    numbers, reads as empty (its figures are counted again)."""
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(kept, dict):
        return {}
    return {
        k: float(v)
        for k, v in kept.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and v >= 0
    }


def write_table(path: Path, figures: dict[str, float]) -> None:
    """``figures`` into ``path`` (atomically), one key a line, keys sorted."""
    from ssmbench.io import atomic_write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(figures, sort_keys=True, indent=0) + "\n", durable=False)


class MMacTable:
    """The figures of the project's cache (``cache``) and of the shipped table
    (``shipped``), either None for none; `get` counts what neither holds, and `save`
    writes what was counted into the cache. ``used``: every figure asked for, by key
    (what ``scripts/mmac_table.py`` ships)."""

    def __init__(self, cache: Path | None = None, shipped: Path | None = SHIPPED):
        self.cache = cache
        self._cached = read_table(cache) if cache is not None else {}
        self._shipped = read_table(shipped) if shipped is not None else {}
        self.counted = 0
        self.used: dict[str, float] = {}

    def get(self, key: str, count: Callable[[], float]) -> float:
        """The figure under ``key``, from the cache, else the shipped table, else
        ``count()`` (kept for `save`)."""
        if key in self._cached:
            figure = self._cached[key]
        elif key in self._shipped:
            figure = self._shipped[key]
        else:
            figure = self._cached[key] = float(count())
            self.counted += 1
        self.used[key] = figure
        return figure

    def save(self) -> None:
        """Writes the cache, where something was counted."""
        if self.cache is not None and self.counted:
            write_table(self.cache, self._cached)
