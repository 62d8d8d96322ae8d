"""Every study file of params.yaml's `studies` is a DVC param of each stage that reads the
suite (ssmbench.dvc_params): the check on scratch copies of dvc.yaml that miss one, through
`ssmbench check` and Snakemake's parse; and, through the real dvc, a study file of one's
own added as the check says, whose edit `dvc status` then sees."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO, make_project, tool_env

from ssmbench.cli import main
from ssmbench.config import ConfigError
from ssmbench.dvc_params import check_studies_tracked, untracked_studies

STAGES_READING_THE_SUITE = ("data", "tune", "train", "report")
#: a study file of one's own: one suite, one run of one epoch
MINE = {
    "suites": {
        "mine": {
            "description": "a study of one's own: S4D on BasicMotions, 1 epoch",
            "benchmarks": {"uea": ["BasicMotions"]},
            "models": ["S4D"],
            "folds": [0],
            "overrides": {"max_epochs": 1},
        }
    }
}


def _with_study(root: Path, suite: str | None = None) -> Path:
    """params/mine.yaml (MINE) added to `root`'s params.yaml studies (and its suite made
    `suite`); dvc.yaml as it was. Returns params.yaml."""
    (root / "params").mkdir(exist_ok=True)
    (root / "params" / "mine.yaml").write_text(yaml.safe_dump(MINE, sort_keys=False))
    config = root / "params.yaml"
    params = yaml.safe_load(config.read_text())
    params["studies"].append("params/mine.yaml")
    if suite is not None:
        params["suite"] = suite
    config.write_text(yaml.safe_dump(params, sort_keys=False))
    return config


def _scratch(tmp_path: Path) -> Path:
    """params.yaml, params/ and dvc.yaml of the repository, copied into tmp_path."""
    for name in ("params.yaml", "dvc.yaml"):
        shutil.copy2(REPO / name, tmp_path / name)
    shutil.copytree(REPO / "params", tmp_path / "params")
    return tmp_path


def _add_lines(pipeline: Path, message: str) -> None:
    """Do what the check's message says: its last line added to the params of each stage
    it names, as the first entry."""
    line = message.splitlines()[-1]
    named = re.search(r"stages? (.*?) do(?:es)? not track", message).group(1)
    stages = re.split(r", | and ", named)
    text = pipeline.read_text()
    for stage in stages:
        text = re.sub(
            rf"(^  {re.escape(stage)}:\n(?:    .*\n|\s*#.*\n)*?    params:\n)",
            rf"\g<1>{line}\n",
            text,
            count=1,
            flags=re.M,
        )
    pipeline.write_text(text)


def test_a_study_file_dvc_yaml_does_not_list_is_refused_with_the_lines_to_add(tmp_path):
    root = _scratch(tmp_path)
    config = _with_study(root)
    with pytest.raises(ConfigError) as refused:
        check_studies_tracked(config)
    message = str(refused.value)
    assert message == (
        f"{root}/dvc.yaml: stages data, tune, train and report do not track params/mine.yaml, "
        "a study file of params.yaml's studies, so `dvc status` and `dvc repro` would not "
        "see an edit to it; add this line to the params of each (or run `ssmbench check "
        "--add-to-dvc`):\n"
        "      - params/mine.yaml:"
    )
    _add_lines(root / "dvc.yaml", message)
    assert untracked_studies(config) == []  # the lines as given are enough
    stages = yaml.safe_load((root / "dvc.yaml").read_text())["stages"]
    for name in STAGES_READING_THE_SUITE:
        assert {"params/mine.yaml": None} in stages[name]["params"], name
    assert {"params/mine.yaml": None} not in stages["published"]["params"]  # reads no suite


def test_studies_itself_and_a_partial_key_list_are_untracked(tmp_path):
    """A stage without `studies` misses a study file added to it; one that lists some keys
    of a study file misses an edit to the others."""
    root = _scratch(tmp_path)
    pipeline = root / "dvc.yaml"
    text = pipeline.read_text()
    # the train stage without `studies`; the report stage with ms4.yaml's suites alone
    text = re.sub(r"(  train:\n(?:.*\n)*?      - suite\n)      - studies\n", r"\1", text)
    text = re.sub(
        r"(  report:\n(?:.*\n)*?      - params/ms4.yaml:)\n", r"\1\n          - suites\n", text
    )
    pipeline.write_text(text)
    untracked = untracked_studies(root / "params.yaml")
    assert [(u.entry, u.stages, u.line) for u in untracked] == [
        ("studies", ("train",), "- studies"),
        ("params/ms4.yaml", ("report",), "- params/ms4.yaml:"),
    ]
    assert untracked[0].message() == (
        "dvc.yaml: stage train does not track params.yaml's studies (the list of study "
        "files), so `dvc status` and `dvc repro` would not see an edit to it; add this line "
        "to the params of that stage (or run `ssmbench check --add-to-dvc`):\n      - studies"
    )
    # a key list that holds every top-level key of the file tracks it all
    text = text.replace("          - suites\n", "          - suites\n          - models\n", 1)
    pipeline.write_text(text)
    assert [u.entry for u in untracked_studies(root / "params.yaml")] == ["studies"]


def test_no_dvc_yaml_or_another_params_file_is_not_checked(tmp_path):
    root = _scratch(tmp_path)
    config = _with_study(root)
    other = root / "other.yaml"
    shutil.copy2(config, other)
    assert untracked_studies(other) == []  # DVC reads params.yaml, not other.yaml
    (root / "dvc.yaml").unlink()
    assert untracked_studies(config) == []


def test_ssmbench_check_refuses_before_anything_else(tmp_path, capsys):
    root = _scratch(tmp_path)
    config = _with_study(root)
    assert main(["--params", str(config), "check"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ssmbench check: error: ") and "params/mine.yaml" in err
    assert err.rstrip().endswith("      - params/mine.yaml:")


@pytest.mark.integration
def test_a_study_file_of_ones_own_reaches_dvc_status(tmp_path):
    """The whole path a user takes: a study file added to `studies` is refused by
    `ssmbench check` and by Snakemake until dvc.yaml lists it; then `dvc repro` runs its
    suite, `dvc status` is up to date, and an edit to the study file is a changed param of
    the stages that read the suite, as `ssmbench status` says the run is stale."""
    project = make_project(tmp_path / "proj")
    env = tool_env(project)
    _with_study(project, suite="mine")

    def run(cmd, should_fail=False) -> str:
        proc = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True,
                              timeout=600)  # fmt: skip
        output = proc.stdout + proc.stderr
        assert (proc.returncode != 0) == should_fail, f"{cmd}: {proc.returncode}\n{output}"
        return output

    ssmbench = [sys.executable, "-m", "ssmbench"]
    refused = run([*ssmbench, "check"], should_fail=True)
    assert "stages data, tune, train and report do not track params/mine.yaml" in refused
    parsed = run(["snakemake", "-n", "--cores", "1"], should_fail=True)
    assert "do not track params/mine.yaml" in parsed
    message = refused.split("error: ", 1)[1].strip()
    _add_lines(project / "dvc.yaml", message)
    assert "suite 'mine'" in run([*ssmbench, "check"])

    run(["git", "init", "-q"])
    run(["dvc", "init", "-q"])
    run(["dvc", "config", "core.analytics", "false"])
    # up to the train stage: the report stage (25 s of drawing) tracks the file alike
    # (test_a_study_file_dvc_yaml_does_not_list_is_refused_with_the_lines_to_add)
    run(["dvc", "repro", "train"])
    assert "up to date" in run(["dvc", "status", "--with-deps", "train"])
    assert (project / "results/runs/uea/BasicMotions/S4D/fold0.json").is_file()
    assert "1 done" in run([*ssmbench, "status"])

    study = project / "params" / "mine.yaml"
    study.write_text(study.read_text().replace("max_epochs: 1", "max_epochs: 2"))
    status = run(["dvc", "status", "--with-deps", "train"])
    blocks = dict(re.findall(r"^(\w+):\n((?:\t.*\n?)*)", status, re.M))
    for stage in ("data", "tune", "train"):
        assert "params/mine.yaml:\n\t\t\tmodified:           suites" in blocks.get(stage, ""), (
            stage,
            status,
        )
    assert "1 stale" in run([*ssmbench, "status"])


def test_add_to_dvc_writes_the_lines_check_asks_for_and_nothing_else(tmp_path):
    """`ssmbench check --add-to-dvc`: the missing study file goes at the end of each
    stage's params, comments and every other line kept; run again, it adds nothing; a
    stage without a params list is refused with the file left as it was."""
    import shutil

    from ssmbench.dvc_params import add_missing_lines, untracked_studies
    from ssmbench.params_file import ConfigError

    for name in ("params.yaml", "dvc.yaml"):
        shutil.copy(REPO / name, tmp_path / name)
    shutil.copytree(REPO / "params", tmp_path / "params")
    (tmp_path / "params" / "mine.yaml").write_text("models: {}\n")
    text = (tmp_path / "params.yaml").read_text()
    (tmp_path / "params.yaml").write_text(text.replace(
        "studies: [params/ms4.yaml, params/tides.yaml]",
        "studies: [params/ms4.yaml, params/tides.yaml, params/mine.yaml]"))  # fmt: skip
    before = (tmp_path / "dvc.yaml").read_text().splitlines()
    added = add_missing_lines(tmp_path / "params.yaml")
    assert added == [f"{s}: - params/mine.yaml:" for s in ("data", "tune", "train", "report")]
    after = (tmp_path / "dvc.yaml").read_text().splitlines()
    assert [line for line in after if line not in before] == ["      - params/mine.yaml:"] * 4
    assert [line for line in after if line != "      - params/mine.yaml:"] == before
    assert untracked_studies(tmp_path / "params.yaml") == []
    assert add_missing_lines(tmp_path / "params.yaml") == []
    inline = (
        "stages:\n  data:\n    cmd: snakemake --cores all prepared\n"
        "    params: [suite, studies, {params/ms4.yaml: null}, {params/tides.yaml: null}]\n"
    )
    (tmp_path / "dvc.yaml").write_text(inline)
    with pytest.raises(ConfigError, match="stage data has no `params:` list this can add to"):
        add_missing_lines(tmp_path / "params.yaml")
    assert (tmp_path / "dvc.yaml").read_text() == inline
