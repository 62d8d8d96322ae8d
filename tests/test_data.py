"""ssmbench.data: fetch, prepare and open UEA datasets, on real data; the checksums and the
staged install that every source shares.

aeon ships BasicMotions and JapaneseVowels, so most tests run anywhere (offline).
The RacketSports test needs a real copy of the UEA archive (the `shared_uea` fixture of
conftest.py).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ssmbench.data import (
    UEA_DATASETS,
    DataError,
    PreparedDataset,
    fetch_uea,
    known_datasets,
    prepare_uea,
    stratified_validation_split,
)
from ssmbench.data.uea.ts_reader import read_ts

CONTRACT_META_KEYS = {
    "name",
    "benchmark",
    "domain",
    "task",
    "N",
    "C",
    "L",
    "n_classes",
    "classes",
    "n_train",
    "n_test",
    "fold_scheme",
    "n_folds",
    "source",
    "source_url",
    "raw_files",
    "length_policy",
    "min_length",
    "max_length",
    "nan_policy",
    "normalisation",
    "prepared_with",
}
EXPECTED = {  # name: (N, C, L, n_train, n_classes, min_length)
    "BasicMotions": (80, 6, 100, 40, 4, 100),
    "JapaneseVowels": (640, 12, 29, 270, 9, 7),
}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _bundled(name: str) -> Path:
    import aeon.datasets

    return Path(aeon.datasets.__file__).resolve().parent / "data" / name


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """BasicMotions and JapaneseVowels fetched from aeon's copy and prepared, once."""
    root = tmp_path_factory.mktemp("uea")
    out = {}
    for name in EXPECTED:
        prov = fetch_uea(name, root / "raw", download=False)
        out[name] = (prov, prepare_uea(name, root / "raw", root / "prepared"), root)
    return out


def _copy_archive(tmp_path: Path, name: str, src: Path | None = None) -> Path:
    """A private archive_dir holding a writable copy of ``name``'s two files."""
    archive = tmp_path / "archive"
    (archive / name).mkdir(parents=True)
    for split in ("TRAIN", "TEST"):
        shutil.copyfile(
            (src or _bundled(name)) / f"{name}_{split}.ts", archive / name / f"{name}_{split}.ts"
        )
    return archive


def _edit_first_case(path: Path, edit) -> None:
    """Apply ``edit(channels: list[list[str]]) -> None`` to the first data row of a .ts."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    i = next(k for k, line in enumerate(lines) if line.strip().lower() == "@data") + 1
    parts = lines[i].rstrip("\n").split(":")
    channels = [p.split(",") for p in parts[:-1]]
    edit(channels)
    lines[i] = ":".join([",".join(c) for c in channels] + [parts[-1]]) + "\n"
    path.write_text("".join(lines), encoding="utf-8")


# ------------------------------------------------------------------ prepare, real data
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_prepare_bundled(prepared, name):
    from aeon.datasets import load_from_ts_file

    prov, path, root = prepared[name]
    N, C, L, n_train, K, min_len = EXPECTED[name]
    assert prov["source"] == "aeon_bundled"
    for split in ("TRAIN", "TEST"):
        rel = f"{name}/{name}_{split}.ts"
        bundled = _bundled(name) / f"{name}_{split}.ts"
        assert prov["raw_files"][rel] == _sha(root / "raw" / rel) == _sha(bundled)

    d = PreparedDataset(path)
    m = d.meta
    assert CONTRACT_META_KEYS <= set(m)
    assert d.X.shape == (N, C, L) and d.X.dtype == np.float32
    assert d.y.shape == (N,) and d.y.dtype == np.int64
    assert (m["N"], m["C"], m["L"], m["n_train"], m["n_test"]) == (N, C, L, n_train, N - n_train)
    assert m["n_classes"] == K == len(m["classes"]) and set(np.unique(d.y)) == set(range(K))
    assert m["classes"] == sorted(m["classes"])
    assert m["raw_files"] == prov["raw_files"] and m["source"] == "aeon_bundled"
    assert (m["min_length"], m["max_length"]) == (min_len, L)
    assert m["fold_scheme"] == "official_split" and d.n_folds == 1
    assert m["domain"] == UEA_DATASETS[name]["domain"]

    # Test rows are the TEST file's rows, after the TRAIN rows; every fold is that split.
    assert np.array_equal(d.test_indices(0), np.arange(n_train, N))
    assert np.array_equal(d.test_indices(3), d.test_indices(0))
    assert np.array_equal(d.train_indices(1), np.arange(n_train))

    # Normalisation uses TRAIN statistics only: the raw TRAIN values' mean/std per channel.
    Xtr, ytr = load_from_ts_file(str(root / "raw" / name / f"{name}_TRAIN.ts"))
    real = np.concatenate([np.asarray(x) for x in Xtr], axis=1)  # (C, total train length)
    np.testing.assert_allclose(m["normalisation"]["mean"], real.mean(axis=1), rtol=1e-9)
    np.testing.assert_allclose(m["normalisation"]["std"], real.std(axis=1), rtol=1e-9)
    X = np.asarray(d.X, dtype=np.float64)
    np.testing.assert_allclose(X[:n_train].sum(axis=(0, 2)), 0.0, atol=1e-3)  # padding is 0
    assert np.abs(X[n_train:].mean(axis=(0, 2))).max() > 1e-3  # TEST stats were not used
    # Class ids follow the sorted data labels (aeon lower-cases; compare case-insensitively).
    classes = [c.casefold() for c in m["classes"]]
    assert [classes[i] for i in d.y[:n_train]] == [str(v).casefold() for v in ytr]

    if min_len < L:  # JapaneseVowels: right zero padding after z-scoring
        assert m["length_policy"].startswith("right_zero_pad")
        lengths = [np.asarray(x).shape[1] for x in Xtr]
        i = int(np.argmin(lengths))
        assert np.all(X[i, :, lengths[i] :] == 0) and np.any(X[i, :, : lengths[i]] != 0)
    else:
        assert m["length_policy"].startswith("equal_length")


def test_fetch_is_noop_when_present(prepared):
    prov, _, root = prepared["BasicMotions"]
    f = root / "raw" / "BasicMotions" / "BasicMotions_TRAIN.ts"
    before = f.stat().st_mtime_ns
    assert fetch_uea("BasicMotions", root / "raw", download=False) == prov
    assert f.stat().st_mtime_ns == before


def test_prepare_replaces_atomically(prepared, tmp_path):
    _, path, root = prepared["BasicMotions"]
    out = tmp_path / "prepared"
    first = prepare_uea("BasicMotions", root / "raw", out)
    (first / "stale.txt").write_text("old folder")
    second = prepare_uea("BasicMotions", root / "raw", out)
    assert second == first and not (second / "stale.txt").exists()
    assert sorted(p.name for p in out.iterdir()) == ["BasicMotions"]  # no temp left behind
    assert np.array_equal(PreparedDataset(second).X, PreparedDataset(path).X)


def test_racketsports_label_case(tmp_path, shared_uea):
    prov = fetch_uea("RacketSports", tmp_path / "raw", archive_dir=shared_uea, download=False)
    assert prov["source"] == "archive_dir" and prov["verified_against"]
    d = PreparedDataset(prepare_uea("RacketSports", tmp_path / "raw", tmp_path / "prepared"))
    m = d.meta
    # The data's own spelling (aeon's reader would give lower case).
    assert m["classes"] == [
        "Badminton_Clear",
        "Badminton_Smash",
        "Squash_BackhandBoast",
        "Squash_ForehandBoast",
    ]
    assert (m["N"], m["C"], m["L"], m["n_train"]) == (303, 6, 30, 151)
    assert np.bincount(d.y[:151]).tolist() == [43, 39, 34, 35]


def test_label_case_only_matters_for_header_matching(tmp_path):
    archive = _copy_archive(tmp_path, "BasicMotions")
    for split in ("TRAIN", "TEST"):
        p = archive / "BasicMotions" / f"BasicMotions_{split}.ts"
        text = p.read_text(encoding="utf-8")
        text = text.replace(
            "@classLabel true Standing Running Walking Badminton",
            "@classLabel true standing RUNNING walking badminton",
        )
        p.write_text(text, encoding="utf-8")
    # One row spelt differently from all the others: still the same class.
    p = archive / "BasicMotions" / "BasicMotions_TRAIN.ts"
    lines = p.read_text(encoding="utf-8").splitlines(keepends=True)
    i = next(k for k, line in enumerate(lines) if line.strip() == "@data") + 1
    head, label = lines[i].rstrip("\n").rsplit(":", 1)
    lines[i] = f"{head}:{label.upper()}\n"
    p.write_text("".join(lines), encoding="utf-8")

    fetch_uea("BasicMotions", tmp_path / "raw", archive_dir=archive, download=False)
    m = PreparedDataset(prepare_uea("BasicMotions", tmp_path / "raw", tmp_path / "out")).meta
    assert m["classes"] == ["Badminton", "Running", "Standing", "Walking"]


# ------------------------------------------------------------------ bad input
def test_truncated_ts_names_the_file(tmp_path):
    raw = tmp_path / "raw" / "BasicMotions"
    raw.mkdir(parents=True)
    src = _bundled("BasicMotions")
    data = (src / "BasicMotions_TRAIN.ts").read_bytes()
    (raw / "BasicMotions_TRAIN.ts").write_bytes(data[: len(data) // 2])
    shutil.copyfile(src / "BasicMotions_TEST.ts", raw / "BasicMotions_TEST.ts")
    with pytest.raises(DataError, match=r"BasicMotions_TRAIN\.ts.*truncated"):
        prepare_uea("BasicMotions", tmp_path / "raw", tmp_path / "out")
    assert not (tmp_path / "out" / "BasicMotions").exists()


@pytest.mark.parametrize(
    "edit, says",
    [
        # BasicMotions has 6 channels: a header saying univariate contradicts them
        (lambda t: t.replace("@univariate false", "@univariate true"),
         r"line \d+: 6 channels but the header says @univariate true"),
        # a foreign first line: named by its number and length, never quoted
        (lambda t: "root:x:0:0:root:/root:/bin/bash\n" + t,
         r"line 1: expected a header tag \(@\.\.\.\) or @data, found a line of 31 "),
    ],
)  # fmt: skip
def test_a_header_that_contradicts_the_data_is_named_without_quoting_the_file(tmp_path, edit, says):
    p = tmp_path / "BasicMotions_TRAIN.ts"
    p.write_text(edit((_bundled("BasicMotions") / p.name).read_text(encoding="utf-8")))
    with pytest.raises(DataError, match=says) as err:
        read_ts(p)
    assert "root:x" not in str(err.value)


def test_a_byte_order_mark_before_the_header_is_dropped(tmp_path):
    """An editor that saves UTF-8 with a byte order mark: the file reads as without it."""
    src = _bundled("BasicMotions") / "BasicMotions_TRAIN.ts"
    p = tmp_path / src.name
    p.write_bytes(b"\xef\xbb\xbf" + src.read_bytes())
    with_mark, without = read_ts(p), read_ts(src)
    assert with_mark.header == without.header and with_mark.labels == without.labels
    assert all(np.array_equal(a, b) for a, b in zip(with_mark.series, without.series, strict=True))


def test_nan_inside_a_series_is_an_error(tmp_path):
    p = tmp_path / "BasicMotions_TRAIN.ts"
    shutil.copyfile(_bundled("BasicMotions") / p.name, p)

    def put_nan(channels):
        channels[2][50] = "NaN"

    _edit_first_case(p, put_nan)
    with pytest.raises(DataError, match=r"BasicMotions_TRAIN\.ts: 1 missing value"):
        read_ts(p)


def test_trailing_nan_is_padding(tmp_path):
    archive = _copy_archive(tmp_path, "BasicMotions")

    def pad(channels):
        for c in channels:
            c[-5:] = ["NaN"] * 5

    _edit_first_case(archive / "BasicMotions" / "BasicMotions_TRAIN.ts", pad)
    fetch_uea("BasicMotions", tmp_path / "raw", archive_dir=archive, download=False)
    d = PreparedDataset(prepare_uea("BasicMotions", tmp_path / "raw", tmp_path / "out"))
    assert (d.meta["min_length"], d.meta["L"], d.meta["n_padding_nan"]) == (95, 100, 30)
    assert np.all(d.X[0, :, 95:] == 0) and np.isfinite(d.X).all()


def test_missing_archive_dataset_without_download(tmp_path):
    (tmp_path / "archive").mkdir()
    with pytest.raises(DataError, match=r"archive[/\\]RacketSports[/\\]RacketSports_TRAIN\.ts"):
        fetch_uea(
            "RacketSports", tmp_path / "raw", archive_dir=tmp_path / "archive", download=False
        )
    with pytest.raises(DataError, match="not available offline.*archive_dir"):
        fetch_uea("RacketSports", tmp_path / "raw", archive_dir=None, download=False)
    assert not (tmp_path / "raw" / "RacketSports").exists()


def test_download_goes_through_aeon(tmp_path, monkeypatch):
    """No network here: stand in for aeon's Zenodo download with the bundled files."""
    import aeon.datasets

    calls = []

    def fake_load_classification(name, extract_path=None, **kwargs):
        calls.append((name, extract_path, kwargs))
        (Path(extract_path) / name).mkdir(parents=True)
        for split in ("TRAIN", "TEST"):  # what aeon leaves: <extract_path>/<name>/<name>_*.ts
            shutil.copyfile(
                _bundled("BasicMotions") / f"BasicMotions_{split}.ts",
                Path(extract_path) / name / f"{name}_{split}.ts",
            )
        return None, None

    monkeypatch.setattr(aeon.datasets, "load_classification", fake_load_classification)
    # Not bundled, no archive_dir: download (RacketSports' name, BasicMotions' content).
    prov = fetch_uea("RacketSports", tmp_path / "raw", download=True)
    assert prov["source"] == "download" and prov["source_url"].startswith("https://zenodo.org/")
    assert calls and calls[0][0] == "RacketSports"
    assert sorted(p.name for p in (tmp_path / "raw").iterdir()) == ["RacketSports"]

    def offline(name, extract_path=None, **kwargs):
        raise ValueError("Failed to retrieve Zenodo metadata: <urlopen error>")

    monkeypatch.setattr(aeon.datasets, "load_classification", offline)
    with pytest.raises(DataError, match="download from https://zenodo.org/.* failed.*archive_dir"):
        fetch_uea("Cricket", tmp_path / "raw", download=True)
    assert sorted(p.name for p in (tmp_path / "raw").iterdir()) == ["RacketSports"]


def test_checksum_mismatch_keeps_previous_copy(tmp_path):
    name = "BasicMotions"
    good = _copy_archive(tmp_path / "a", name)
    sums = "".join(
        f"{_sha(good / name / f'{name}_{s}.ts')}  {name}/{name}_{s}.ts\n" for s in ("TRAIN", "TEST")
    )
    (good / "SHA256SUMS").write_text(sums)
    raw = tmp_path / "raw"
    prov = fetch_uea(name, raw, archive_dir=good, download=False)
    assert prov["verified_against"].endswith("SHA256SUMS")
    kept = {f.name: _sha(f) for f in (raw / name).iterdir()}

    # A corrupt copy whose checksum file lists the good sums.
    bad = _copy_archive(tmp_path / "b", name)
    (bad / "SHA256SUMS").write_text(sums)
    f = bad / name / f"{name}_TRAIN.ts"
    f.write_bytes(f.read_bytes().replace(b"0.", b"1.", 1))
    with pytest.raises(DataError, match=rf"{name}_TRAIN\.ts: sha256 .* does not match"):
        fetch_uea(name, raw, archive_dir=bad, download=False, force=True)
    # A checksum file (per dataset folder) that disagrees with the files.
    (bad / "SHA256SUMS").unlink()
    (bad / name / "SHA256SUMS").write_text(f"{'0' * 64}  {name}_TEST.ts\n")
    with pytest.raises(DataError, match=rf"{name}_TEST\.ts: sha256 .* does not match"):
        fetch_uea(name, raw, archive_dir=bad, download=False)

    assert {f.name: _sha(f) for f in (raw / name).iterdir()} == kept
    assert fetch_uea(name, raw, archive_dir=good, download=False) == prov


# ------------------------------------------------------------------ checksums and install
def test_file_digests_in_one_pass(tmp_path):
    from ssmbench.data.checksums import GIT_BLOB_SHA1, file_digests

    path = tmp_path / "f.bin"
    data = np.random.default_rng(0).bytes(3 << 20)
    path.write_bytes(data)
    got = file_digests(path, ("md5", "sha256", GIT_BLOB_SHA1))
    git = subprocess.run(["git", "hash-object", str(path)], capture_output=True, text=True)
    assert got == {
        "md5": hashlib.md5(data).hexdigest(),
        "sha256": hashlib.sha256(data).hexdigest(),
        GIT_BLOB_SHA1: git.stdout.strip(),
    }


def test_sha256sums_reader_and_lookup(tmp_path):
    from ssmbench.data.checksums import listed_sha256, read_sha256sums

    a, b = "a" * 64, "B" * 64
    (tmp_path / "Set").mkdir()
    (tmp_path / "SHA256SUMS").write_text(f"# comment\n{a}  Set/x.ts\n{a} *./Set/y.ts\n")
    (tmp_path / "Set" / "SHA256SUMS").write_text(f"{b}  y.ts\n")
    assert read_sha256sums(tmp_path / "SHA256SUMS") == {"Set/x.ts": a, "Set/y.ts": a}
    expected, used = listed_sha256(tmp_path, tmp_path / "Set", "Set", ["x.ts", "y.ts", "z.ts"])
    assert expected == {"x.ts": a, "y.ts": b.lower()}  # the dataset folder's list wins
    assert used == f"{tmp_path / 'SHA256SUMS'}, {tmp_path / 'Set' / 'SHA256SUMS'}"
    (tmp_path / "SHA256SUMS").write_text(f"{a}  ok\nnot a checksum line\n")
    with pytest.raises(DataError, match=r"SHA256SUMS: line 2 is not"):
        read_sha256sums(tmp_path / "SHA256SUMS")


def test_staged_install_keeps_old_files_on_failure(tmp_path):
    from ssmbench.data.download import install_staged, staged_path, staging

    dest = tmp_path / "raw" / "Set"
    dest.mkdir(parents=True)
    (dest / "x.ts").write_text("old")
    (dest / "provenance.json").write_text("{}")
    with pytest.raises(RuntimeError), staging(dest) as staged:
        staged["x.ts"] = staged_path(dest, "x.ts")
        staged["x.ts"].write_text("new")
        raise RuntimeError("verification failed")
    assert sorted(p.name for p in dest.iterdir()) == ["provenance.json", "x.ts"]
    assert (dest / "x.ts").read_text() == "old"
    with staging(dest) as staged:
        staged["x.ts"] = staged_path(dest, "x.ts")
        staged["x.ts"].write_text("new")
        folder = staged_path(dest, "final")
        (folder / "sub").mkdir(parents=True)
        staged["final"] = folder
        install_staged(staged, dest)
    assert (dest / "x.ts").read_text() == "new" and (dest / "final" / "sub").is_dir()
    assert sorted(p.name for p in dest.iterdir()) == ["final", "x.ts"]  # provenance went first


# ------------------------------------------------------------------ store and splits
def test_validation_split_is_stratified_and_disjoint_from_test(prepared):
    d = PreparedDataset(prepared["JapaneseVowels"][1])
    train = d.train_indices(0)
    y_train = np.asarray(d.y[train])
    tr, va = stratified_validation_split(y_train, 0.1, seed=0)
    assert np.intersect1d(tr, va).size == 0 and tr.size + va.size == train.size
    assert np.intersect1d(train[va], d.test_indices(0)).size == 0
    assert va.size == 27 and np.bincount(y_train[va], minlength=9).tolist() == [3] * 9
    tr2, va2 = stratified_validation_split(y_train, 0.1, seed=0)
    assert np.array_equal(va, va2)
    assert not np.array_equal(va, stratified_validation_split(y_train, 0.1, seed=1)[1])


def test_validation_split_fallback_for_tiny_sets():
    y = np.array([0] * 5 + [1] * 5 + [2] * 5 + [3])  # class 3 has one sample
    tr, va = stratified_validation_split(y, 0.1, seed=0)
    assert 15 in tr and sorted(y[va].tolist()) == [0, 1, 2]
    y = np.array([0] * 5 + [1] * 5 + [2] * 5)  # 2 validation samples < 3 classes
    tr, va = stratified_validation_split(y, 0.1, seed=0)
    assert sorted(y[va].tolist()) == [0, 1, 2] and sorted(set(y[tr].tolist())) == [0, 1, 2]


def test_store_rejects_incomplete_or_inconsistent_folder(prepared, tmp_path):
    src = prepared["BasicMotions"][1]
    broken = tmp_path / "BasicMotions"
    shutil.copytree(src, broken)
    (broken / "y.npy").unlink()
    (broken / "test_indices_fold_0.txt").unlink()
    with pytest.raises(DataError, match=r"missing y\.npy"):
        PreparedDataset(broken)
    shutil.copy(src / "y.npy", broken / "y.npy")
    with pytest.raises(DataError, match=r"missing test_indices_fold_0\.txt"):
        PreparedDataset(broken)
    shutil.copy(src / "test_indices_fold_0.txt", broken)

    meta = json.loads((broken / "meta.json").read_text())
    (broken / "meta.json").write_text(json.dumps({**meta, "N": 81}))
    with pytest.raises(DataError, match=r"X\.npy: shape \(80, 6, 100\)"):
        PreparedDataset(broken)
    (broken / "meta.json").write_text(
        json.dumps({**meta, "fold_scheme": "given_folds", "n_folds": 2})
    )
    with pytest.raises(DataError, match=r"missing test_indices_fold_1\.txt"):
        PreparedDataset(broken)
    shutil.copy(src / "test_indices_fold_0.txt", broken / "test_indices_fold_1.txt")
    d = PreparedDataset(broken)
    assert d.n_folds == 2
    with pytest.raises(DataError, match="fold 2 requested"):
        d.test_indices(2)


def test_catalog():
    assert len(known_datasets("uea")) == 30
    assert set(known_datasets("uea")) == set(UEA_DATASETS)
    with pytest.raises(DataError, match="no dataset catalog"):
        known_datasets("nope")


# ---------------------------------------------------------------- concurrent prepares
_PREPARE_SCRIPT = """
import sys
from ssmbench.data.sources import prepare
prepare("BasicMotions", sys.argv[1], sys.argv[2], {"source": "uea"})
print("done")
"""


def _prepare_in_subprocess(raw: Path, out: Path):
    return subprocess.Popen(
        [sys.executable, "-c", _PREPARE_SCRIPT, str(raw), str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_prepare_waits_for_another_of_the_same_dataset(tmp_path):
    """The per-dataset lock: while one job holds it, a second prepare of the same dataset
    waits, then runs; neither sees the other's half-written folder."""
    from ssmbench.data.sources import dataset_lock, fetch

    raw, out = tmp_path / "raw", tmp_path / "prepared"
    fetch("BasicMotions", raw, {"source": "uea", "archive_dir": None, "download": False})
    with dataset_lock(out, "BasicMotions"):
        waiting = _prepare_in_subprocess(raw, out)
        with pytest.raises(subprocess.TimeoutExpired):
            waiting.wait(timeout=5)  # it would take ~2 s without the lock
        assert not (out / "BasicMotions").exists()
    stdout, stderr = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, stderr
    assert PreparedDataset(out / "BasicMotions").meta["N"] == 80


def test_two_prepares_at_once_leave_one_good_folder(tmp_path):
    from ssmbench.data.sources import fetch

    raw, out = tmp_path / "raw", tmp_path / "prepared"
    fetch("BasicMotions", raw, {"source": "uea", "archive_dir": None, "download": False})
    jobs = [_prepare_in_subprocess(raw, out) for _ in range(2)]
    for job in jobs:
        _, stderr = job.communicate(timeout=180)
        assert job.returncode == 0, stderr
    dataset = PreparedDataset(out / "BasicMotions")
    assert dataset.X.shape == (80, 6, 100)
    # no temporary or set-aside folders are left behind, only the lock file
    assert sorted(p.name for p in out.iterdir()) == [".BasicMotions.lock", "BasicMotions"]


def test_prepare_before_any_fetch_does_not_claim_a_copy_was_marked_bad(tmp_path):
    from ssmbench.data.provenance import REJECTED, reject_raw_copy

    error = reject_raw_copy(tmp_path / "raw", "ERing", DataError("ERing_TRAIN.ts: missing."))
    assert str(error) == "ERing_TRAIN.ts: missing." and not (tmp_path / "raw").exists()
    (tmp_path / "raw" / "ERing").mkdir(parents=True)
    (tmp_path / "raw" / "ERing" / "provenance.json").write_text('{"dataset": "ERing"}')
    error = reject_raw_copy(tmp_path / "raw", "ERing", DataError("ERing_TRAIN.ts: missing."))
    assert "is marked bad" in str(error) and (tmp_path / "raw" / "ERing" / REJECTED).is_file()


def test_prepare_refuses_a_raw_file_changed_since_its_fetch(tmp_path):
    """A raw .ts file edited after the fetch recorded its sha256 is refused, naming the
    file and the command that fetches it again; a record that lacks the file, or that
    cannot be read, is refused the same way."""
    raw, out = tmp_path / "raw", tmp_path / "prepared"
    fetch_uea("BasicMotions", raw, download=False)
    train = raw / "BasicMotions" / "BasicMotions_TRAIN.ts"
    train.write_text(train.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"BasicMotions_TRAIN.ts: sha256 .* differs .*--force"):
        prepare_uea("BasicMotions", raw, out)
    assert not (out / "BasicMotions").exists()

    prov_path = raw / "BasicMotions" / "provenance.json"
    prov = json.loads(prov_path.read_text(encoding="utf-8"))
    prov["raw_files"].pop("BasicMotions/BasicMotions_TRAIN.ts")
    prov_path.write_text(json.dumps(prov), encoding="utf-8")
    unrecorded = r"BasicMotions_TRAIN.ts: not among the raw files recorded .*--force"
    with pytest.raises(DataError, match=unrecorded):
        prepare_uea("BasicMotions", raw, out)

    prov_path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(DataError, match=r"provenance.json: not a valid provenance record"):
        prepare_uea("BasicMotions", raw, out)
