"""Whether dvc.yaml tracks every study file that params.yaml's ``studies`` names.

A study file's models, suites and searches are read as if written in params.yaml
(``ssmbench.params_file``), but DVC knows a params file only where a stage lists it: a study
file that a stage does not list is invisible to that stage, and after an edit to it `dvc
status` says "up to date" and `dvc repro` skips the stage while `ssmbench status` says the
runs are stale. So every stage that reads the suite (its ``params`` name ``suite``,
``studies``, a section a study file adds to, or a study file) tracks

* ``studies`` itself (a study file added or removed is a changed param), and
* each study file whole, ``- params/<study>.yaml:`` with no key list (an edit anywhere in
  it is a changed param; a key list that holds every top-level key of the file counts too).

`check_studies_tracked` raises ``ConfigError`` naming the first study file a stage misses,
the stages that miss it and the line to add; ``ssmbench check`` (which `make run` runs
first) and the Snakefile (its main process) call it before any job runs. A project with no
dvc.yaml beside params.yaml, or a params file other than DVC's ``params.yaml``, is not
checked: DVC does not read it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from ssmbench.params_file import STUDY_SECTIONS, ConfigError

#: DVC's pipeline file and its default params file, whose keys a stage lists as strings.
DVC_PIPELINE, DVC_PARAMS = "dvc.yaml", "params.yaml"
#: params.yaml keys whose stage reads the suite, hence the study files.
SUITE_KEYS = frozenset({"suite", "studies", *STUDY_SECTIONS})
#: How a line of a stage's ``params`` is indented in the repository's dvc.yaml.
PARAMS_INDENT = " " * 6


@dataclass(frozen=True)
class Untracked:
    """``entry`` (``studies``, or a study file as ``studies`` names it) is not tracked by
    the dvc.yaml stages ``stages``; ``line`` is what to add to each one's ``params``."""

    entry: str
    stages: tuple[str, ...]
    line: str

    def message(self, pipeline: str | os.PathLike = DVC_PIPELINE) -> str:
        what = (
            "params.yaml's studies (the list of study files)"
            if self.entry == "studies"
            else f"{self.entry}, a study file of params.yaml's studies"
        )
        one = len(self.stages) == 1
        stages = (
            f"stage {self.stages[0]} does"
            if one
            else f"stages {', '.join(self.stages[:-1])} and {self.stages[-1]} do"
        )
        where = "that stage" if one else "each"
        return (
            f"{pipeline}: {stages} not track {what}, so `dvc status` and `dvc repro` would "
            f"not see an edit to it; add this line to the params of {where}:"
            f"\n{PARAMS_INDENT}{self.line}"
        )


def _studies(params_path: Path) -> list[str]:
    """params.yaml's ``studies`` as written (the reader checks its shape)."""
    raw = yaml.safe_load(params_path.read_text(encoding="utf-8")) or {}
    studies = raw.get("studies") if isinstance(raw, dict) else None
    return [s for s in studies or () if isinstance(s, str)]


def _stage_params(stage: dict, base: Path) -> dict[Path, set[str] | None]:
    """{params file (resolved): the keys the stage lists, None for the whole file}; a
    string entry is a key of ``{base}/params.yaml``."""
    tracked: dict[Path, set[str] | None] = {}

    def add(file: Path, keys) -> None:
        if keys is None or (file in tracked and tracked[file] is None):
            tracked[file] = None
        else:
            tracked.setdefault(file, set()).update(keys)

    for entry in stage.get("params") or ():
        if isinstance(entry, str):
            add((base / DVC_PARAMS).resolve(), [entry])
        elif isinstance(entry, dict):
            for file, keys in entry.items():
                add((base / str(file)).resolve(), None if keys is None else map(str, keys))
    return tracked


def untracked_studies(params_path: str | os.PathLike = DVC_PARAMS) -> list[Untracked]:
    """What dvc.yaml (beside ``params_path``) does not track of ``studies``: one entry per
    study file (or ``studies`` itself) that a stage reading the suite misses, in the order
    of ``studies``; empty when all is tracked, or when DVC does not read this params file
    (see the module docstring)."""
    params_path = Path(params_path)
    root = params_path.parent
    pipeline = root / DVC_PIPELINE
    if params_path.name != DVC_PARAMS or not pipeline.is_file():
        return []
    stages = (yaml.safe_load(pipeline.read_text(encoding="utf-8")) or {}).get("stages") or {}
    studies = _studies(params_path)
    study_files = {name: (root / name).resolve() for name in studies}
    params_file = params_path.resolve()
    missing: dict[str, list[str]] = {}
    for name, stage in stages.items():
        if not isinstance(stage, dict):
            continue
        tracked = _stage_params(stage, root / str(stage.get("wdir") or "."))
        own = tracked.get(params_file, set())
        reads_suite = (
            own is None
            or bool(own & SUITE_KEYS)
            or any(path in tracked for path in study_files.values())
        )
        if not reads_suite:
            continue
        if own is not None and "studies" not in own:
            missing.setdefault("studies", []).append(name)
        for study, path in study_files.items():
            if path not in tracked:
                missing.setdefault(study, []).append(name)
            elif tracked[path] is not None and not _top_keys(path) <= tracked[path]:
                missing.setdefault(study, []).append(name)
    order = ["studies", *studies]
    return [
        Untracked(
            entry, tuple(missing[entry]), "- studies" if entry == "studies" else f"- {entry}:"
        )
        for entry in order
        if entry in missing
    ]


def _top_keys(path: Path) -> set[str]:
    try:
        body = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError:
        return set()  # the reader names a missing study file
    return {str(k) for k in body} if isinstance(body, dict) else set()


def check_studies_tracked(params_path: str | os.PathLike = DVC_PARAMS) -> None:
    """Raise ConfigError when dvc.yaml does not track ``studies`` or one of its files in a
    stage that reads the suite (``untracked_studies``): the message names the study file,
    the stages that miss it and the line to add, for each one missing."""
    untracked = untracked_studies(params_path)
    if untracked:
        pipeline = Path(params_path).parent / DVC_PIPELINE
        shown = DVC_PIPELINE if Path(params_path).parent == Path() else pipeline
        raise ConfigError("\n".join(u.message(shown) for u in untracked))
