"""dvc.yaml's stages against the repository: every dependency exists, and every params
file the reader reads is tracked where its sections are used."""

from __future__ import annotations

import yaml
from conftest import REPO

STAGES = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]


def _studies() -> list[str]:
    return yaml.safe_load((REPO / "params.yaml").read_text())["studies"]


def test_every_dependency_is_in_the_repository_or_an_earlier_stage_output():
    """A dependency that names a moved or deleted module would make `dvc repro` fail (or
    silently track nothing): each is a file of the repository or an output of a stage."""
    outs = {
        next(iter(out)) if isinstance(out, dict) else out
        for stage in STAGES.values()
        for out in stage.get("outs", [])
    }
    for name, stage in STAGES.items():
        for dep in stage.get("deps", []):
            assert (REPO / dep).exists() or dep in outs, f"{name}: dependency {dep} does not exist"


def test_dvc_tracks_every_file_the_reader_reads():
    """Each stage that tracks models, suites or tuning tracks them in every study file:
    an edit to a study's suite or model entry is a changed param for `dvc status`."""
    sections = {"models", "suites", "tuning"}
    for name, stage in STAGES.items():
        shared = [p for p in stage.get("params", []) if isinstance(p, str)]
        by_file = {k: v for p in stage.get("params", []) if isinstance(p, dict)
                   for k, v in p.items()}  # fmt: skip
        tracked = sections & set(shared) | {k for keys in by_file.values() for k in keys}
        if not tracked:
            continue
        assert set(by_file) == set(_studies()), name
        for file, keys in by_file.items():
            study_keys = set(yaml.safe_load((REPO / file).read_text()))
            assert set(keys) == study_keys & tracked, (name, file)
        assert not {"models", "suites"} & set(shared), name  # params.yaml holds none
