"""What the workflow reads from, and sets on, the running Snakemake that neither the
Snakefile's documented API (``workflow.cores``, ``workflow.is_main_process``) nor the
executor plugin interface (``workflow.deployment_settings``) offers: Snakemake's own
workflow object, as Snakemake 9.27.1 (the version pyproject.toml pins) has it.

Each such access is here and nowhere else, and tests/test_snakemake_internals.py runs each
one against the installed Snakemake (a group job of the SLURM job step in
``--mode remote``; a dry run of a cluster submission), and holds the installed version to
``CHECKED_ON``: an upgrade of Snakemake fails there first, naming what to check again.
"""

from __future__ import annotations

#: the Snakemake version every access of this module was checked on
CHECKED_ON = "9.27.1"


def runs_group_job(workflow) -> bool:
    """Whether this Snakemake process runs jobs handed to it by another one: the
    ``snakemake --mode remote`` process of a cluster job (the SLURM plugin's job step),
    which runs a group job's runs one after another."""
    return workflow.remote_exec


def keep_going_in_group_job(workflow) -> None:
    """Make a group job's process keep going when one of its runs fails.

    The SLURM plugin's job step runs a group job's runs one after another in a
    ``snakemake --mode remote`` process that gets no ``--keep-going`` from the submitting
    Snakemake (and reads no profile), so one failing run would stop the runs after it.
    Snakemake has no setting for this per process; its execution settings exist once the
    process builds its DAG (call this from a rule's group function, which Snakemake
    evaluates then), and its scheduler reads ``keep_going`` after that."""
    settings = workflow.execution_settings
    if runs_group_job(workflow) and settings is not None and not settings.keep_going:
        settings.keep_going = True


def submits_to_cluster(workflow) -> bool:
    """Whether this Snakemake submits jobs to a cluster (``--jobs`` with an executor such
    as ``--executor slurm``, a dry run of one included)."""
    return workflow.nodes is not None


def group_components(workflow, group: str) -> int:
    """How many of a group's jobs go into one cluster job (``--group-components
    GROUP=N``; 1 where it is not given)."""
    return workflow.group_settings.group_components.get(group, 1)
