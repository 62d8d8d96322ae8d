"""dvc.yaml's stages against the repository: every dependency exists, and every params
file the reader reads is tracked where its sections are used."""

from __future__ import annotations

import yaml
from conftest import REPO

from ssmbench.dvc_params import untracked_studies

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
    """Each stage that reads the suite tracks `studies` and every study file whole: an edit
    anywhere in a study file, or a study file added to `studies`, is a changed param for
    `dvc status` (ssmbench.dvc_params, which `ssmbench check` runs)."""
    assert untracked_studies(REPO / "params.yaml") == []
    reading = [name for name in STAGES if name != "published"]  # published: the paper alone
    for name in reading:
        params = STAGES[name]["params"]
        keys = {p for p in params if isinstance(p, str)}
        assert {"studies", "suite"} <= keys, name
        whole = {k: v for p in params if isinstance(p, dict) for k, v in p.items()}
        assert whole == dict.fromkeys(_studies()), name  # whole files, no key lists
        assert not {"models", "suites"} & keys, name  # params.yaml holds none
    assert all(isinstance(p, str) for p in STAGES["published"]["params"])


def test_the_report_stages_track_every_source_s_catalog_rows():
    """The report groups datasets by the catalog's domains, whose rows live in each
    source's folder: both report stages depend on the catalog and on every registered
    source's rows, so a domain changed in one reruns them."""
    import inspect
    from pathlib import Path

    from ssmbench.data.source_registry import SOURCES

    rows = {
        Path(inspect.getfile(source.catalog)).with_name("catalog.py")
        for source in SOURCES.values()
        if source.catalog is not None
    }
    wanted = {"src/ssmbench/data/catalog.py", "src/ssmbench/data/catalog_entry.py"}
    wanted |= {path.relative_to(REPO).as_posix() for path in rows}
    assert len(wanted) == 2 + len(SOURCES)
    for name in ("report", "published"):
        missing = wanted - set(STAGES[name]["deps"])
        assert not missing, f"{name}: add to its deps in dvc.yaml: {sorted(missing)}"
