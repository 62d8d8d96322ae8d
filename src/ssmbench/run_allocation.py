"""What one run will get, each value with the place it comes from (``ssmbench explain``): the
batch size it trains with and its job's resources (size class, CPUs, memory, GPUs,
runtime, group), and the SLURM partition and account of the installed profile.

The batch size is ``ssmbench.train.batch_order.batch_size_for`` over the run's training rows
(``ssmbench.plan.row_counts``: the catalog's, else the prepared folder's); the resources are
``ssmbench.resources.TrainResources``'s. Partition and account are not params.yaml's: they
are the SLURM profile's ``default-resources`` (``scripts/install-slurm-profile.sh``), read
from where ``snakemake --profile slurm`` finds it.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["allocation", "slurm_profile"]

#: the resources shown, in order
SHOWN = ("threads", "cpus_per_task", "mem_mb", "runtime", "gpu", "gpu_model", "slurm_extra")


def slurm_profile() -> Path | None:
    """The config.yaml `snakemake --profile slurm` reads outside a project: the user's
    ($XDG_CONFIG_HOME or ~/.config)/snakemake/slurm, else /etc/xdg/snakemake/slurm."""
    home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    for folder in (Path(home) / "snakemake" / "slurm", Path("/etc/xdg/snakemake/slurm")):
        if (folder / "config.yaml").is_file():
            return folder / "config.yaml"
    return None


def _profile_values(path: Path | None) -> dict:
    import yaml

    if path is None:
        return {}
    try:
        profile = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return {}
    defaults = profile.get("default-resources") if isinstance(profile, dict) else None
    return defaults if isinstance(defaults, dict) else {}


def allocation(params: dict, spec: dict, suite: str | None = None) -> list[tuple[str, str, str]]:
    """(name, value, where it comes from) for the run of ``spec`` (``config.job_spec``):
    its batch size, size class, resources, group, and the profile's partition and account.
    Origins of settings are params.yaml keys (``spec['origins']``)."""
    from ssmbench.config import ConfigError, Job
    from ssmbench.plan import row_counts
    from ssmbench.resources import TrainResources
    from ssmbench.train.batch_order import batch_size_for

    job = Job(spec["benchmark"], spec["dataset"], spec["model"], int(spec["fold"]))
    settings, origins = spec["settings"], spec["origins"]["settings"]
    rows: list[tuple[str, str, str]] = []

    if settings["batch_size"] is not None:
        where = origins.get("batch_size", "?")
        rows.append(("batch size", str(settings["batch_size"]), f"batch_size ({where})"))
    else:
        try:
            n_train = row_counts(params, job, settings, suite)[0]
        except ConfigError as exc:
            rows.append(("batch size", "?", f"not known before the data are prepared: {exc}"))
        else:
            size = batch_size_for(settings, n_train)
            fraction = settings["batch_fraction"]
            rows.append((
                "batch size", str(size),
                f"batch_fraction {fraction} ({origins.get('batch_fraction', '?')}) x {n_train} "
                f"training rows = {fraction * n_train:g}, the power of two at or below it "
                f"within [batch_min {settings['batch_min']}, batch_max {settings['batch_max']}]",
            ))  # fmt: skip

    resources = TrainResources(params)
    size_class = resources.size_class(job.benchmark, job.dataset)
    values = resources.values(job.benchmark, job.dataset)
    limit = params["resources"]["train"]["sizes"][size_class].get("max_values")
    if values is None:
        why = "its size is not known before it is prepared: the last class"
    elif limit is None:
        why = f"N x C x L = {values:,}: above every other class's max_values"
    else:
        why = f"N x C x L = {values:,} <= max_values {limit:g}"
    rows.append(("size class", size_class, f"resources.train.sizes.{size_class} ({why})"))
    resolved = resources.with_origins(job.benchmark, job.dataset, job.model)
    for key in SHOWN:
        if key in resolved:
            value, origin = resolved[key]
            shown = f"{value} min" if key == "runtime" else str(value)
            if key in ("mem_mb", "runtime"):
                origin += "; attempt k of a retried job asks k times this"
            rows.append((key, shown, origin))
    group = resources.group(job.benchmark, job.dataset)
    rows.append((
        "group", group or "none",
        f"resources.train.sizes.{size_class}.group" + (
            ": several runs to a SLURM job (the profile's group-components)" if group
            else " unset: a SLURM job of its own"
        ),
    ))  # fmt: skip

    profile = slurm_profile()
    defaults = _profile_values(profile)
    for key, name, unset in (
        ("slurm_partition", "partition", "the cluster's default partition"),
        ("slurm_account", "account", "the SLURM plugin guesses one (docs/cluster.md)"),
    ):
        if profile is None:
            rows.append((name, "-", f"{unset}; no SLURM profile installed "
                         "(scripts/install-slurm-profile.sh)"))  # fmt: skip
        elif defaults.get(key):
            rows.append((name, str(defaults[key]), f"{profile}: default-resources.{key}"))
        else:
            rows.append((name, "-", f"{unset} ({profile} sets no default-resources.{key})"))
    return rows
