"""Data that are kept but said: a class with no row in a UEA file (meta.json's warnings and
the run's data_warnings), a time step far out of the rest (the run's data_warnings); and
data that are refused: an irregular dataset without its timestamps."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from ssmbench.data import prepare_uea
from ssmbench.data.errors import DataError
from ssmbench.data.store import PreparedDataset
from ssmbench.data.synthetic.prepare import prepare_fading_flash
from ssmbench.data.uea.fetch import _aeon_bundled_dir
from ssmbench.train.checks import classes_without_test_rows


def test_a_class_missing_from_the_test_file_is_said(tmp_path):
    raw = tmp_path / "raw" / "uea" / "BasicMotions"
    shutil.copytree(_aeon_bundled_dir("BasicMotions"), raw)
    test = raw / "BasicMotions_TEST.ts"
    lines = test.read_text().splitlines(keepends=True)
    kept = [line for line in lines if not line.rstrip().endswith(":Running")]
    at = kept.index("@data\n")  # a deliberate subset declares itself (ssmbench.data.catalog_entry)
    test.write_text("".join([*kept[:at], "@subset the Running rows left out\n", *kept[at:]]))
    out = prepare_uea("BasicMotions", raw.parent, tmp_path / "prepared" / "uea")
    dataset = PreparedDataset(out)
    assert dataset.meta["n_test"] == 30
    assert dataset.meta["warnings"][-1] == (
        f"{test}: no row of class(es) 'Running' (of 4): the test accuracy is over the other "
        "classes. Kept as the file has it."
    )
    n_train = dataset.meta["n_train"]
    test_rows = np.arange(n_train, dataset.meta["N"])
    (said,) = classes_without_test_rows(dataset, 0, test_rows)
    assert f"fold 0's {len(test_rows)} test rows have no row of class(es) 'Running'" in said
    assert classes_without_test_rows(dataset, 0, np.arange(n_train)) == []  # all four there


@pytest.fixture
def fading_flash(tmp_path):
    return prepare_fading_flash(tmp_path / "synthetic", n_train=40, n_test_per_dt=4, seed=1)


def test_an_irregular_dataset_without_its_timestamps_is_refused(fading_flash):
    dataset = PreparedDataset(fading_flash)
    assert dataset.meta["irregular"] is True
    steps, source = dataset.steps()
    assert source == dataset.STEPS_FROM_TIMESTAMPS and dataset.step_warning is None
    (fading_flash / "T.npy").unlink()
    with pytest.raises(DataError, match=r"T\.npy: missing, but meta\.json says the data are "
                       r"irregular"):  # fmt: skip
        PreparedDataset(fading_flash).steps()


def test_a_time_step_far_out_of_the_rest_is_said(fading_flash):
    T = np.load(fading_flash / "T.npy")
    T[3, 10:] += np.float32(1e30)
    np.save(fading_flash / "T.npy", T, allow_pickle=False)
    dataset = PreparedDataset(fading_flash)
    steps, _ = dataset.steps()
    assert steps[3, 10] == pytest.approx(1e30, rel=1e-6)
    assert "time step(s) of 1e+06 or more times the median step" in dataset.step_warning
    assert "(the first: row 3, step 10, Δ = 1e+30)" in dataset.step_warning
