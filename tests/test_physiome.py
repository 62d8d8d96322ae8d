"""Physiome-ODE: the generator on the real myokit models (small settings), the prepared
format and the protocol's invariants, and the Zenodo download against a local server."""

from __future__ import annotations

import hashlib
import io
import json
import stat
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from ssmbench.data.checksums import sha256_file
from ssmbench.data.download import check_url, safe_extract
from ssmbench.data.errors import DataError
from ssmbench.data.physiome import (
    DEFAULTS,
    PHYSIOME_MODELS,
    PINNED_SHA256,
    build_dataset,
    fetch_physiome,
    fold_assignment,
    load_model_files,
    locate_physiome,
    prepare_physiome,
    resolve_settings,
    seed_words,
    simulate_physiome,
)
from ssmbench.data.provenance import PROVENANCE
from ssmbench.data.store import REQUIRED_META, PreparedDataset

sys.path.insert(0, str(Path(__file__).parent))
from zenodo_server import FakeZenodo  # noqa: E402

N_SMALL = 30
# the disjoint-fold layout (one X.npy, given folds); tests/test_physiome_reference_folds.py
# prepares the reference protocol's per-fold layout
SMALL = {"source": "physiome", "generator": {"n_instances": N_SMALL, "folds": "disjoint"}}
STATES = {
    "HodgkinHuxley1952": 4,
    "Noble1962": 4,
    "BeelerReuter1977": 8,
    "DiFrancescoNoble1985": 16,
    "LuoRudy1991": 8,
    "HOD01": 4,
}
ARRAYS = ("X.npy", "y.npy", "T.npy", "M.npy", "target_mask.npy", "forecast_start.npy")


def _load(folder: Path, fname: str) -> np.ndarray:
    return np.load(folder / fname, allow_pickle=False)


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("physiome")


@pytest.fixture(scope="module")
def prepared(root) -> dict[str, Path]:
    """Every model, prepared once with N_SMALL instances."""
    out = {}
    for name in PHYSIOME_MODELS:
        fetch_physiome(name, root / "raw", SMALL)
        out[name] = prepare_physiome(name, root / "raw", root / "prepared" / "physiome", SMALL)
    return out


# --------------------------------------------------------------------------- format
def test_catalog_names_are_ours():
    from ssmbench.data.physiome.catalog import PHYSIOME_DATASETS

    assert list(PHYSIOME_MODELS) == list(PHYSIOME_DATASETS)
    assert set(PHYSIOME_MODELS) == set(STATES)


@pytest.mark.parametrize("name", list(STATES))
def test_prepared_format(prepared, name):
    folder = prepared[name]
    ds = PreparedDataset(folder)
    meta = ds.meta
    for key in REQUIRED_META:
        assert key in meta
    assert (meta["task"], meta["fold_scheme"], meta["n_folds"]) == ("regression", "given_folds", 5)
    assert (meta["benchmark"], meta["domain"], meta["name"]) == ("physiome", "Physiome", name)
    N, C, L = meta["N"], meta["C"], meta["L"]
    assert C == STATES[name] == len(meta["channels"])
    assert N + meta["n_dropped"] + meta["n_failed"] == N_SMALL
    X, y, T, M, tm, fs = (_load(folder, f) for f in ARRAYS)
    assert X.shape == y.shape == M.shape == tm.shape == (N, C, L)
    assert T.shape == (N, L) and fs.shape == (N,)
    assert (X.dtype, y.dtype, T.dtype) == (np.float32,) * 3
    assert (M.dtype, tm.dtype, fs.dtype) == (np.bool_, np.bool_, np.int64)
    assert np.isfinite(X).all() and np.isfinite(y).all() and np.isfinite(T).all()
    assert (X[~M] == 0).all() and (y[~tm] == 0).all()
    assert (np.diff(T, axis=1) >= 0).all() and T.min() >= 0 and T.max() < 1
    assert ds.target_mask is not None and ds.target_mask.shape == ds.y.shape
    for k in range(5):
        val = ds.given_validation_indices(k)
        assert val is not None and val.size > 0
    assert len(meta["normalisation"]["mean"]) == len(meta["normalisation"]["std"]) == C
    assert meta["raw_files"] and all(len(v) == 64 for v in meta["raw_files"].values())
    assert meta["myokit_version"] == "1.39.2"
    assert meta["timings"]["per_instance_ms"] > 0


@pytest.mark.parametrize("name", list(STATES))
def test_forecast_targets_only_in_second_half(prepared, name):
    folder = prepared[name]
    files = ("T.npy", "M.npy", "target_mask.npy", "forecast_start.npy")
    T, M, tm, fs = (_load(folder, f) for f in files)
    meta = json.loads((folder / "meta.json").read_text())
    half = meta["forecast_from_time"]
    step = np.arange(T.shape[1])[None, :]
    inputs, targets = M.any(axis=1), tm.any(axis=1)
    assert not (inputs & targets).any()
    assert (T[inputs] <= half + 1e-6).all() and (T[targets] > half).all()
    assert not (inputs & (step >= fs[:, None])).any()
    assert not (targets & (step < fs[:, None])).any()
    # compact rows: observed steps first, then forecast steps, then padding only
    real = inputs | targets
    lengths = real.sum(axis=1)
    assert (real == (step < lengths[:, None])).all()
    assert (fs == inputs.sum(axis=1)).all()
    assert tm.sum() > 0 and M.sum() > 0


@pytest.mark.parametrize("name", list(STATES))
def test_folds_disjoint_and_covering(prepared, name):
    ds = PreparedDataset(prepared[name])
    N = ds.meta["N"]
    tests = []
    for k in range(5):
        test, val = ds.test_indices(k), ds.given_validation_indices(k)
        train = np.setdiff1d(ds.train_indices(k), val)
        assert np.intersect1d(test, val).size == 0
        parts = np.concatenate([train, val, test])
        assert np.array_equal(np.sort(parts), np.arange(N))  # a partition of the rows
        assert ds.meta["fold_sizes"][k] == {
            "train": train.size,
            "val": val.size,
            "test": test.size,
        }
        tests.append(test)
    assert np.unique(np.concatenate(tests)).size == sum(t.size for t in tests)
    if ds.meta["n_dropped"] == 0 and ds.meta["n_failed"] == 0:
        assert [(f["train"], f["val"], f["test"]) for f in ds.meta["fold_sizes"]] == [
            (21, 6, 3)
        ] * 5


def test_fold_assignment_sizes():
    folds = fold_assignment(2000, 5, [0.7, 0.2, 0.1], seed=0)
    tests = np.concatenate([f["test"] for f in folds])
    assert np.unique(tests).size == 1000
    for f in folds:
        assert (f["train"].size, f["val"].size, f["test"].size) == (1400, 400, 200)
        rows = np.concatenate([f["train"], f["val"], f["test"]])
        assert np.array_equal(np.sort(rows), np.arange(2000))
    with pytest.raises(DataError, match="n_instances"):
        fold_assignment(5, 5, [0.7, 0.2, 0.1], seed=0)


# --------------------------------------------------------------------------- protocol
def test_mask_rate_and_zscore_on_training_rows(root, prepared):
    name = "HodgkinHuxley1952"
    cfg = resolve_settings(name, {"generator": {"n_instances": 200, "compact": False}})
    sim = simulate_physiome(name, root / "raw" / name, cfg)
    built = build_dataset(sim["traj"], sim["times"], cfg)
    a = built["arrays"]
    n_obs, n_fore = built["n_observed_steps"], built["n_forecast_steps"]
    assert (n_obs, n_fore) == (50, 49) and built["forecast_from_step"] == 50
    M, tm = a["M.npy"], a["target_mask.npy"]
    assert abs(M[:, :, :n_obs].mean() - 0.2) < 0.02  # 80 % of input values hidden
    assert abs(tm[:, :, n_obs:].mean() - 0.2) < 0.02  # 80 % of target values hidden
    assert not M[:, :, n_obs:].any() and not tm[:, :, :n_obs].any()

    # statistics: the rows in no fold's test set, over both parts, ddof 1
    folds = fold_assignment(len(sim["traj"]), 5, cfg["split"], seed_words(cfg))
    in_test = np.zeros(len(sim["traj"]), dtype=bool)
    for f in folds:
        in_test[f["test"]] = True
    used = sim["traj"][~in_test][:, :, :99]
    assert np.allclose(built["mean"], used.mean(axis=(0, 2)))
    assert np.allclose(built["std"], used.transpose(1, 0, 2).reshape(4, -1).std(axis=1, ddof=1))

    # changing test rows does not move the statistics (and such outliers are dropped)
    traj = sim["traj"].copy()
    test_rows = np.flatnonzero(in_test)[:3]
    traj[test_rows] *= 1000.0
    other = build_dataset(traj, sim["times"], cfg)
    assert np.array_equal(other["mean"], built["mean"])
    assert np.array_equal(other["std"], built["std"])
    assert set(test_rows) <= set(other["dropped"].tolist())
    assert other["arrays"]["X.npy"].shape[0] == built["arrays"]["X.npy"].shape[0] - 3
    # ... while a training row does move them
    traj = sim["traj"].copy()
    traj[np.flatnonzero(~in_test)[0]] *= 2.0
    assert not np.array_equal(build_dataset(traj, sim["times"], cfg)["mean"], built["mean"])


def test_drop_rule_and_values(root):
    cfg = resolve_settings("Noble1962", {"generator": {"n_instances": 40, "noise": 0.0}})
    rng = np.random.default_rng(0)
    traj = rng.standard_normal((40, 3, 100))
    traj[7, 1, 60] = 1e3  # one instance far outside |z| <= 10
    times = np.linspace(0, 5.0, 100)
    built = build_dataset(traj, times, cfg)
    assert built["dropped"].tolist() == [7]
    X, y, M, tm = (built["arrays"][f] for f in ("X.npy", "y.npy", "M.npy", "target_mask.npy"))
    assert X.shape[0] == 39
    assert np.abs(X).max() <= 10 and np.abs(y).max() <= 10
    # with no noise, X holds exactly the z-scores of the observed clean values
    kept = np.delete(traj, 7, axis=0)
    z = (kept - built["mean"][None, :, None]) / built["std"][None, :, None]
    first = np.flatnonzero(M[0, 0])[0]
    fs = built["arrays"]["forecast_start.npy"][0]
    t = built["arrays"]["T.npy"][0, first] * times[-1]
    assert np.isclose(X[0, 0, first], z[0, 0, np.argmin(abs(times - t))], atol=1e-5)
    assert first < fs


def test_deterministic_and_seeded(root, prepared, tmp_path):
    name = "HodgkinHuxley1952"
    again = prepare_physiome(name, root / "raw", tmp_path / "a", SMALL)
    for fname in (*ARRAYS, *(f"test_indices_fold_{k}.txt" for k in range(5))):
        assert (again / fname).read_bytes() == (prepared[name] / fname).read_bytes(), fname
    other = {"generator": {"n_instances": N_SMALL, "seed": 1, "folds": "disjoint"}}
    seeded = prepare_physiome(name, root / "raw", tmp_path / "b", other)
    assert (seeded / "X.npy").read_bytes() != (again / "X.npy").read_bytes()
    assert json.loads((seeded / "meta.json").read_text())["generation"]["seed"] == 1


# --------------------------------------------------------------------------- raw files
def test_fetch_generate_records_and_is_idempotent(root, prepared):
    name = "BeelerReuter1977"
    dest = root / "raw" / name
    prov = json.loads((dest / PROVENANCE).read_text())
    rels = PHYSIOME_MODELS[name]["files"].values()
    assert prov["mode"] == "generate" and prov["versions"]["myokit"] == "1.39.2"
    assert prov["raw_files"] == {f"{name}/{Path(r).name}": PINNED_SHA256[r] for r in rels}
    assert all(sha256_file(dest / Path(r).name) == PINNED_SHA256[r] for r in rels)
    before = (dest / PROVENANCE).read_bytes()
    assert fetch_physiome(name, root / "raw", SMALL) == prov
    assert (dest / PROVENANCE).read_bytes() == before


@pytest.mark.parametrize("name", ["LuoRudy1991", "HodgkinHuxley1952"])
def test_corrupt_model_file_is_named(tmp_path, name):
    fetch_physiome(name, tmp_path / "raw", SMALL)
    dest = tmp_path / "raw" / name
    model = dest / Path(PHYSIOME_MODELS[name]["files"]["model"]).name
    data = model.read_bytes()
    model.write_bytes(data[: len(data) // 2])  # truncated
    with pytest.raises(DataError, match=str(model)):
        prepare_physiome(name, tmp_path / "raw", tmp_path / "out", SMALL)
    assert not (tmp_path / "out" / name).exists()
    # a truncated file with a matching record still fails, naming the file
    with pytest.raises(DataError, match=str(model)):
        load_model_files(PHYSIOME_MODELS[name], dest)
    model.write_bytes(b"\x00\xff garbage")
    with pytest.raises(DataError, match=str(model)):
        load_model_files(PHYSIOME_MODELS[name], dest)


def test_missing_fetch_is_an_error(tmp_path):
    with pytest.raises(DataError, match="fetch"):
        prepare_physiome("Noble1962", tmp_path / "raw", tmp_path / "out", SMALL)


# --------------------------------------------------------------------------- settings
def test_settings_resolution_and_errors():
    cfg = resolve_settings("DiFrancescoNoble1985", {})
    assert (cfg["horizon"], cfg["d_states"], cfg["d_constants"]) == (10000.0, 0.1, 0.1)
    assert (cfg["n_instances"], cfg["mask_rate"], cfg["noise"], cfg["max_abs"]) == (
        2000,
        0.8,
        0.05,
        10.0,
    )
    assert cfg["split"] == [0.7, 0.2, 0.1] and cfg["n_folds"] == 5
    hh = resolve_settings(
        "HodgkinHuxley1952",
        {"generator": {"models": {"HodgkinHuxley1952": {"horizon": 12.0}}}, "max_epochs": 3},
    )
    assert (hh["horizon"], hh["d_states"], hh["d_constants"]) == (12.0, 0.5, 0.3)
    assert DEFAULTS["mode"] == "generate"
    with pytest.raises(DataError, match="unknown key"):
        resolve_settings("Noble1962", {"generator": {"n_instance": 3}})
    with pytest.raises(DataError, match="generator.mask_rate"):
        resolve_settings("Noble1962", {"generator": {"mask_rate": 1.5}})
    with pytest.raises(DataError, match="zenodo.url|unknown key"):
        resolve_settings("Noble1962", {"zenodo": {"uri": "x"}})
    with pytest.raises(DataError, match="unknown"):
        resolve_settings("Hodgkin", {})


def test_locate(monkeypatch):
    locate_physiome("LuoRudy1991", {})
    with pytest.raises(DataError, match="offline"):
        locate_physiome("HodgkinHuxley1952", {"mode": "zenodo", "offline": True})
    with pytest.raises(DataError, match="mode: generate"):
        locate_physiome("Noble1962", {"mode": "zenodo"})
    with pytest.raises(DataError, match="https"):
        locate_physiome("HodgkinHuxley1952", {"mode": "zenodo", "zenodo": {"url": "http://x.org"}})
    locate_physiome("DiFrancescoNoble1985", {"mode": "zenodo"})


def test_check_url():
    assert check_url("https://zenodo.org/") == "https://zenodo.org"
    assert check_url("http://127.0.0.1:8000") == "http://127.0.0.1:8000"
    assert check_url("http://localhost:1/") == "http://localhost:1"
    for bad in ("http://zenodo.org", "ftp://127.0.0.1/x", "file:///etc/passwd", "zenodo.org"):
        with pytest.raises(DataError, match="https"):
            check_url(bad)


# --------------------------------------------------------------------------- zenodo
OFFICIAL = "hodgkin_huxley_1952_variant01"


def _zip(members: dict[str, bytes], symlinks: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    return buf.getvalue()


def _archive() -> bytes:
    rng = np.random.default_rng(0)
    members = {}
    for ds in (OFFICIAL, "dupont_1991b"):
        for fold in range(2):
            for part in ("train", "valid", "test"):
                members[f"final/{ds}/{fold}/{part}.pt"] = rng.bytes(3000)
    return _zip(members)


def _zsettings(url: str, **zen) -> dict:
    return {"source": "physiome", "mode": "zenodo", "zenodo": {"url": url, **zen}}


@pytest.fixture
def zenodo():
    with FakeZenodo() as z:
        z.add_record("11492058", {"final.zip": _archive()})
        yield z


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_zenodo_fetch_verifies_and_extracts(tmp_path, zenodo):
    raw = tmp_path / "raw"
    prov = fetch_physiome("HodgkinHuxley1952", raw, _zsettings(zenodo.url))
    dest = raw / "HodgkinHuxley1952"
    data = zenodo.records["11492058"]["final.zip"]
    assert prov["archive"]["md5"] == hashlib.md5(data).hexdigest()
    assert prov["archive"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert prov["zenodo_dataset"] == OFFICIAL and prov["mode"] == "zenodo"
    files = sorted(k.split("/", 1)[1] for k in prov["raw_files"])
    assert files == sorted(
        f"final/{OFFICIAL}/{f}/{p}.pt" for f in range(2) for p in ("train", "valid", "test")
    )
    assert not (dest / "final" / "dupont_1991b").exists()
    assert not (dest / ".zenodo-download").exists()  # the archive is not kept
    # intact: no network the second time
    n = len(zenodo.requests)
    assert fetch_physiome("HodgkinHuxley1952", raw, _zsettings(zenodo.url)) == prov
    assert len(zenodo.requests) == n
    # and preparing it says why it cannot
    with pytest.raises(DataError, match="mode: generate"):
        prepare_physiome("HodgkinHuxley1952", raw, tmp_path / "out", _zsettings(zenodo.url))


def test_zenodo_corrupt_download_keeps_previous_copy(tmp_path, zenodo):
    raw = tmp_path / "raw"
    fetch_physiome("HodgkinHuxley1952", raw, _zsettings(zenodo.url))
    dest = raw / "HodgkinHuxley1952"
    before = _tree(dest)
    good = zenodo.records["11492058"]["final.zip"]
    zenodo.corrupt["final.zip"] = bytes(b ^ 0x5A for b in good)  # same size, other bytes
    with pytest.raises(DataError, match="corrupt.*md5|md5"):
        fetch_physiome("HodgkinHuxley1952", raw, _zsettings(zenodo.url, force=True))
    assert _tree(dest) == {k: v for k, v in before.items()}  # previous copy and provenance
    assert not list(dest.rglob("*.part"))


def test_zenodo_interrupted_transfer_never_complete_then_resumed(tmp_path, zenodo):
    raw = tmp_path / "raw"
    size = len(zenodo.records["11492058"]["final.zip"])
    cut = size // 2
    zenodo.cut["final.zip"] = cut
    zenodo.cut_times["final.zip"] = 1
    settings = _zsettings(zenodo.url, retries=0, timeout=10)
    with pytest.raises(DataError, match="interrupted"):
        fetch_physiome("HodgkinHuxley1952", raw, settings)
    dest = raw / "HodgkinHuxley1952"
    assert not (dest / PROVENANCE).exists() and not (dest / "final").exists()
    parts = list(dest.rglob("final.zip.part"))
    assert len(parts) == 1 and parts[0].stat().st_size == cut
    assert not list(dest.rglob("final.zip"))  # never renamed as if complete
    prov = fetch_physiome("HodgkinHuxley1952", raw, settings)  # the retry resumes
    assert ("GET", "/api/records/11492058/files/final.zip/content", f"bytes={cut}-") in (
        zenodo.requests
    )
    assert prov["archive"]["size"] == size
    assert (dest / "final" / OFFICIAL / "0" / "train.pt").is_file()


def test_zenodo_retries_within_one_fetch(tmp_path, zenodo):
    zenodo.cut["final.zip"] = 100
    zenodo.cut_times["final.zip"] = 2
    prov = fetch_physiome("HodgkinHuxley1952", tmp_path, _zsettings(zenodo.url, retries=2))
    assert zenodo.count("GET", "/content") == 3
    assert prov["raw_files"]


def test_zenodo_zip_slip_refused(tmp_path):
    evil = _zip({f"final/{OFFICIAL}/0/train.pt": b"ok", "../evil.txt": b"pwned"})
    with FakeZenodo() as z:
        z.add_record("11492058", {"final.zip": evil})
        with pytest.raises(DataError, match=r"\.\./evil\.txt"):
            fetch_physiome("HodgkinHuxley1952", tmp_path / "raw", _zsettings(z.url))
    assert not (tmp_path / "evil.txt").exists() and not (tmp_path / "raw" / "evil.txt").exists()
    dest = tmp_path / "raw" / "HodgkinHuxley1952"
    assert not (dest / PROVENANCE).exists() and not (dest / "final").exists()


@pytest.mark.parametrize(
    "members, symlinks, bad",
    [
        ({"/abs/x.pt": b"x"}, None, "/abs/x.pt"),
        ({"final/a/../../../x.pt": b"x"}, None, "x.pt"),
        ({"C:\\x.pt": b"x"}, None, "x.pt"),
        ({}, {"final/link": "/etc/passwd"}, "final/link"),
    ],
)
def test_safe_extract_refuses(tmp_path, members, symlinks, bad):
    archive = tmp_path / "a.zip"
    archive.write_bytes(_zip({"final/ok.pt": b"ok", **members}, symlinks))
    with pytest.raises(DataError, match="refused"):
        safe_extract(archive, tmp_path / "out")
    assert not (tmp_path / "out" / "final" / "ok.pt").exists()  # nothing extracted


def test_zenodo_missing_file_and_dataset(tmp_path):
    with FakeZenodo() as z:
        z.add_record("11492058", {"other.zip": b"x"})
        with pytest.raises(DataError, match="no file 'final.zip'"):
            fetch_physiome("HodgkinHuxley1952", tmp_path, _zsettings(z.url))
        z.add_record("11492058", {"final.zip": _zip({"final/dupont_1991b/0/train.pt": b"x"})})
        with pytest.raises(DataError, match="dupont_1991b"):
            fetch_physiome("DiFrancescoNoble1985", tmp_path, _zsettings(z.url))
    with pytest.raises(DataError, match="offline"):
        fetch_physiome("HodgkinHuxley1952", tmp_path, {"mode": "zenodo", "offline": True})
