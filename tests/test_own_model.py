"""A researcher's own model, named by import path (``family: package.module:Class``): the
worked example of examples/own_model checked, trained with a variant of it in the real
workflow and in Table 5;
its hyperparameters typed from its constructor; its code digest covering its own files;
each bad entry one clear error before any job."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from conftest import REPO, make_project, tool_env

from ssmbench.config import ConfigError, check_params
from ssmbench.params_file import read_params

EXAMPLE = REPO / "examples" / "own_model"
FAMILY = "mymodels.pool:MeanPoolLinear"


@pytest.fixture()
def own_path(monkeypatch, tmp_path):
    """A copy of the example's package on sys.path (as PYTHONPATH puts it), forgotten
    afterwards so that each test imports its own copy."""
    shutil.copytree(EXAMPLE / "mymodels", tmp_path / "mymodels")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "mymodels" or m.startswith("mymodels.")]:
        monkeypatch.delitem(sys.modules, name)
    from ssmbench.code_digest import training_code_digest
    from ssmbench.models import FAMILIES

    monkeypatch.setattr(FAMILIES, "_imported", {})
    training_code_digest.cache_clear()
    yield tmp_path
    training_code_digest.cache_clear()


def _params(entry: dict) -> dict:
    params = read_params(REPO / "params.yaml")
    params["models"]["Own"] = entry
    return params


def _problems(entry: dict) -> str:
    with pytest.raises(ConfigError) as err:
        check_params(_params(entry))
    return str(err.value)


def test_an_own_family_is_checked_like_a_builtin(own_path):
    check_params(_params({"family": FAMILY, "hidden": 16, "dropout": 0.1}))
    message = _problems({"family": FAMILY, "hiden": 16})
    assert "models.Own" in message and "unknown hyperparameter 'hiden'" in message
    assert "allowed: ['dropout', 'hidden']" in message
    assert "must be an integer" in _problems({"family": FAMILY, "hidden": "wide"})


@pytest.mark.parametrize(
    "family, expected",
    [
        ("nosuchpackage.models:Net", "module 'nosuchpackage.models' does not import "
         "(ModuleNotFoundError: No module named 'nosuchpackage'); put its folder on PYTHONPATH"),
        ("mymodels.pool:Nope", "module 'mymodels.pool' has no attribute 'Nope' "
         "(its classes: MeanPoolLinear)"),
        ("mymodels.features:mean_and_spread", "is not a class"),
        ("mymodels.bad:NotAModel", "NotAModel is neither a torch.nn.Module nor a subclass of "
         "ssmbench.models.estimators.Estimator"),
        ("mymodels.bad:NoContract", "NoContract.__init__ lacks n_classes, length"),
        ("mymodels.bad:Broken", "module 'mymodels.bad' does not import"),
        ("mymodels.bad:Needs", "has no default for width; give it in the entry of 'Own'"),
    ],
)  # fmt: skip
def test_a_bad_family_is_one_clear_error_naming_the_entry(own_path, family, expected):
    (own_path / "mymodels" / "bad.py").write_text(
        textwrap.dedent("""
        import torch.nn as nn

        class NotAModel:
            def __init__(self, n_channels: int, n_classes: int, length: int): ...

        class NoContract(nn.Module):
            def __init__(self, n_channels: int): super().__init__()

        class Needs(nn.Module):
            def __init__(self, n_channels: int, n_classes: int, length: int, width: int):
                super().__init__()
        """)
        + ("raise RuntimeError('half-written')\n" if family.endswith("Broken") else "")
    )
    message = _problems({"family": family})
    assert "models.Own: " in message and expected in message, message


def test_the_digest_covers_the_own_package(own_path):
    from ssmbench.code_digest import _syntax, digest_name, digested_modules, imported_family_root
    from ssmbench.code_digest import training_code_digest as digest

    def again():  # a new process: nothing parsed yet
        digest.cache_clear()
        _syntax.cache_clear()
        return digest(FAMILY)

    names = [digest_name(p, imported_family_root(FAMILY)) for p in digested_modules(FAMILY)]
    assert names[-2:] == ["ext:mymodels/features.py", "ext:mymodels/pool.py"]
    assert "models/registry.py" in names and "train/protocol.py" in names
    before = digest(FAMILY)
    assert before != digest("ms4")
    features = own_path / "mymodels" / "features.py"
    features.write_text(features.read_text() + "\n# a comment changes nothing\n")
    assert again() == before
    features.write_text(features.read_text().replace("unbiased=False", "correction=0"))
    assert again() != before  # an imported module of the package: its edit counts


def _check_model(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "ssmbench", "check-model", *args], capture_output=True,
        text=True, env=env, cwd=REPO, timeout=300,
    )  # fmt: skip


def test_check_model_passes_the_example_and_fails_a_broken_class(tmp_path):
    env = {**tool_env(), "PYTHONPATH": f"{REPO / 'src'}:{EXAMPLE}"}
    ok = _check_model(FAMILY, env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "10 of 10 checks passed" in ok.stdout
    (tmp_path / "lazy.py").write_text(
        textwrap.dedent("""
        import torch, torch.nn as nn

        class Lazy(nn.Module):
            def __init__(self, n_channels: int, n_classes: int, length: int):
                super().__init__()
                self.head = nn.Linear(n_channels, n_classes)
                self.unused = nn.Linear(3, 3)

            def forward(self, x):
                return self.head(x.mean(-1))
        """)
    )
    env["PYTHONPATH"] += f":{tmp_path}"
    bad = _check_model("lazy:Lazy", env=env)
    assert bad.returncode == 1
    assert "FAIL  one step lowers the loss; every parameter gets a gradient" in bad.stdout
    assert "unused.weight" in bad.stdout
    assert "does not meet the model contract (1 check failed)" in bad.stderr
    missing = _check_model("nosuch.module:Net", env=env)
    assert missing.returncode == 2 and "put its folder on PYTHONPATH" in missing.stderr


@pytest.mark.integration
def test_the_worked_example_trains_in_the_workflow_and_has_its_row_in_table5(tmp_path):
    """examples/own_model as its README says: the study file added to `studies`, the
    package on PYTHONPATH, the suite run by the real snakemake; MeanPool's row is in Table
    5 beside MS4N's, and editing the model's module makes its records stale, not MS4N's."""

    def own(params):
        params["suite"] = "own-model"

    project = make_project(tmp_path / "proj", own)
    shutil.copytree(EXAMPLE, project / "examples" / "own_model")
    study = project / "examples" / "own_model" / "study.yaml"
    body = yaml.safe_load(study.read_text())
    body["suites"]["own-model"]["overrides"] = {"max_epochs": 2}
    body["suites"]["own-model"]["folds"] = [0]
    body["suites"]["own-model"]["benchmarks"] = {"uea": ["BasicMotions"]}
    study.write_text(yaml.safe_dump(body, sort_keys=False))
    main = yaml.safe_load((project / "params.yaml").read_text())
    main["studies"].append("examples/own_model/study.yaml")
    (project / "params.yaml").write_text(yaml.safe_dump(main, sort_keys=False))
    env = tool_env(project)
    env["PYTHONPATH"] += f":{project / 'examples' / 'own_model'}"
    snakemake = str(Path(sys.executable).parent / "snakemake")

    def run(*cmd, fails=False):
        proc = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True,
                              timeout=600)  # fmt: skip
        assert (proc.returncode != 0) == fails, proc.stdout[-4000:] + proc.stderr[-4000:]
        return proc.stdout + proc.stderr

    # DVC must see the study file and the model's code: check says which lines to add
    refused = run(sys.executable, "-m", "ssmbench", "check", fails=True)
    hint = "of each (or run `ssmbench check --add-to-dvc`):\n      - examples/own_model/"
    assert f"params {hint}study.yaml:" in refused
    assert "the code of models MeanPool, MeanPool-h8" in refused
    assert f"deps {hint}mymodels" in refused
    added = run(sys.executable, "-m", "ssmbench", "check", "--add-to-dvc")
    assert added.count("dvc.yaml: added to ") == 7  # 4 stages' params, 3 stages' deps
    assert "added to train: - examples/own_model/mymodels" in added
    run(sys.executable, "-m", "ssmbench", "check")
    run(snakemake, "--cores", "2")
    record = json.loads((project / "results/runs/uea/BasicMotions/MeanPool/fold0.json").read_text())
    assert record["family"] == FAMILY and record["epochs_run"] == 2
    variant = json.loads((project / "results/runs/uea/BasicMotions/MeanPool-h8/fold0.json")
                         .read_text())  # fmt: skip
    assert variant["model_params"]["hidden"] == 8 and record["model_params"]["hidden"] == 64
    rows = (project / "results/tables/table5.md").read_text()
    for column in ("MeanPool (ours)", "MeanPool-h8 (ours)", "MS4N (ours)", "MS4N (paper)"):
        assert column in rows, rows
    assert "MeanPool (paper)" not in rows  # no published figure: no column of dashes
    basic = next(line for line in rows.splitlines() if line.startswith("| BasicMotions"))
    assert basic.count("±") >= 4  # MS4N ours and paper, MeanPool and its variant ours

    pool = project / "examples" / "own_model" / "mymodels" / "features.py"
    pool.write_text(pool.read_text().replace("unbiased=False", "correction=0"))
    status = run(sys.executable, "-m", "ssmbench", "status")
    stale = [line.split()[1] for line in status.splitlines() if line.startswith("stale")]
    assert sorted(stale) == [f"uea/BasicMotions/{m}/fold0" for m in ("MeanPool-h8", "MeanPool")]


def test_a_namespace_package_is_digested_by_its_folder(tmp_path, monkeypatch):
    """A package without __init__.py: its modules are named from the folder it lies in."""
    from ssmbench.code_digest import digest_name, digested_modules, imported_family_root
    from ssmbench.dvc_params import _model_code
    from ssmbench.models import FAMILIES

    (tmp_path / "nsmodels").mkdir()
    for name in ("pool.py", "features.py"):
        shutil.copy(EXAMPLE / "mymodels" / name, tmp_path / "nsmodels" / name)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(FAMILIES, "_imported", {})
    family = "nsmodels.pool:MeanPoolLinear"
    root = imported_family_root(family)
    names = [digest_name(p, root) for p in digested_modules(family)]
    assert names[-2:] == ["ext:nsmodels/features.py", "ext:nsmodels/pool.py"]
    assert _model_code(family) == (tmp_path / "nsmodels").resolve()
