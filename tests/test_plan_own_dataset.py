"""A dataset of one's own, outside the catalog: `ssmbench plan` takes its size from its
prepared folder (meta.json, else X.npy's header, never the array), and before it is
prepared says it is not estimated and the command that prepares it, never a zero.

Real data: aeon's BasicMotions, fetched and prepared under another name, MyMotions, which
the catalog does not know; its bill must be BasicMotions' (whose size the catalog knows).
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO

from ssmbench.cli import main
from ssmbench.config import check_params, load_params
from ssmbench.data import sources
from ssmbench.data.catalog import catalog
from ssmbench.data.sizes import dataset_size, prepared_size
from ssmbench.plan import estimate, format_bill
from ssmbench.step_costs import COLUMNS, StepCosts

OWN = "MyMotions"
ROWS = [  # one point each for ms4 and a fitted family: every work scales from it
    "m,cpu,1,ms4,MS4N,1,3,100,0.001,0.5,0.1,2026-12-05,test",
    "m,cpu,1,quant,Quant,100,3,100,,2.0,0.5,2026-12-05,test",
]


def _costs(tmp_path: Path) -> StepCosts:
    path = tmp_path / "table.csv"
    path.write_text("# test\n" + ",".join(COLUMNS) + "\n" + "\n".join(ROWS) + "\n")
    return StepCosts.load(path)


def _archive(root: Path) -> Path:
    """An archive folder holding BasicMotions' files under the name MyMotions."""
    import aeon.datasets

    bundled = Path(aeon.datasets.__file__).resolve().parent / "data" / "BasicMotions"
    (root / OWN).mkdir(parents=True)
    for split in ("TRAIN", "TEST"):
        shutil.copyfile(bundled / f"BasicMotions_{split}.ts", root / OWN / f"{OWN}_{split}.ts")
    return root


def _params(tmp_path: Path) -> dict:
    params = load_params(REPO / "params.yaml")
    p = copy.deepcopy(params)
    p["paths"]["prepared"] = str(tmp_path / "prepared")
    p["benchmarks"]["uea"]["datasets"] = [*p["benchmarks"]["uea"]["datasets"], OWN]
    p["suites"]["own"] = {
        "benchmarks": {"uea": ["BasicMotions", OWN]},
        "models": ["MS4N", "Quant"],
        "folds": [0],
        "overrides": {"archive_dir": str(_archive(tmp_path / "archive"))},
    }
    p["suite"] = "own"
    check_params(p)
    return p


def _prepare(p: dict, tmp_path: Path) -> Path:
    settings = {**p["benchmarks"]["uea"], "archive_dir": str(tmp_path / "archive")}
    sources.fetch(OWN, tmp_path / "raw" / "uea", settings)
    return sources.prepare(OWN, tmp_path / "raw" / "uea", tmp_path / "prepared" / "uea", settings)


def test_the_catalog_does_not_know_the_dataset():
    assert OWN not in {e.name for e in catalog()}


def test_before_it_is_prepared_its_runs_are_not_estimated_and_say_why(tmp_path):
    p = _params(tmp_path)
    bill = estimate(p, _costs(tmp_path), "own")
    own = [e for e in bill.estimates if e.job.dataset == OWN]
    assert own and all(e.seconds is None for e in own)
    assert {e.size_class for e in own} == {"large"}  # unknown size: the last class
    assert all("prepare it first: snakemake --cores 1 prepared --config suite=own" in e.problem
               for e in own)  # fmt: skip
    text = format_bill(bill, p)
    assert "Not estimated (2 runs):" in text
    assert f"uea/{OWN}: not in the catalog" in text and "2 runs of MS4N, Quant" in text


def test_once_prepared_its_bill_is_that_of_the_same_data_the_catalog_knows(tmp_path):
    p = _params(tmp_path)
    folder = _prepare(p, tmp_path)
    size = prepared_size(folder)
    assert (size.N, size.C, size.L, size.n_classes) == (80, 6, 100, 4)
    assert (size.n_train, size.n_test) == (40, 40) and size.origin.endswith("meta.json")
    bill = estimate(p, _costs(tmp_path), "own")
    runs = {(e.job.dataset, e.job.model): e for e in bill.estimates}
    for model in ("MS4N", "Quant"):
        own, known = runs[(OWN, model)], runs[("BasicMotions", model)]
        assert own.problem is None and own.seconds is not None and own.seconds > 0
        assert (own.n_train, own.n_val, own.n_test, own.batch_size) == (
            known.n_train, known.n_val, known.n_test, known.batch_size)  # fmt: skip
        assert own.seconds == pytest.approx(known.seconds, rel=1e-12)
        # the size class the workflow gives its runs, from the same prepared size
        assert own.size_class == known.size_class == "small"
    assert "Not estimated" not in format_bill(bill, p)


def test_without_the_shape_in_meta_json_the_header_of_x_is_read(tmp_path, monkeypatch):
    p = _params(tmp_path)
    folder = _prepare(p, tmp_path)
    meta = json.loads((folder / "meta.json").read_text())
    for key in ("N", "C", "L"):
        del meta[key]
    (folder / "meta.json").write_text(json.dumps(meta))

    def no_array(*args, **kwargs):
        raise AssertionError("the array was loaded: only its header should be read")

    monkeypatch.setattr(np, "load", no_array)
    size = dataset_size(tmp_path / "prepared", "uea", OWN, "uea")
    assert (size.N, size.C, size.L, size.n_classes) == (80, 6, 100, 4)
    assert size.origin.endswith("X.npy (header)")


def test_a_catalog_dataset_keeps_the_catalogs_size(tmp_path):
    size = dataset_size(tmp_path / "nothing-prepared", "uea", "BasicMotions", "uea")
    assert (size.N, size.C, size.L, size.origin) == (80, 6, 100, "catalog")


def test_cli_plan_names_the_dataset_and_the_prepare_command(tmp_path, capsys):
    from conftest import write_params

    p = _params(tmp_path)
    root = tmp_path / "project"
    root.mkdir()
    write_params(root, p)
    table = tmp_path / "table.csv"
    table.write_text("# test\n" + ",".join(COLUMNS) + "\n" + "\n".join(ROWS) + "\n")
    argv = ["--params", str(root / "params.yaml"), "--suite", "own", "plan", "--table", str(table)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"uea/{OWN}: not in the catalog" in out
    assert "prepare it first: snakemake --cores 1 prepared --config suite=own" in out
