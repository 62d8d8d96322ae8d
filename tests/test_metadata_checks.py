"""What a prepared dataset says about itself is checked against what its files hold, on
real data (aeon's BasicMotions, and its drop-rate variant with timestamps and a mask):

* the rows, channels, length and classes read from a UEA ``.ts`` pair against the
  catalog's entry (a file cut short at a line end reads as fewer rows and nothing else);
  a difference the catalog records with a reason, or a subset that declares itself
  (``@subset`` in the ``.ts`` header), is prepared and recorded instead;
* ``meta.json``'s ``n_classes`` against the labels of ``y.npy``;
* the size of the prepared X against the raw files it is made from (a cap);
* timestamps that never advance, and rows with no observed value, for time-aware models;
* a test-indices file that leaves no row to train on, named.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO

from ssmbench.data import fetch_uea, prepare_uea
from ssmbench.data.errors import DataError
from ssmbench.data.monster.fetch import fetch_monster
from ssmbench.data.monster.prepare import prepare_monster
from ssmbench.data.store import PreparedDataset
from ssmbench.data.uea import catalog
from ssmbench.data.uea import prepare as uea_prepare
from ssmbench.data.uea_drop.prepare import prepare_drop_rate_variant
from ssmbench.train.fold_split import split_fold

NAME = "BasicMotions"


def _bundled(name: str = NAME) -> Path:
    import aeon.datasets

    return Path(aeon.datasets.__file__).resolve().parent / "data" / name


def _archive(tmp_path: Path, name: str = NAME, edit=None) -> Path:
    """An archive_dir with ``name``'s two real files (BasicMotions' content), each passed
    through ``edit(split, lines) -> lines`` when given."""
    folder = tmp_path / "archive" / name
    folder.mkdir(parents=True)
    for split in ("TRAIN", "TEST"):
        lines = (_bundled() / f"{NAME}_{split}.ts").read_text(encoding="utf-8").splitlines(True)
        if edit is not None:
            lines = edit(split, lines)
        (folder / f"{name}_{split}.ts").write_text("".join(lines), encoding="utf-8")
    return folder.parent


def _data_start(lines: list[str]) -> int:
    return next(i for i, line in enumerate(lines) if line.strip().lower() == "@data") + 1


def _cut_train_after(n_rows: int):
    """Keep the header and the first ``n_rows`` rows of TRAIN: a file cut at a line end."""

    def edit(split, lines):
        return lines[: _data_start(lines) + n_rows] if split == "TRAIN" else lines

    return edit


def _prepare(tmp_path: Path, archive: Path, name: str = NAME, **kwargs) -> Path:
    fetch_uea(name, tmp_path / "raw", archive_dir=archive, download=False)
    return prepare_uea(name, tmp_path / "raw", tmp_path / "prepared", **kwargs)


@pytest.fixture(scope="module")
def basic_motions(tmp_path_factory) -> Path:
    """BasicMotions prepared from aeon's copy, once."""
    root = tmp_path_factory.mktemp("uea")
    fetch_uea(NAME, root / "raw", download=False)
    return prepare_uea(NAME, root / "raw", root / "prepared")


@pytest.fixture
def prepared_copy(basic_motions, tmp_path) -> Path:
    """A writable copy of the prepared BasicMotions."""
    return Path(shutil.copytree(basic_motions, tmp_path / NAME))


def _edit_meta(folder: Path, **changes) -> None:
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    meta.update(changes)
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")


# ------------------------------------------------------------------ catalog vs data
def test_a_ts_file_cut_at_a_line_end_is_refused_naming_file_catalog_and_both_counts(tmp_path):
    archive = _archive(tmp_path, edit=_cut_train_after(9))
    with pytest.raises(DataError) as err:
        _prepare(tmp_path, archive)
    message = str(err.value)
    assert f"{NAME}_TRAIN.ts" in message and "uea/BasicMotions" in message
    assert "n_train: catalog 40, read 9" in message
    assert "expected_differences" in message and "@subset" in message
    assert not (tmp_path / "prepared" / NAME).exists()


def test_a_difference_the_catalog_expects_with_a_reason_is_prepared_and_recorded(
    tmp_path, monkeypatch
):
    reason = "this release's TRAIN file holds 9 rows"
    entry = {**catalog.UEA_DATASETS[NAME],
             "expected_differences": {"n_train": {"data": 9, "reason": reason}}}  # fmt: skip
    monkeypatch.setitem(catalog.UEA_DATASETS, NAME, entry)
    meta = json.loads((_prepare(tmp_path, _archive(tmp_path, edit=_cut_train_after(9)))
                       / "meta.json").read_text())  # fmt: skip
    assert meta["N"] == 49
    check = meta["catalog_check"]
    assert check["entry"] == "uea/BasicMotions" and check["result"] == "differs as expected"
    assert check["differences"] == [
        {"field": "n_train", "catalog": 40, "data": 9, "reason": reason}
    ]
    # an expected value is a value: another count is still refused
    with pytest.raises(DataError, match=r"n_train: catalog 40, read 8"):
        _prepare(tmp_path / "b", _archive(tmp_path / "b", edit=_cut_train_after(8)))


def test_a_subset_that_declares_itself_is_prepared_with_a_recorded_warning(tmp_path):
    what = "the first 9 TRAIN rows (a test's slice)"

    def edit(split, lines):
        lines = _cut_train_after(9)(split, lines)
        at = _data_start(lines) - 1
        return lines[:at] + [f"@subset {what}\n"] + lines[at:] if split == "TRAIN" else lines

    meta = json.loads((_prepare(tmp_path, _archive(tmp_path, edit=edit)) / "meta.json").read_text())
    check = meta["catalog_check"]
    assert check["result"] == "declared subset" and check["subset"] == {"TRAIN": what}
    assert check["differences"] == [
        {"field": "n_train", "catalog": 40, "data": 9, "reason": f"declared subset: {what}"}
    ]
    warning, classes = meta["warnings"]
    assert "subset" in warning and "n_train 9 of the catalog's 40" in warning
    assert "not comparable" in warning
    # the 9 rows are of one class: the other three are never learnt, and that is said too
    assert "BasicMotions_TRAIN.ts: no row of class(es) " in classes
    assert classes.endswith("(of 4): no model learns it. Kept as the file has it.")


def test_a_subset_declared_in_train_does_not_excuse_the_test_file(tmp_path):
    def edit(split, lines):
        at = _data_start(lines)
        if split == "TRAIN":
            return lines[: at - 1] + ["@subset all TRAIN rows\n"] + lines[at - 1 :]
        return lines[: at + 30]  # TEST cut to 30 rows, undeclared

    with pytest.raises(DataError, match=r"BasicMotions_TEST\.ts.*n_test: catalog 40, read 30"):
        _prepare(tmp_path, _archive(tmp_path, edit=edit))


# ------------------------------------------------------------------ n_classes vs labels
def test_n_classes_above_the_label_values_is_refused_naming_meta_and_absent_classes(
    prepared_copy,
):
    PreparedDataset(prepared_copy)  # opens as prepared
    meta = json.loads((prepared_copy / "meta.json").read_text())
    _edit_meta(prepared_copy, n_classes=6, classes=[*meta["classes"], "extra1", "extra2"])
    with pytest.raises(DataError) as err:
        PreparedDataset(prepared_copy)
    message = str(err.value)
    assert str(prepared_copy / "meta.json") in message and "n_classes is 6" in message
    assert "class id(s) [4, 5]" in message and "y.npy" in message
    _edit_meta(prepared_copy, n_classes=6, classes=meta["classes"])
    with pytest.raises(DataError, match=r"n_classes is 6 but 'classes' lists 4"):
        PreparedDataset(prepared_copy)


# ------------------------------------------------------------------ prepared size cap
def test_a_prepared_x_far_larger_than_its_raw_files_is_refused_with_the_numbers(
    tmp_path, monkeypatch
):
    name = "LongMotions"  # BasicMotions' values under a name the catalog does not hold

    def edit(split, lines):  # the first TRAIN row 400 times longer (one long line)
        lines = [
            "@equalLength false\n" if line.lower().startswith("@equallength") else line
            for line in lines
            if not line.lower().startswith("@serieslength")
        ]
        if split == "TRAIN":
            at = _data_start(lines)
            *chans, label = lines[at].rstrip("\n").split(":")
            lines[at] = ":".join([",".join([c] * 400) for c in chans] + [label]) + "\n"
        return lines

    monkeypatch.setattr(uea_prepare, "PREPARED_FREE_BYTES", 1 << 20)
    archive = _archive(tmp_path, name, edit=edit)
    with pytest.raises(DataError) as err:
        _prepare(tmp_path, archive, name)
    message = str(err.value)
    assert f"{name}_TRAIN.ts" in message and "(N, C, L) = (80, 6, 40000)" in message
    assert "max_prepared_ratio" in message and "times" in message
    assert not (tmp_path / "prepared" / name).exists()
    # the stated override prepares it
    out = prepare_uea(name, tmp_path / "raw", tmp_path / "prepared", max_prepared_ratio=None)
    assert json.loads((out / "meta.json").read_text())["L"] == 40000


# ------------------------------------------------------------------ timestamps and mask
@pytest.fixture(scope="module")
def basic_motions_drop(basic_motions, tmp_path_factory) -> Path:
    """BasicMotionsDrop (T.npy, M.npy) from the prepared BasicMotions, once."""
    out = tmp_path_factory.mktemp("uea_drop")
    return prepare_drop_rate_variant(basic_motions, out, name="BasicMotionsDrop", seed=0)


@pytest.fixture
def drop_copy(basic_motions_drop, tmp_path) -> Path:
    return Path(shutil.copytree(basic_motions_drop, tmp_path / "BasicMotionsDrop"))


def test_timestamps_that_never_advance_are_refused_naming_file_and_rows(drop_copy):
    steps, source = PreparedDataset(drop_copy).steps()
    assert source == "T.npy" and (steps[:, 1:] > 0).any()  # the real variant advances
    T = np.load(drop_copy / "T.npy")
    np.save(drop_copy / "T.npy", np.full_like(T, 3.0), allow_pickle=False)
    with pytest.raises(DataError) as err:
        PreparedDataset(drop_copy).steps()
    message = str(err.value)
    assert str(drop_copy / "T.npy") in message and "never advance" in message
    assert f"{len(T)} row(s)" in message and "rows [0, 1, 2, 3, 4" in message


def test_rows_with_no_observed_value_are_said_naming_file_and_rows(drop_copy):
    """Kept (Physiome-ODE's sampling leaves such rows), and said: a warning naming the
    file and the rows, which a run logs and records (data_warnings)."""
    M = np.load(drop_copy / "M.npy")
    dataset = PreparedDataset(drop_copy)
    assert dataset.observed()[1] == "M.npy" and dataset.padding_warning() is None
    M[[3, 17]] = False
    np.save(drop_copy / "M.npy", M, allow_pickle=False)
    dataset = PreparedDataset(drop_copy)
    dataset.observed()
    message = dataset.padding_warning()
    assert str(drop_copy / "M.npy") in message and "BasicMotionsDrop" in message
    assert f"2 of {len(M)} row(s) with no observed value" in message
    assert "rows [3, 17]" in message
    assert PreparedDataset(drop_copy).padding_warning() == message  # the mask unread too


@pytest.mark.parametrize("model", ["MS4N", "TIDES-drop"])
def test_a_run_of_any_model_records_rows_with_no_observed_value(drop_copy, model):
    """A model of the values alone (MS4N) or of values and steps (TIDES-drop) is given
    padding for such rows as a masked model is: its run says so too."""
    from ssmbench.config import Job, job_spec
    from ssmbench.data.prepared_files import seal_prepared
    from ssmbench.params_file import read_params
    from ssmbench.train.run_setup import set_up

    M = np.load(drop_copy / "M.npy")
    M[[3, 17]] = False
    np.save(drop_copy / "M.npy", M, allow_pickle=False)
    seal_prepared(drop_copy)  # prepared so: meta.json records the edited mask
    params = read_params(REPO / "params.yaml")
    spec = job_spec(params, Job("uea_drop", "BasicMotionsDrop", model, 0))
    spec["prepared_dir"] = str(drop_copy)
    setup = set_up(spec, threads=1)
    (warning,) = setup.spec["data_warnings"]
    assert "BasicMotionsDrop has 2 of" in warning and "rows [3, 17]" in warning


# ------------------------------------------------------------------ test indices
def test_test_indices_covering_every_row_name_the_file_and_what_to_do(prepared_copy):
    (prepared_copy / "test_indices_fold_0.txt").write_text("".join(f"{i}\n" for i in range(80)))
    with pytest.raises(DataError) as err:
        split_fold(PreparedDataset(prepared_copy), 0, 0.1, 0)
    message = str(err.value)
    assert str(prepared_copy / "test_indices_fold_0.txt") in message
    assert "all 80 rows" in message and "no row to train on" in message
    assert "prepare step again" in message


def test_a_monster_fold_covering_every_row_is_refused_when_prepared(tmp_path):
    from test_monster import NAME as TINY
    from test_monster import make_dataset, write_files

    X, _, _, files = make_dataset(np.float32)
    files["test_indices_fold_2.txt"] = "".join(f"{i}\n" for i in range(len(X))).encode()
    write_files(tmp_path / "local" / TINY, files)
    fetch_monster(TINY, tmp_path / "raw", local_dir=tmp_path / "local")
    with pytest.raises(DataError) as err:
        prepare_monster(TINY, tmp_path / "raw", tmp_path / "prepared")
    message = str(err.value)
    assert f"test_indices_fold_2.txt: the test rows cover all {len(X)} rows" in message
    assert "no row to train on" in message


def test_a_run_on_a_declared_subset_says_so_in_its_log_record_and_report(
    motor_imagery_archive, tmp_path, caplog
):
    """The warning a declared subset's preparation records reaches the run: its log, its
    record (``data_warnings``) and the report's log, run by run."""
    import logging

    from ssmbench.config import Job, job_spec
    from ssmbench.params_file import read_params
    from ssmbench.report.aggregate import collect_records
    from ssmbench.train.protocol import run_job

    raw, prepared = tmp_path / "raw", tmp_path / "prepared"
    fetch_uea("MotorImagery", raw, archive_dir=motor_imagery_archive, download=False)
    prepare_uea("MotorImagery", raw, prepared)
    params = read_params(REPO / "params.yaml")
    spec = job_spec(params, Job("uea", "MotorImagery", "MS4", 0))
    spec["settings"]["max_epochs"] = 1
    spec["prepared_dir"] = str(prepared / "MotorImagery")
    lines: list[str] = []
    record_path = tmp_path / "runs" / "uea" / "MotorImagery" / "MS4" / "fold0.json"
    record = run_job(spec, record_path, log=lines.append)
    assert len(record["data_warnings"]) == 1
    assert (
        "is a declared subset of the catalog's dataset uea/MotorImagery"
        in (record["data_warnings"][0])
    )
    assert any("declared subset" in line and "data_warnings" in line for line in lines)
    with caplog.at_level(logging.WARNING, logger="ssmbench.report"):
        collect_records(tmp_path / "runs")
    assert "trained on data its preparation warned of" in caplog.text
