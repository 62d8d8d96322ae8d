"""The resources of a training run (params.yaml ``resources.train``), resolved per run.

A run's dataset falls in a size class by its catalog size N x C x L (known before any
download, so no dataset file is opened): the first class whose ``max_values`` it does not
exceed. A dataset the catalog lacks (one's own) takes its size from its prepared folder
once it is prepared (``ssmbench.data.sizes``: meta.json, or X.npy's header); one of
unknown size takes the last class. A run's resources are then
``default`` <- ``sizes[class]`` <- ``models[model]`` <- ``models[model].sizes[class]``
(last wins). A retried job asks for more: attempt x ``mem_mb`` and ``runtime``. Runs of a
size class with ``group: true`` share SLURM jobs (group ``train_<class>``).

Runs are started largest dataset first (`TrainResources.priority`): with a fixed number of
cores, a long run started last keeps the others' cores idle while it finishes alone.

The workflow's rule `train` (workflow/rules/train.smk) asks `TrainResources` for each of
its resources, threads and group; `ssmbench check` runs `check_train_resources`.
"""

from __future__ import annotations

import functools
import math

from ssmbench.params_file import ConfigError

#: keys of a size class that are not resources
CLASS_KEYS = ("max_values", "group")
#: resources that grow with each attempt of a job
SCALED_KEYS = ("mem_mb", "runtime")
#: string resources: declared by the rule only when an entry sets them (an empty
#: gpu_model or slurm_extra is not passed on)
STRING_KEYS = ("gpu_model", "slurm_extra")
#: the priority of a run on a dataset of unknown size: first, as if it were the largest
#: (10 log10 N x C x L is at most ~110 for the catalog's datasets)
UNKNOWN_SIZE_PRIORITY = 200


@functools.cache
def catalog_values() -> dict[tuple[str, str], int | None]:
    """(catalog benchmark, dataset) -> N x C x L, or None where a size is unknown."""
    from ssmbench.data.catalog import catalog

    return {
        (entry.benchmark, entry.name): (
            entry.N * entry.C * entry.L if None not in (entry.N, entry.C, entry.L) else None
        )
        for entry in catalog()
    }


def catalog_size(
    benchmarks: dict, benchmark: str, dataset: str, prepared: str | None = None
) -> int | None:
    """A dataset's catalog N x C x L; None where unknown (or not in the catalog). The
    catalog knows a dataset under its benchmark (physiome_ode's 50) or under its source
    (a derived benchmark's, e.g. uea_drop's, by the source's name); ``benchmarks`` is
    params.yaml's ``benchmarks``. With ``prepared`` (``paths.prepared``), a dataset the
    catalog lacks is sized by its prepared folder where there is one."""
    source = benchmarks[benchmark].get("source", benchmark)
    sizes = catalog_values()
    known = (benchmark, dataset) in sizes or (source, dataset) in sizes
    if known or prepared is None:
        return sizes.get((benchmark, dataset), sizes.get((source, dataset)))
    from ssmbench.data.errors import DataError
    from ssmbench.data.sizes import prepared_size

    try:
        size = prepared_size(f"{prepared}/{benchmark}/{dataset}")
    except DataError:
        return None  # an unreadable meta.json: the prepare step's to report
    return size.N * size.C * size.L if size is not None and size.shape_known else None


def check_train_resources(params: dict) -> None:
    """What the schema cannot check: the models and size classes that resources.train
    names exist, and only the last size class omits max_values. Raises ConfigError."""
    train = params["resources"]["train"]
    sizes = list(train["sizes"])
    where = "params.yaml resources.train"
    for model, entry in (train.get("models") or {}).items():
        if model not in params["models"]:
            raise ConfigError(
                f"{where}.models.{model}: no such model in params.yaml `models` "
                f"(known: {', '.join(sorted(params['models']))}); fix or remove the entry"
            )
        for size in entry.get("sizes", {}):
            if size not in sizes:
                raise ConfigError(
                    f"{where}.models.{model}.sizes.{size}: no such size class "
                    f"(resources.train.sizes has {', '.join(sizes)})"
                )
    for name in sizes[:-1]:
        if "max_values" not in train["sizes"][name]:
            raise ConfigError(
                f"{where}.sizes.{name}: only the last size class may omit max_values "
                "(it takes every larger or unknown dataset)"
            )


class TrainResources:
    """params.yaml ``resources.train``, checked, resolved per run (see the module
    docstring). Each run's resolution is computed once."""

    def __init__(self, params: dict):
        check_train_resources(params)
        self._train = params["resources"]["train"]
        self._benchmarks = params["benchmarks"]
        self._prepared = (params.get("paths") or {}).get("prepared")
        self.size_classes = list(self._train["sizes"])
        self._resolved: dict[tuple[str, str, str], dict] = {}

    def values(self, benchmark: str, dataset: str) -> int | None:
        """The dataset's N x C x L: the catalog's, else its prepared folder's; None where
        neither knows it."""
        return catalog_size(self._benchmarks, benchmark, dataset, self._prepared)

    def size_class(self, benchmark: str, dataset: str) -> str:
        """The first class whose max_values the dataset's catalog N x C x L does not
        exceed; a dataset of unknown size (or not in the catalog) takes the last class."""
        values = self.values(benchmark, dataset)
        if values is not None:
            for name in self.size_classes:
                limit = self._train["sizes"][name].get("max_values")
                if limit is None or values <= limit:
                    return name
        return self.size_classes[-1]

    def of(self, benchmark: str, dataset: str, model: str) -> dict:
        """The resolved resources of one run, before any retry (a copy)."""
        return {k: v for k, (v, _) in self.with_origins(benchmark, dataset, model).items()}

    def with_origins(self, benchmark: str, dataset: str, model: str) -> dict[str, tuple]:
        """Each resolved resource of one run with the params.yaml key that set it:
        {key: (value, 'resources.train.sizes.small')}, last place winning."""
        key = (benchmark, dataset, model)
        if key not in self._resolved:
            size = self.size_class(benchmark, dataset)
            model_entry = (self._train.get("models") or {}).get(model, {})
            where = "resources.train"
            places = (
                (f"{where}.default", self._train["default"]),
                (f"{where}.sizes.{size}", self._train["sizes"][size]),
                (f"{where}.models.{model}", model_entry),
                (
                    f"{where}.models.{model}.sizes.{size}",
                    model_entry.get("sizes", {}).get(size, {}),
                ),
            )
            resolved: dict[str, tuple] = {}
            for origin, place in places:
                resolved.update(
                    {k: (v, origin) for k, v in place.items() if k not in (*CLASS_KEYS, "sizes")}
                )
            if "cpus_per_task" not in resolved:
                threads, origin = resolved["threads"]
                resolved["cpus_per_task"] = (threads, f"{origin} threads (cpus_per_task unset)")
            self._resolved[key] = resolved
        return dict(self._resolved[key])

    def value(self, key: str, benchmark: str, dataset: str, model: str, attempt: int = 1):
        """One resource of one run at a given attempt: mem_mb and runtime grow with it.
        An unset resource is 0, an unset string resource ''."""
        value = self.of(benchmark, dataset, model).get(key, "" if key in STRING_KEYS else 0)
        return value * attempt if key in SCALED_KEYS else value

    def priority(self, benchmark: str, dataset: str) -> int:
        """Snakemake's priority of a run (higher starts first): round(10 log10 N x C x L),
        so that runs on larger datasets start first. An integer: Snakemake's ILP scheduler
        puts priority before core load only for differences of 1 or more."""
        values = self.values(benchmark, dataset)
        if values is None:
            return UNKNOWN_SIZE_PRIORITY
        return round(10 * math.log10(max(values, 1)))

    def group(self, benchmark: str, dataset: str) -> str | None:
        """``train_<class>`` for a run whose size class has group: true, else None."""
        size = self.size_class(benchmark, dataset)
        return f"train_{size}" if self._train["sizes"][size].get("group") else None

    def sets(self, key: str) -> bool:
        """Whether any entry of resources.train sets `key`."""
        models = (self._train.get("models") or {}).values()
        entries = [self._train["default"], *self._train["sizes"].values(), *models]
        entries += [size for entry in models for size in entry.get("sizes", {}).values()]
        return any(key in entry for entry in entries)
