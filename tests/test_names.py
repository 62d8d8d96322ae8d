"""Names are names, never paths: every benchmark, dataset, model and suite name that
becomes a path component is checked against one pattern (ssmbench.data.names) and against
params.yaml, and an output path outside the configured roots is refused, before anything
is read or written. Each probe runs the real CLI and checks that the tree is unchanged."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from ssmbench.cli import main
from ssmbench.config import ConfigError, Job
from ssmbench.data.errors import DataError
from ssmbench.data.names import BENCHMARK_PATTERN, NAME_PATTERN, name_problem
from ssmbench.data.sources import fetch, prepare
from ssmbench.params_file import SCHEMA_PATH, read_params

TRAIN = ["train", "--benchmark", "uea", "--dataset", "BasicMotions", "--model", "MS4N"]


def _tree(root: Path) -> dict[str, tuple]:
    """Every path under `root` with what it holds (a link's target, a file's bytes)."""
    tree = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        if path.is_symlink():
            tree[key] = ("link", str(path.readlink()))
        elif path.is_file():
            tree[key] = ("file", path.read_bytes())
        else:
            tree[key] = ("dir",)
    return tree


@pytest.fixture()
def project(tmp_path, monkeypatch):
    """A project folder holding the shipped params.yaml (cwd), beside an `outside` folder
    that no command may write into."""
    root = tmp_path / "project"
    root.mkdir()
    (tmp_path / "outside").mkdir()
    shutil.copy(REPO / "params.yaml", root / "params.yaml")
    shutil.copytree(REPO / "params", root / "params")
    monkeypatch.chdir(root)
    return root


def _refused(argv: list[str], capsys, tmp_path: Path) -> str:
    """Run the CLI; it must exit 2 and leave every file under tmp_path as it was. Returns
    its message."""
    before = _tree(tmp_path)
    assert main(argv) == 2
    assert _tree(tmp_path) == before
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip()


# --- the one pattern -----------------------------------------------------------------


def test_the_schema_and_the_workflow_use_the_name_patterns():
    schema = yaml.safe_load(SCHEMA_PATH.read_text())
    assert schema["$defs"]["name"]["pattern"] == f"^{NAME_PATTERN}$"
    common = (REPO / "workflow" / "rules" / "common.smk").read_text()
    block = re.search(r"wildcard_constraints:\n((?:    .*\n)+)", common).group(1)
    assert "benchmark=BENCHMARK_PATTERN," in block
    assert "dataset=NAME_PATTERN," in block and "model=NAME_PATTERN," in block


def test_the_shipped_names_match_the_patterns():
    params = read_params(REPO / "params.yaml")
    for bench, entry in params["benchmarks"].items():
        assert re.fullmatch(BENCHMARK_PATTERN, bench)
        assert all(re.fullmatch(NAME_PATTERN, ds) for ds in entry["datasets"])
    assert all(re.fullmatch(NAME_PATTERN, m) for m in params["models"])


@pytest.mark.parametrize(
    "value, why",
    [
        ("", "an empty dataset name"),
        ("..", "it leads out of its folder (..)"),
        ("BasicMotions/../BasicMotions", "it leads out of its folder (..)"),
        ("/tmp/evil", "it is an absolute path"),
        ("C:\\evil", "it is an absolute path"),
        ("a/b", "it holds a path separator"),
        ("a\\b", "it holds a path separator"),
        ("-x", "it holds a character a name may not hold"),
        ("Basic Motions", "it holds a character a name may not hold"),
        ("BasicMotions\n", "it holds a character a name may not hold"),
    ],
)
def test_a_path_is_not_a_name(value, why):
    assert why in name_problem("dataset", value)
    assert name_problem("dataset", "BasicMotions") is None


def test_a_benchmark_name_is_lower_case():
    assert name_problem("benchmark", "uea_drop") is None
    assert "a benchmark name matches [a-z0-9][a-z0-9_]*" in name_problem("benchmark", "UEA")


def test_a_job_is_made_of_names_only():
    with pytest.raises(ConfigError, match=r"'\.\./x' is not a dataset name"):
        Job("uea", "../x", "MS4N", 0)
    with pytest.raises(ConfigError, match=r"'a/b' is not a model name"):
        Job("uea", "BasicMotions", "a/b", 0)
    with pytest.raises(ConfigError, match=r"fold -1 is not a fold number"):
        Job("uea", "BasicMotions", "MS4N", -1)


@pytest.mark.parametrize("step", ["fetch", "prepare"])
def test_the_data_entry_points_refuse_a_path(step, tmp_path):
    settings = {"source": "uea", "download": False}
    before = _tree(tmp_path)
    with pytest.raises(DataError, match=rf"{step}: '\.\./x' is not a dataset name"):
        if step == "fetch":
            fetch("../x", tmp_path / "raw", settings)
        else:
            prepare("../x", tmp_path / "raw", tmp_path / "prepared", settings)
    assert _tree(tmp_path) == before


# --- the CLI: each probe exits 2 with a message naming the argument, writing nothing --


def test_a_dataset_with_dotdot_is_refused(project, capsys, tmp_path):
    err = _refused(
        ["train", "--benchmark", "uea", "--dataset", "BasicMotions/../BasicMotions",
         "--model", "MS4N", "--fold", "0"],
        capsys, tmp_path,
    )  # fmt: skip
    assert err == (
        "ssmbench train: error: --dataset: 'BasicMotions/../BasicMotions' is not a dataset "
        "name: it leads out of its folder (..); a dataset name matches [A-Za-z0-9][A-Za-z0-9_-]*"
    )


@pytest.mark.parametrize("command", ["fetch", "prepare"])
def test_fetch_and_prepare_refuse_a_dotdot_dataset(command, project, capsys, tmp_path):
    argv = [command, "--benchmark", "uea", "--dataset", "BasicMotions/../BasicMotions"]
    err = _refused(argv, capsys, tmp_path)
    assert err.startswith(f"ssmbench {command}: error: --dataset: 'BasicMotions/../BasicMotions'")


def test_a_model_with_a_slash_is_refused(project, capsys, tmp_path):
    argv = [*TRAIN[:-1], "MS4N/../../../outside/x", "--fold", "0"]
    err = _refused(argv, capsys, tmp_path)
    assert "--model: 'MS4N/../../../outside/x' is not a model name" in err


def test_an_absolute_dataset_is_refused(project, capsys, tmp_path):
    outside = str(tmp_path / "outside" / "evil")
    argv = ["train", "--benchmark", "uea", "--dataset", outside, "--model", "MS4N", "--fold", "0"]
    err = _refused(argv, capsys, tmp_path)
    assert f"--dataset: {outside!r} is not a dataset name: it is an absolute path" in err


def test_an_empty_name_is_refused(project, capsys, tmp_path):
    err = _refused(["fetch", "--benchmark", "uea", "--dataset", ""], capsys, tmp_path)
    assert err == "ssmbench fetch: error: --dataset: an empty dataset name"
    err = _refused(["prepare", "--benchmark", "", "--dataset", "BasicMotions"], capsys, tmp_path)
    assert err == "ssmbench prepare: error: --benchmark: an empty benchmark name"


def test_a_suite_and_a_fold_are_checked(project, capsys, tmp_path):
    err = _refused(["--suite", "../x", "status"], capsys, tmp_path)
    assert "--suite: '../x' is not a suite name: it leads out of its folder (..)" in err
    err = _refused([*TRAIN, "--fold", "-1"], capsys, tmp_path)
    assert err == "ssmbench train: error: --fold: -1 is not a fold number (an integer >= 0)"


def test_a_dataset_not_in_params_is_refused(project, capsys, tmp_path):
    err = _refused(["prepare", "--benchmark", "uea", "--dataset", "NoSuchSet"], capsys, tmp_path)
    assert err.startswith(
        "ssmbench prepare: error: --dataset: 'NoSuchSet' is not a dataset of benchmark 'uea' "
        "in params.yaml (benchmarks.uea.datasets: "
    )
    assert "BasicMotions" in err


def test_a_benchmark_or_model_not_in_params_is_refused(project, capsys, tmp_path):
    err = _refused(["fetch", "--benchmark", "ucr", "--dataset", "BasicMotions"], capsys, tmp_path)
    assert err.startswith("ssmbench fetch: error: --benchmark: 'ucr' is not a benchmark of ")
    err = _refused([*TRAIN[:-1], "NoSuchModel", "--fold", "0"], capsys, tmp_path)
    assert err.startswith("ssmbench train: error: --model: 'NoSuchModel' is not a model of ")


def test_a_record_outside_paths_runs_is_refused(project, capsys, tmp_path):
    outside = tmp_path / "outside" / "fold0.json"
    err = _refused([*TRAIN, "--fold", "0", "--record", str(outside)], capsys, tmp_path)
    assert err == (
        f"ssmbench train: error: --record: {outside} is not the record of "
        "uea/BasicMotions/MS4N/fold0, which is results/runs/uea/BasicMotions/MS4N/fold0.json "
        "(paths.runs in params.yaml); leave --record out or pass that path"
    )


def test_a_record_of_another_run_is_refused(project, capsys, tmp_path):
    other = "results/runs/uea/BasicMotions/MS4N/fold1.json"
    err = _refused([*TRAIN, "--fold", "0", "--record", other], capsys, tmp_path)
    assert f"--record: {other} is not the record of uea/BasicMotions/MS4N/fold0" in err


def test_the_record_path_the_train_rule_passes_is_accepted(project, capsys):
    record = "results/runs/uea/BasicMotions/MS4N/fold0.json"
    assert main([*TRAIN, "--fold", "0", "--record", f"./{record}"]) != 0  # no prepared data
    err = capsys.readouterr().err
    assert "--record" not in err and "prepared" in err


def test_a_root_that_leads_outside_through_a_link_is_refused(project, capsys, tmp_path):
    (project / "results" / "runs").mkdir(parents=True)
    (project / "results" / "runs" / "uea").symlink_to(tmp_path / "outside")
    err = _refused([*TRAIN, "--fold", "0"], capsys, tmp_path)
    assert err.startswith(
        "ssmbench train: error: results/runs/uea/BasicMotions/MS4N/fold0.json: resolves to "
        f"{tmp_path / 'outside' / 'BasicMotions' / 'MS4N' / 'fold0.json'}, outside paths.runs"
    )


# --- params.yaml: every name that becomes a path component --------------------------


def _write_params(root: Path, edit) -> Path:
    params = read_params(REPO / "params.yaml")
    edit(params)
    path = root / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


def _rename_uea(params: dict, name: str) -> None:
    params["benchmarks"][name] = params["benchmarks"].pop("uea")
    for suite in params["suites"].values():
        if "uea" in suite["benchmarks"]:
            suite["benchmarks"][name] = suite["benchmarks"].pop("uea")
    params["benchmarks"]["uea_drop"]["derived_from"] = name


def test_a_benchmark_key_that_is_a_path_is_refused(project, capsys, tmp_path):
    _write_params(project, lambda p: _rename_uea(p, "../uea"))
    err = _refused(["check"], capsys, tmp_path)
    why = (
        "'../uea' is not a benchmark name: it leads out of its folder (..); a benchmark name "
        "matches [a-z0-9][a-z0-9_]*"
    )
    assert f"  benchmarks: {why}" in err.splitlines()
    assert f"  benchmarks.uea_drop.derived_from: {why}" in err.splitlines()
    assert f"  suites.default.benchmarks: {why}" in err.splitlines()


def test_a_derived_from_that_is_a_path_is_refused(project, capsys, tmp_path):
    def edit(params):
        params["benchmarks"]["uea_drop"]["derived_from"] = "../../outside"

    _write_params(project, edit)
    err = _refused(["--suite", "tiny", "check"], capsys, tmp_path)
    assert err.splitlines()[1:] == [
        "  benchmarks.uea_drop.derived_from: '../../outside' is not a benchmark name: it leads "
        "out of its folder (..); a benchmark name matches [a-z0-9][a-z0-9_]*"
    ]


@pytest.mark.integration
@pytest.mark.parametrize(
    "target, problem",
    [
        (
            "results/runs/uea/BasicMotions/../x/MS4N/fold0.json",
            "dataset wildcard of a target: 'x' is not a dataset of benchmark 'uea'",
        ),
        (
            "results/runs/uea/BasicMotions/NoSuchModel/fold0.json",
            "model wildcard of a target: 'NoSuchModel' is not a model of params.yaml",
        ),
        ("data/prepared/uea/Nope", "dataset wildcard of a target: 'Nope' is not a dataset"),
    ],
)
def test_a_snakemake_target_of_an_undefined_name_fails_before_any_job(tmp_path, target, problem):
    """Snakemake normalises a target path (`a/../x`) and would plan fetch, prepare and
    train jobs for a dataset params.yaml does not have; the DAG refuses it instead."""
    import subprocess

    from conftest import make_project, tool_env

    project = make_project(tmp_path / "project")
    done = subprocess.run(
        ["snakemake", "-n", "--cores", "1", target],
        cwd=project, env=tool_env(project), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode != 0
    assert problem in done.stdout + done.stderr, done.stdout + done.stderr
    assert not (project / "data").exists() and not (project / "results" / "runs").exists()
