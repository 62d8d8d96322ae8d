"""The official Physiome-ODE fold files (data/physiome/official_files.py): read from a
fixture in the official layout without running pickled code; anything else refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.data import Subset

from ssmbench.data.errors import DataError
from ssmbench.data.physiome.official_files import (
    main_dataset_class,
    read_fold,
    read_fold_file,
    write_fold_file,
)


def _arrays(n=10, lx=6, ly=5, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, lx, d)).astype(np.float32)
    Y = rng.normal(size=(n, ly, d)).astype(np.float32)
    X[rng.random(X.shape) > 0.3] = np.nan  # unobserved
    Y[rng.random(Y.shape) > 0.3] = np.nan
    T = np.sort(rng.uniform(0, 0.5, size=(n, lx)), axis=1).astype(np.float32)
    TY = np.sort(rng.uniform(0.5, 1, size=(n, ly)), axis=1).astype(np.float32)
    return {"T": T, "X": X, "TY": TY, "Y": Y}


def _fold(folder, arrays, splits=((0, 1, 2, 3, 4, 5, 6), (7, 8), (9,))):
    for name, rows in zip(("train", "valid", "test"), splits, strict=True):
        write_fold_file(folder / f"{name}.pt", arrays, rows)
    return folder


def test_a_fold_in_the_official_layout_reads_back(tmp_path):
    arrays = _arrays()
    folder = tmp_path / "final" / "hodgkin_huxley_1952_variant01" / "0"
    fold = read_fold(_fold(folder, arrays))
    for name, value in arrays.items():
        assert np.array_equal(fold[name], value, equal_nan=True)
    assert fold["train"].tolist() == [0, 1, 2, 3, 4, 5, 6] and fold["test"].tolist() == [9]
    globals_ = torch.serialization.get_unsafe_globals_in_checkpoint(folder / "train.pt")
    assert sorted(globals_) == ["__main__.IMTS_dataset", "torch.utils.data.dataset.Subset"]


class _Payload:
    """A pickle that would run code on load: writes a marker file."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_crafted_file_with_any_other_global_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    bad = tmp_path / "train.pt"
    torch.save({"T": torch.zeros(2, 2), "evil": _Payload(marker)}, bad)
    with pytest.raises(DataError, match=r"names \['io.open'\].*refused without unpickling"):
        read_fold_file(bad)
    assert not marker.exists()
    # the same file beside an allowed global is refused all the same
    subset = Subset.__new__(Subset)
    subset.dataset, subset.indices, subset.extra = {"T": torch.zeros(2)}, [0], _Payload(marker)
    mixed = tmp_path / "mixed.pt"
    torch.save(subset, mixed)
    with pytest.raises(DataError, match=r"names \['io.open'\]"):
        read_fold_file(mixed)
    assert not marker.exists()
    # and unrestricted, it would have run: the marker is what a full load creates
    torch.load(bad, weights_only=False)
    assert marker.exists()


def test_truncated_or_not_a_torch_file_is_refused(tmp_path):
    good = write_fold_file(tmp_path / "train.pt", _arrays(), range(10))
    cut = tmp_path / "cut.pt"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(DataError, match="not a readable torch file"):
        read_fold_file(cut)
    text = tmp_path / "text.pt"
    text.write_text("not torch")
    with pytest.raises(DataError, match="not a readable torch file"):
        read_fold_file(text)


def test_a_fold_whose_test_rows_are_in_its_training_is_an_error(tmp_path):
    arrays = _arrays()
    folder = _fold(tmp_path / "leak", arrays, splits=((0, 1, 2, 3, 4, 5, 6, 9), (7, 8), (9,)))
    with pytest.raises(DataError, match="row 9 is in both train.pt and test.pt"):
        read_fold(folder)
    folder = _fold(tmp_path / "twice", arrays, splits=((0, 1, 2, 3, 4, 5, 6, 6), (7, 8), (9,)))
    with pytest.raises(DataError) as err:
        read_fold(folder)
    assert str(err.value) == (
        f"{folder / 'train.pt'}: row 6 is listed twice in it; a split names each of its rows "
        "once. Fetch the fold files again"
    )
    folder = _fold(tmp_path / "short", arrays, splits=((0, 1, 2), (7, 8), (9,)))
    with pytest.raises(DataError, match="cover 6 of the 10 rows"):
        read_fold(folder)
    folder = _fold(tmp_path / "mixed", arrays)
    write_fold_file(folder / "valid.pt", _arrays(seed=1), (7, 8))
    with pytest.raises(DataError, match="valid.pt: its T differs"):
        read_fold(folder)


def _rewritten(path, edit):
    """The fold file at `path` with its Subset passed through `edit(subset)`: a file of
    another producer (our writer only writes float32 and integer indices)."""
    with main_dataset_class():
        subset = torch.load(path, weights_only=False)  # our own fixture
        edit(subset)
        torch.save(subset, path)
    return path


def _set(name, value):
    return lambda subset: setattr(subset.dataset, name, value)


@pytest.mark.parametrize(
    "edit, says",
    [
        (_set("X", torch.zeros(10, 6, 3, dtype=torch.complex64)),
         r"tensor 'X' is torch.complex64; an official file holds real floating-point"),
        (_set("Y", torch.full((10, 5, 3), 1e300, dtype=torch.float64)),
         r"tensor 'Y' \(torch.float64\) has finite values beyond float32's range"),
        (_set("T", torch.zeros(10, 6, dtype=torch.int64)),
         r"tensor 'T' is torch.int64; an official file holds real floating-point"),
        (lambda subset: setattr(subset, "indices", [0.0, 1.7, 2.2]),
         r"the split's indices are float64, not integers; refused rather than truncated"),
    ],
)  # fmt: skip
def test_tensors_that_would_be_coerced_are_refused(tmp_path, edit, says):
    """Complex values (their imaginary part dropped), float64 beyond float32 (inf),
    integer times and float indices (truncated) are refused, not coerced."""
    path = _rewritten(write_fold_file(tmp_path / "train.pt", _arrays(), range(10)), edit)
    with pytest.raises(DataError, match=says):
        read_fold_file(path)
    # float64 within float32's range, and NaN (not observed), read as before
    nan64 = torch.full((10, 5, 3), float("nan"), dtype=torch.float64)
    ok = _rewritten(write_fold_file(tmp_path / "ok.pt", _arrays(), range(10)), _set("Y", nan64))
    assert np.isnan(read_fold_file(ok)["Y"]).all()
