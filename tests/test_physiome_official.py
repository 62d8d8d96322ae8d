"""The official Physiome-ODE archive end to end, offline: a fixture archive written in the
official layout (final/<dataset>/<k>/{train,valid,test}.pt, five independent re-splits with
their own noise and masks) served by a local Zenodo stand-in, fetched, prepared into the
per-fold layout (one prepared folder per fold) and trained on one fold; and what is refused
(a file naming another global, a truncated file, a fold whose test rows are in training)."""

from __future__ import annotations

import copy
import io
import json
import os
import re
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import REPO

from ssmbench.config import ConfigError, Job, check_params, job_spec
from ssmbench.data.catalog import catalog
from ssmbench.data.errors import DataError
from ssmbench.data.physiome import fetch_physiome, locate_physiome, resolve_settings
from ssmbench.data.physiome.official import OFFICIAL_DATASETS, archive_folder
from ssmbench.data.physiome.official_files import write_fold_file
from ssmbench.data.physiome.official_prepare import (
    OFFICIAL_DEVIATIONS,
    prepare_from_folds,
    write_per_fold_folder,
)
from ssmbench.data.physiome.zenodo import zenodo_dataset
from ssmbench.data.sources import fetch, prepare
from ssmbench.data.store import PreparedDataset, open_fold

sys.path.insert(0, str(Path(__file__).parent))
from zenodo_server import FakeZenodo  # noqa: E402

from ssmbench.params_file import read_params

CODE, FOLDER = "BOR01", "borghans_dupont_goldbeter_1997a"  # 3 states in Top50_final.csv
OTHER_CODE, OTHER_FOLDER = "DUP01", "dupont_1991a"  # 2 states
N, N_FOLDS = 40, 5
SIZES = (28, 8, 4)  # random_split(40, [0.7, 0.2, 0.1])
SPLITS = ("train", "valid", "test")
ARRAYS = ("X.npy", "y.npy", "T.npy", "M.npy", "target_mask.npy", "forecast_start.npy")


# ------------------------------------------------------------------ the fixture archive
def _pad(times: np.ndarray, values: np.ndarray, keep: np.ndarray):
    """Each row's kept steps, right-padded with time 0 and NaN (pad_sequence, then
    X[~M] = nan), as generate_imts.py l.98-105."""
    n, _, D = values.shape
    L = int(keep.sum(axis=1).max())
    T = np.zeros((n, L), np.float32)
    V = np.full((n, L, D), np.nan, np.float32)
    for i in range(n):
        j = np.flatnonzero(keep[i])
        T[i, : j.size], V[i, : j.size] = times[j], values[i, j]
    return T, V


def _official_fold(k: int, n_states: int, n: int = N) -> dict:
    """Fold k as the reference writes it: its own shuffle of the instances, noise, masks
    (80 % hidden), the odd-count row selection, padding and a 70/20/10 split."""
    rng = np.random.default_rng(1000 + k)
    base = np.sin(np.linspace(0, 3, 99)[None, :, None] * (1 + np.arange(n)[:, None, None]))
    base = base + 0.1 * np.arange(n_states)[None, None, :]
    z = base[rng.permutation(n)] + 0.05 * rng.standard_normal((n, 99, n_states))
    t_obs, t_fore = np.arange(50) / 100, 0.5 + np.arange(1, 50) / 100
    M = rng.random((n, 50, n_states)) > 0.8
    MY = rng.random((n, 49, n_states)) > 0.8
    MY[:, :, n_states - 1] = False  # one channel is no forecast channel: its targets are NaN
    X = np.where(M, z[:, :50], np.nan)
    Y = np.where(MY, z[:, 50:], np.nan)
    T, Xp = _pad(t_obs, X, M.sum(axis=2) % 2 == 1)
    TY, Yp = _pad(t_fore, Y, MY.sum(axis=2) % 2 == 1)
    perm = rng.permutation(n)
    cut = np.cumsum(SIZES[:2])
    return {
        "T": T,
        "X": Xp,
        "TY": TY,
        "Y": Yp,
        **dict(zip(SPLITS, np.split(perm, cut), strict=True)),
    }


def _archive(tmp: Path, folds: dict[str, list[dict]], replace: dict | None = None) -> bytes:
    """final.zip of the given folds (``{folder: [fold dict, ...]}``); ``replace`` maps a
    member name to other bytes (a crafted file)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("final/", b"")
        for folder, per_fold in folds.items():
            zf.writestr(f"final/{folder}/", b"")
            for k, fold in enumerate(per_fold):
                zf.writestr(f"final/{folder}/{k}/", b"")
                for split in SPLITS:
                    member = f"final/{folder}/{k}/{split}.pt"
                    path = write_fold_file(tmp / member, fold, fold[split])
                    zf.writestr(member, (replace or {}).get(member, path.read_bytes()))
    return buf.getvalue()


@pytest.fixture(scope="module")
def folds() -> dict[str, list[dict]]:
    return {
        FOLDER: [_official_fold(k, 3) for k in range(N_FOLDS)],
        OTHER_FOLDER: [_official_fold(10 + k, 2) for k in range(N_FOLDS)],
    }


@pytest.fixture(scope="module")
def archive(tmp_path_factory, folds) -> bytes:
    return _archive(tmp_path_factory.mktemp("archive"), folds)


def _settings(url: str, cache: Path | None = None) -> dict:
    zen = {"url": url, **({"cache_dir": str(cache)} if cache else {})}
    return {"source": "physiome", "mode": "zenodo", "zenodo": zen}


def _fetch_and_prepare(root: Path, data: bytes, code: str = CODE):
    """Serve ``data`` as final.zip, fetch ``code`` and prepare it; (prepared folder,
    settings). The benchmark folder is physiome_ode, as the workflow names it."""
    raw, out = root / "raw" / "physiome_ode", root / "prepared" / "physiome_ode"
    with FakeZenodo() as z:
        z.add_record("11492058", {"final.zip": data})
        settings = _settings(z.url)
        fetch(code, raw, settings)
    return raw, out, settings


@pytest.fixture(scope="module")
def prepared(tmp_path_factory, archive) -> Path:
    root = tmp_path_factory.mktemp("official")
    raw, out, settings = _fetch_and_prepare(root, archive)
    return prepare(CODE, raw, out, settings)


def _expected(fold: dict) -> dict[str, np.ndarray]:
    """The prepared arrays of a fold, from its tensors, row by row: the observed steps with
    a finite value, then the forecast steps with one, padding after (time repeated)."""
    X, Y, T, TY = fold["X"], fold["Y"], fold["T"], fold["TY"]
    n, _, C = X.shape
    steps = []
    for i in range(n):
        obs = [j for j in range(X.shape[1]) if np.isfinite(X[i, j]).any()]
        fore = [j for j in range(Y.shape[1]) if np.isfinite(Y[i, j]).any()]
        steps.append((obs, fore))
    L = max(len(o) + len(f) for o, f in steps)
    out = {
        "X.npy": np.zeros((n, C, L), np.float32),
        "y.npy": np.zeros((n, C, L), np.float32),
        "T.npy": np.zeros((n, L), np.float32),
        "M.npy": np.zeros((n, C, L), bool),
        "target_mask.npy": np.zeros((n, C, L), bool),
        "forecast_start.npy": np.zeros(n, np.int64),
    }
    for i, (obs, fore) in enumerate(steps):
        times = [T[i, j] for j in obs] + [TY[i, j] for j in fore]
        for s, j in enumerate(obs):
            seen = np.isfinite(X[i, j])
            out["M.npy"][i, :, s] = seen
            out["X.npy"][i, seen, s] = X[i, j, seen]
        for s, j in enumerate(fore, start=len(obs)):
            seen = np.isfinite(Y[i, j])
            out["target_mask.npy"][i, :, s] = seen
            out["y.npy"][i, seen, s] = Y[i, j, seen]
        out["T.npy"][i] = times + [times[-1]] * (L - len(times))
        out["forecast_start.npy"][i] = len(obs)
    return out


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


# ------------------------------------------------------------------ fetch -> prepare
def test_each_fold_holds_its_own_arrays_and_test_rows(prepared, folds):
    top = json.loads((prepared / "meta.json").read_text())
    assert (top["fold_scheme"], top["n_folds"], top["C"], top["task"]) == (
        "per_fold",
        N_FOLDS,
        3,
        "regression",
    )
    assert (top["code"], top["official_dataset"], top["source"]) == (CODE, FOLDER, "zenodo")
    assert top["top50"]["n_states"] == 3 and top["deviations"] == OFFICIAL_DEVIATIONS
    assert "we do not re-normalise" in top["normalisation"]["ours"]
    assert "odd number" in top["row_selection"]
    assert len(top["raw_files"]) == 3 * N_FOLDS
    Ls = []
    for k, fold in enumerate(folds[FOLDER]):
        ds = open_fold(prepared, k)
        assert ds.path == prepared / f"fold{k}"
        meta = ds.meta
        assert (meta["fold_scheme"], meta["n_folds"], meta["fold"], meta["N"]) == (
            "official_split",
            1,
            k,
            N,
        )
        assert meta["raw_files"] == {
            f"{CODE}/final/{FOLDER}/{k}/{s}.pt": top["raw_files"][
                f"{CODE}/final/{FOLDER}/{k}/{s}.pt"
            ]
            for s in SPLITS
        }
        want = _expected(fold)
        for fname in ARRAYS:
            got = np.load(ds.path / fname, allow_pickle=False)
            assert got.dtype == want[fname].dtype and np.array_equal(got, want[fname]), (k, fname)
        # the fold's own rows: test = its test.pt, validation = its valid.pt
        assert ds.test_indices(k).tolist() == sorted(fold["test"].tolist())
        assert ds.given_validation_indices(k).tolist() == sorted(fold["valid"].tolist())
        train = np.setdiff1d(ds.train_indices(k), ds.given_validation_indices(k))
        assert train.tolist() == sorted(fold["train"].tolist())
        assert meta["split_sizes"] == dict(zip(("train", "val", "test"), SIZES, strict=True))
        assert (
            top["folds"][k]
            == {"fold": k, "folder": f"fold{k}", "N": N, "L": meta["L"]} | (meta["split_sizes"])
        )
        # what a time-aware model is given: Δ >= 0, 0 on padding
        steps, source = ds.steps()
        assert source == ds.STEPS_FROM_TIMESTAMPS and (steps >= 0).all()
        Ls.append(meta["L"])
        assert meta["n_padding_steps"] > 0 and meta["n_empty_steps"] == 0
    assert top["L"] == max(Ls) and top["N"] == N
    # the folds are independent re-splits: their test rows differ
    tests = {tuple(open_fold(prepared, k).test_indices(k)) for k in range(N_FOLDS)}
    assert len(tests) > 1


def test_one_download_serves_every_dataset_of_the_archive(tmp_path, archive):
    cache = tmp_path / "cache"
    raw = tmp_path / "raw" / "physiome_ode"
    with FakeZenodo() as z:
        z.add_record("11492058", {"final.zip": archive})
        for code in (CODE, OTHER_CODE):
            prov = fetch_physiome(code, raw, _settings(z.url, cache))
            assert prov["zenodo_dataset"] == archive_folder(code)
        assert z.count("GET", "/content") == 1  # the second fetch extracted the kept copy
    assert (cache / "final.zip").read_bytes() == archive
    assert (raw / OTHER_CODE / "final" / OTHER_FOLDER / "4" / "test.pt").is_file()
    assert not (raw / OTHER_CODE / "final" / FOLDER).exists()
    out = prepare(OTHER_CODE, raw, tmp_path / "prepared" / "physiome_ode", _settings("https://x"))
    assert open_fold(out, 4).meta["C"] == 2


def test_training_on_one_fold_scores_only_its_test_rows(prepared, folds, tmp_path, monkeypatch):
    from ssmbench.train import protocol

    fold = 1
    params = read_params(REPO / "params.yaml")
    spec = job_spec(params, Job("physiome_ode", CODE, "TIDES-physio", fold), "default")
    spec["prepared_dir"] = str(prepared)
    spec["model_params"].update(d_model=8, ssm_size=4, ssm_blocks=1, n_layers=1, dropout=0.0)
    spec["settings"].update(max_epochs=2, batch_size=8, early_stopping_patience=None)
    seen = {}
    original = protocol._DeepTraining.test

    def spy(self):
        tested = original(self)  # the best epoch's weights are loaded by now
        seen.update(model=self.model, test_idx=self.data.test_idx, val_idx=self.data.val_idx)
        return tested

    monkeypatch.setattr(protocol._DeepTraining, "test", spy)
    record = protocol.run_job(spec, tmp_path / "fold1.json", log=lambda _: None)
    want_test = sorted(folds[FOLDER][fold]["test"].tolist())
    assert seen["test_idx"].tolist() == want_test
    assert seen["val_idx"].tolist() == sorted(folds[FOLDER][fold]["valid"].tolist())
    assert (record["n_train"], record["n_val"], record["n_test"]) == SIZES
    assert record["steps_source"] == "T.npy"
    fold_dir = prepared / f"fold{fold}"
    assert record["dataset_sha256"] == json.loads((fold_dir / "meta.json").read_text())["raw_files"]

    def pooled_mse(rows) -> float:
        X, y, T, tm = (np.load(fold_dir / f, allow_pickle=False) for f in
                       ("X.npy", "y.npy", "T.npy", "target_mask.npy"))  # fmt: skip
        steps = np.diff(T, axis=1, prepend=0.0).astype(np.float32)
        model = seen["model"].eval()
        with torch.no_grad():
            out = model(torch.from_numpy(X[rows]), steps=torch.from_numpy(steps[rows]))
        pred = out.transpose(1, 2).double().numpy()  # (B, L, C) -> y's (B, C, L)
        err = (pred - y[rows]) ** 2
        return float(err[tm[rows]].mean())

    assert record["test_error"] == pytest.approx(pooled_mse(want_test), rel=1e-5)
    assert record["test_error"] != pytest.approx(pooled_mse(seen["val_idx"]), rel=1e-3)


# ------------------------------------------------------------------ what is refused
class _Built:
    """A class of this test module: building it (an unrestricted load) writes a marker."""

    def __init__(self, marker: str):
        self.marker = marker

    def __setstate__(self, state):
        Path(state["marker"]).write_text("constructed")


class _Shell:
    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("payload", [_Shell, _Built])
def test_a_file_naming_another_global_is_refused_at_prepare_time(tmp_path, folds, payload):
    marker = tmp_path / "marker"
    evil = tmp_path / "evil.pt"
    torch.save({"T": torch.zeros(2, 2), "payload": payload(str(marker))}, evil)
    member = f"final/{FOLDER}/2/valid.pt"
    data = _archive(tmp_path / "a", folds, replace={member: evil.read_bytes()})
    raw, out, settings = _fetch_and_prepare(tmp_path, data)
    bad = raw / CODE / member
    with pytest.raises(
        DataError, match=rf"{re.escape(str(bad))}: names \[.*\].*refused without unpickling"
    ):
        prepare(CODE, raw, out, settings)
    assert not marker.exists()  # nothing of the file was built
    assert not (out / CODE).exists() and not list(out.glob(f".{CODE}*tmp*"))
    if payload is _Built:  # an unrestricted load would have built it: the marker is real
        torch.load(evil, weights_only=False)
        assert marker.exists()


def test_a_truncated_file_is_refused_and_the_good_copy_kept(tmp_path, archive):
    raw, out, settings = _fetch_and_prepare(tmp_path, archive)
    good = prepare(CODE, raw, out, settings)
    before = _tree(good)
    cut = raw / CODE / "final" / FOLDER / "3" / "test.pt"
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    with pytest.raises(
        DataError, match=rf"{re.escape(str(cut))} missing or not matching.*Fetch it again"
    ):
        prepare(CODE, raw, out, settings)
    assert _tree(good) == before
    assert sorted(p.name for p in out.iterdir() if not p.name.endswith(".lock")) == [CODE]


def test_a_fold_whose_test_rows_are_in_its_training_is_refused(tmp_path, folds):
    leaky = copy.deepcopy(folds)
    fold = leaky[FOLDER][3]
    fold["train"] = np.append(fold["train"], fold["test"][0])
    data = _archive(tmp_path / "a", leaky)
    raw, out, settings = _fetch_and_prepare(tmp_path, data)
    row = int(fold["test"][0])
    with pytest.raises(DataError, match=rf"fold 3.*row {row} is in both train.pt and test.pt"):
        prepare(CODE, raw, out, settings)
    assert not (out / CODE).exists()
    # the same check holds for folds that come from elsewhere (a generator)
    with pytest.raises(DataError, match=rf"fold 3: row {row} is in both train and test"):
        prepare_from_folds(CODE, leaky[FOLDER], tmp_path / "direct", {})
    assert not (tmp_path / "direct" / CODE).exists()


def test_a_fold_dict_listing_a_row_twice_says_so(tmp_path, folds):
    twice = copy.deepcopy(folds)
    fold = twice[FOLDER][3]
    fold["valid"] = np.append(fold["valid"], fold["valid"][0])
    row = int(fold["valid"][0])
    with pytest.raises(DataError, match=rf", fold 3: row {row} is listed twice in valid; a "):
        prepare_from_folds(CODE, twice[FOLDER], tmp_path / "direct", {})


def test_fold_dicts_that_do_not_fit_are_refused(tmp_path, folds):
    fold = copy.deepcopy(folds[FOLDER][0])
    fold["TY"][5, 0] = 0.2  # a target time before the observed times
    with pytest.raises(DataError, match=r"fold 0: row 5: time .* comes before"):
        prepare_from_folds(CODE, [fold], tmp_path, {})
    fold = copy.deepcopy(folds[FOLDER][0])
    fold["valid"] = fold["valid"][:-1]
    with pytest.raises(DataError, match=r"cover 39 of the 40 rows"):
        prepare_from_folds(CODE, [fold], tmp_path, {})
    for key, at, value, said in (
        ("T", (4, 2), np.nan, r"fold 0: T\[4, 2\] = nan; times must be finite and >= 0"),
        ("X", (3, 1, 0), np.inf, r"fold 0: X\[3, 1, 0\] = inf; values are finite, or NaN"),
        ("Y", (2, 0, 0), -np.inf, r"fold 0: Y\[2, 0, 0\] = -inf; values are finite, or NaN"),
    ):
        fold = copy.deepcopy(folds[FOLDER][0])
        fold[key][at] = value
        with pytest.raises(DataError, match=said):
            prepare_from_folds(CODE, [fold], tmp_path, {})
    with pytest.raises(DataError, match=r"one C expected"):
        prepare_from_folds(CODE, [folds[FOLDER][0], folds[OTHER_FOLDER][0]], tmp_path, {})
    assert not (tmp_path / CODE).exists()


def test_a_failed_write_keeps_the_previous_folder(tmp_path, folds):
    good = prepare_from_folds(CODE, folds[FOLDER][:2], tmp_path, {"benchmark": "physiome_ode"})
    before = _tree(good)
    entry = {"arrays": {"X.npy": np.zeros(3, np.float32)}, "texts": {}, "meta": {}}
    bad = {"arrays": {"X.npy": np.array([object()])}, "texts": {}, "meta": {}}  # no pickles
    with pytest.raises(ValueError, match="allow_pickle"):
        write_per_fold_folder(tmp_path, CODE, [entry, bad], {"name": CODE})
    assert _tree(good) == before
    assert [p.name for p in tmp_path.iterdir()] == [CODE]  # no half-written sibling


# ------------------------------------------------------------------ the per-fold store
def test_open_fold_and_the_top_folder(prepared, tmp_path):
    with pytest.raises(DataError, match=r"per-fold prepared dataset.*open_fold"):
        PreparedDataset(prepared)
    with pytest.raises(
        DataError, match=rf"{re.escape(str(prepared))}: fold 5 requested .* folds 0..4"
    ):
        open_fold(prepared, 5)
    with pytest.raises(DataError, match="fold must be an integer"):
        open_fold(prepared, -1)
    broken = tmp_path / CODE
    broken.mkdir()
    (broken / "meta.json").write_text(json.dumps({"fold_scheme": "per_fold", "n_folds": 2}))
    with pytest.raises(DataError, match=rf"{re.escape(str(broken / 'fold1'))}: missing"):
        open_fold(broken, 1)
    # a fold folder that names another fold
    os.symlink(prepared / "fold0", broken / "fold1")
    with pytest.raises(DataError, match="says fold 0, but it is the folder of fold 1"):
        open_fold(broken, 1)
    # any other scheme: the folder itself
    inner = prepared / "fold2"
    assert open_fold(inner, 7).path == inner and open_fold(inner, 7).test_indices(7).size == 4


# ------------------------------------------------------------------ names and config
def test_the_50_official_codes_are_datasets_in_zenodo_mode_only():
    assert len(OFFICIAL_DATASETS) == 50
    assert archive_folder("HOD01") == "hodgkin_huxley_1952_variant01"
    assert archive_folder("HodgkinHuxley1952") == "hodgkin_huxley_1952_variant01"
    cfg = resolve_settings("DUP01", {"mode": "zenodo"})
    assert zenodo_dataset("DUP01", cfg) == "dupont_1991a"
    locate_physiome("DIF01", {"mode": "zenodo"})
    with pytest.raises(DataError, match="fetch but do not generate.*mode: zenodo"):
        resolve_settings("DUP01", {"mode": "generate"})
    # HOD01 is both: the archive's dataset in zenodo mode, our transcription of its model
    # in generate mode (tests/test_physiome_hod01.py)
    assert resolve_settings("HOD01", {"mode": "zenodo"})["mode"] == "zenodo"
    assert resolve_settings("HOD01", {})["horizon"] == 30.0
    with pytest.raises(DataError, match="or generate our own model DiFrancescoNoble1985"):
        resolve_settings("DIF01", {})
    with pytest.raises(DataError, match="unknown.*DUP01"):
        resolve_settings("DUP99", {"mode": "zenodo"})
    entries = {e.name: e for e in catalog(benchmark="physiome_ode")}
    assert list(entries) == list(OFFICIAL_DATASETS)
    assert (entries["SHO01"].C, entries["SHO01"].N, entries["SHO01"].L) == (56, 2000, 99)


def test_params_yaml_has_the_benchmark_and_check_refuses_a_wrong_mode():
    params = read_params(REPO / "params.yaml")
    bench = params["benchmarks"]["physiome_ode"]
    assert bench["datasets"] == list(OFFICIAL_DATASETS)
    assert (bench["source"], bench["mode"]) == ("physiome", "zenodo")
    assert bench["zenodo"]["cache_dir"]
    check_params(params)
    params["benchmarks"]["physiome_ode"]["mode"] = "generate"
    with pytest.raises(ConfigError, match=r"benchmarks.physiome_ode.datasets: DUP01: .*zenodo"):
        check_params(params)
