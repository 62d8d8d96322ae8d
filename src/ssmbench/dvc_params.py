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

A model of one's own (``family: package.module:Class``) whose code lies in the project is
code a stage's result depends on like ``src/ssmbench/models``: every stage that lists that
folder as a dependency (tune, train) must list the model's package folder (or its module,
outside any package) too, or one above it (`untracked_model_code`); code outside the
project (an installed package) is the environment's, which no stage tracks.

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
#: the command that writes the lines a message asks for (`add_missing_lines`)
ADD_HINT = "(or run `ssmbench check --add-to-dvc`)"
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
            f"not see an edit to it; add this line to the params of {where} {ADD_HINT}:"
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


def check_studies_tracked(
    params_path: str | os.PathLike = DVC_PARAMS, params: dict | None = None
) -> None:
    """Raise ConfigError when dvc.yaml does not track ``studies`` or one of its files in a
    stage that reads the suite (``untracked_studies``), or, given the ``params`` read, the
    code of a model of one's own in a stage that builds models (``untracked_model_code``):
    the message names the file, the stages that miss it and the line to add, for each one
    missing."""
    untracked = untracked_studies(params_path)
    code = untracked_model_code(params_path, params) if params is not None else []
    if untracked or code:
        pipeline = Path(params_path).parent / DVC_PIPELINE
        shown = DVC_PIPELINE if Path(params_path).parent == Path() else pipeline
        raise ConfigError("\n".join([*(u.message(shown) for u in untracked),
                                     *(c.message(shown) for c in code)]))  # fmt: skip


#: the dependency by which a stage says its result depends on the models' code
MODELS_DEP = "src/ssmbench/models"


@dataclass(frozen=True)
class UntrackedCode:
    """The code of ``models`` (family ``family``), at ``path`` in the project, is not a
    dependency of the dvc.yaml stages ``stages``."""

    models: tuple[str, ...]
    family: str
    path: str
    stages: tuple[str, ...]

    def message(self, pipeline: str | os.PathLike = DVC_PIPELINE) -> str:
        one = len(self.stages) == 1
        stages = (
            f"stage {self.stages[0]} does"
            if one
            else f"stages {', '.join(self.stages[:-1])} and {self.stages[-1]} do"
        )
        return (
            f"{pipeline}: {stages} not depend on {self.path}, the code of "
            f"{'model' if len(self.models) == 1 else 'models'} {', '.join(self.models)} "
            f"(family {self.family}), so `dvc repro` would not rerun "
            f"{'it' if one else 'them'} after an edit to it; add this line to the deps of "
            f"{'that stage' if one else 'each'} {ADD_HINT}:\n{PARAMS_INDENT}- {self.path}"
        )


def untracked_model_code(params_path: str | os.PathLike, params: dict) -> list[UntrackedCode]:
    """For each model of ``params`` named by import path whose code lies under the
    project (params.yaml's folder): the stages depending on ``MODELS_DEP`` that depend on
    neither its package folder (its module, outside any package) nor a folder above it.
    Empty where DVC does not read this params file; a family that does not import is
    left to ``ssmbench.config.check_params``, which names it."""
    from ssmbench.models.imported import FamilyImportError, is_import_path

    params_path = Path(params_path)
    root = params_path.parent.resolve()
    pipeline = root / DVC_PIPELINE
    if params_path.name != DVC_PARAMS or not pipeline.is_file():
        return []
    stages = (yaml.safe_load(pipeline.read_text(encoding="utf-8")) or {}).get("stages") or {}
    building = {}
    for name, stage in stages.items():
        if not isinstance(stage, dict):
            continue
        base = root / str(stage.get("wdir") or ".")
        deps = [(base / str(d)).resolve() for d in stage.get("deps") or () if isinstance(d, str)]
        if (root / MODELS_DEP).resolve() in deps:
            building[name] = deps
    found: dict[str, UntrackedCode] = {}
    for model, entry in (params.get("models") or {}).items():
        family = entry.get("family") if isinstance(entry, dict) else None
        if not is_import_path(family):
            continue
        try:
            code = _model_code(family)
        except (FamilyImportError, KeyError, ImportError):
            continue
        if not code.is_relative_to(root):
            continue
        missing = tuple(
            name for name, deps in building.items()
            if not any(code == d or code.is_relative_to(d) for d in deps)
        )  # fmt: skip
        path = code.relative_to(root).as_posix()
        if missing:
            models = (*found[path].models, model) if path in found else (model,)
            found[path] = UntrackedCode(models, family, path, missing)
    return list(found.values())


def _model_code(family: str) -> Path:
    """The folder of the top-level package of ``family``'s module, or the module's file
    when it is in no package."""
    import sys

    from ssmbench.models import FAMILIES

    module = FAMILIES[family].__module__
    top = sys.modules[module.split(".")[0]]
    if getattr(top, "__file__", None) is None:  # a namespace package: no __init__.py
        return Path(next(iter(top.__path__))).resolve()
    file = Path(top.__file__).resolve()
    return file.parent if file.name == "__init__.py" else file


def add_missing_lines(
    params_path: str | os.PathLike = DVC_PARAMS, params: dict | None = None
) -> list[str]:
    """Write into dvc.yaml (beside ``params_path``) the lines `check_studies_tracked` asks
    for: each untracked study file (and ``studies``) at the end of the ``params`` of the
    stages that miss it, each model's code at the end of their ``deps``; comments and
    the rest of the file as they were. Returns ``["<stage>: <line>", ...]`` for what was
    added. The file is replaced atomically, and only when the result tracks everything;
    a dvc.yaml whose stages are not laid out as blocks this can find (``params:`` or
    ``deps:`` under ``  <stage>:``) is left untouched with a ConfigError naming the stage."""
    from ssmbench.io import atomic_write_text

    params_path = Path(params_path)
    pipeline = params_path.parent / DVC_PIPELINE
    wanted: list[tuple[str, str, str]] = [
        (stage, "params", u.line) for u in untracked_studies(params_path) for stage in u.stages
    ]
    if params is not None:
        wanted += [
            (stage, "deps", f"- {c.path}")
            for c in untracked_model_code(params_path, params)
            for stage in c.stages
        ]
    if not wanted:
        return []
    original = pipeline.read_text(encoding="utf-8")
    lines = original.splitlines(keepends=True)
    added = []
    for stage, block, line in wanted:
        at = _block_end(lines, stage, block)
        if at is None:
            raise ConfigError(
                f"{pipeline}: stage {stage} has no `{block}:` list this can add to; add "
                f"`{line}` under its {block} by hand"
            )
        lines.insert(at, f"{PARAMS_INDENT}{line}\n")
        added.append(f"{stage}: {line}")
    text = "".join(lines)
    parsed = yaml.safe_load(text)  # what DVC will read: still the same stages
    if not isinstance(parsed, dict) or set(parsed.get("stages") or {}) != set(
        (yaml.safe_load(original) or {}).get("stages") or {}
    ):
        raise ConfigError(f"{pipeline}: adding the lines would change its stages; add them by hand")
    atomic_write_text(pipeline, text)
    if untracked_studies(params_path) or (
        params is not None and untracked_model_code(params_path, params)
    ):
        atomic_write_text(pipeline, original)
        raise ConfigError(f"{pipeline}: the lines added did not track everything; restored it, "
                          "add them by hand")  # fmt: skip
    return added


def _block_end(lines: list[str], stage: str, block: str) -> int | None:
    """The index after the last item of ``block`` (``params`` or ``deps``) of ``stage`` in
    dvc.yaml's ``lines`` (a stage at two spaces, its keys at four, items at six or more,
    comments and blank lines within); None when the stage or the block is not there."""
    start = next((i for i, line in enumerate(lines) if line.rstrip() == f"  {stage}:"), None)
    if start is None:
        return None
    k = start + 1
    while k < len(lines) and (not lines[k].strip() or lines[k].startswith("    ")):
        if lines[k].rstrip() == f"    {block}:":
            end = k + 1
            j = k + 1
            while j < len(lines) and (
                not lines[j].strip()
                or lines[j].startswith("      ")
                or lines[j].lstrip().startswith("#")
                and lines[j].startswith("      ")
            ):
                if lines[j].strip() and not lines[j].lstrip().startswith("#"):
                    end = j + 1
                j += 1
            return end
        k += 1
    return None
