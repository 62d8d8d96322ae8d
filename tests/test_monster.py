"""MONSTER fetch (Hub, local_dir, offline) and prepare, against a local fake Hub (no internet).

The fake Hub (tests/hub_server.py) serves synthetic MONSTER-format repos on 127.0.0.1; the
real ``huggingface_hub.hf_hub_download`` talks to it through ``HF_ENDPOINT``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import numpy as np
import pytest

from ssmbench.data.errors import DataError
from ssmbench.data.monster.fetch import PROVENANCE, STAGING, fetch_monster, monster_files
from ssmbench.data.monster.prepare import prepare_monster
from ssmbench.data.store import PreparedDataset

sys.path.insert(0, str(Path(__file__).parent))
from hub_server import FakeHub  # noqa: E402

NAME = "TinyMonster"
REPO = f"monster-monash/{NAME}"
COMMIT1 = "1" * 40
COMMIT2 = "2" * 40
N, C, L = 50, 3, 16
LABELS = [3, 7, 9]


def npy_bytes(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def make_dataset(dtype=np.float64, seed=0, name=NAME, n=N):
    """(X, y, folds, {file name: bytes}) of a synthetic MONSTER-format dataset."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, C, L)).astype(dtype)
    y = rng.choice(LABELS, size=n).astype(np.int64)
    perm = rng.permutation(n)
    folds = np.array_split(perm, 5)
    files = {f"{name}_X.npy": npy_bytes(X), f"{name}_y.npy": npy_bytes(y)}
    for k, f in enumerate(folds):
        files[f"test_indices_fold_{k}.txt"] = "".join(f"{i}\n" for i in f).encode()
    return X, y, folds, files


def write_files(folder: Path, files: dict[str, bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for fname, data in files.items():
        (folder / fname).write_bytes(data)
    return folder


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def hub_env(monkeypatch, tmp_path):
    """huggingface_hub pointed at nothing real: no xet, no telemetry, a private cache."""
    import huggingface_hub.constants as constants
    import huggingface_hub.file_download as file_download

    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf_cache"))
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    # hf_hub_download sleeps 1 s before each resume attempt; tests need not wait.
    fast_time = types.SimpleNamespace(**{k: getattr(time, k) for k in dir(time) if k[0] != "_"})
    fast_time.sleep = lambda s: None
    monkeypatch.setattr(file_download, "time", fast_time)
    return monkeypatch


@pytest.fixture
def hub(hub_env):
    """A running fake Hub holding monster-monash/TinyMonster (float64 X) at COMMIT1;
    HF_ENDPOINT points at it."""
    X, y, folds, files = make_dataset(np.float64)
    server = FakeHub()
    server.add_repo(REPO, files, COMMIT1)
    server.data = (X, y, folds, files)
    with server:
        hub_env.setenv("HF_ENDPOINT", server.endpoint)
        yield server


# --------------------------------------------------------------------------- fetch: Hub
def test_fetch_and_prepare_from_hub(hub, tmp_path):
    X, y, folds, files = hub.data
    raw = tmp_path / "raw"
    prov = fetch_monster(NAME, raw)

    dest = raw / NAME
    assert prov["source"] == "hub"
    assert prov["repo_id"] == REPO
    assert prov["revision"] == COMMIT1 and prov["revision_requested"] == "main"
    assert prov["source_url"] == f"{hub.endpoint}/datasets/{REPO}/tree/{COMMIT1}"
    assert prov["raw_files"] == {f"{NAME}/{f}": sha(b) for f, b in files.items()}
    assert prov["sizes"] == {f"{NAME}/{f}": len(b) for f, b in files.items()}
    assert prov["verified"][f"{NAME}_X.npy"].startswith("sha256")
    assert prov["verified"]["test_indices_fold_0.txt"].startswith("git blob sha1")
    assert json.loads((dest / PROVENANCE).read_text()) == prov
    for fname, data in files.items():
        assert (dest / fname).read_bytes() == data
    assert not (dest / STAGING).exists()
    downloads = [p for m, p, _ in hub.requests if m == "GET" and "/resolve/" in p]
    assert len(downloads) == len(files)  # each file downloaded once

    out = prepare_monster(NAME, raw, tmp_path / "prepared", chunk_rows=7)
    assert out == tmp_path / "prepared" / NAME
    Xp = np.load(out / "X.npy", mmap_mode="r", allow_pickle=False)
    assert Xp.dtype == np.float32 and Xp.shape == (N, C, L) and Xp.flags.c_contiguous
    np.testing.assert_array_equal(Xp, X.astype(np.float32))
    yp = np.load(out / "y.npy", allow_pickle=False)
    assert yp.dtype == np.int64
    np.testing.assert_array_equal(yp, np.searchsorted(LABELS, y))

    meta = json.loads((out / "meta.json").read_text())
    assert meta["benchmark"] == "monster" and meta["task"] == "classification"
    assert (meta["N"], meta["C"], meta["L"]) == (N, C, L)
    assert meta["n_classes"] == 3
    assert meta["classes"] == ["3", "7", "9"] and meta["label_values"] == LABELS
    assert meta["fold_scheme"] == "given_folds" and meta["n_folds"] == 5
    assert meta["folds_partition"] is True and meta["fold_sizes"] == [len(f) for f in folds]
    assert meta["normalisation"]["kind"] == "none"
    assert meta["raw_files"] == prov["raw_files"]
    assert meta["source"] == "hub" and meta["revision"] == COMMIT1
    assert meta["source_url"] == prov["source_url"]
    assert meta["x_storage"].startswith("converted from float64")
    assert meta["domain"] == "Other"  # not in the catalog
    assert "reject" in meta["nan_policy"]

    ds = PreparedDataset(out)
    for k in range(5):
        np.testing.assert_array_equal(ds.test_indices(k), np.sort(folds[k]))
        assert (out / f"test_indices_fold_{k}.txt").read_bytes() == files[
            f"test_indices_fold_{k}.txt"
        ]
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]


def test_second_fetch_makes_no_request(hub, tmp_path):
    raw = tmp_path / "raw"
    first = fetch_monster(NAME, raw)
    before = hub.count()
    assert fetch_monster(NAME, raw) == first
    assert fetch_monster(NAME, raw, offline=True) == first
    assert hub.count() == before


def test_pinned_revision_and_explicit_endpoint(hub, hub_env, tmp_path):
    hub_env.delenv("HF_ENDPOINT")
    prov = fetch_monster(NAME, tmp_path / "raw", revision=COMMIT1, endpoint=hub.endpoint)
    assert prov["revision"] == COMMIT1 and prov["revision_requested"] == COMMIT1
    assert all(
        f"/resolve/{COMMIT1}/" in path or f"/tree/{COMMIT1}?" in path for _, path, _ in hub.requests
    )


def test_corrupt_download_keeps_previous_copy(hub, tmp_path):
    raw = tmp_path / "raw"
    dest = raw / NAME
    old = fetch_monster(NAME, raw)
    _, _, _, files1 = hub.data

    # A new commit with new X; the transfer of X delivers bytes other than the advertised.
    _, _, _, files2 = make_dataset(np.float64, seed=1)
    hub.add_repo(REPO, files2, COMMIT2)
    x_name = f"{NAME}_X.npy"
    bad = bytearray(files2[x_name])
    bad[-1] ^= 0xFF
    hub.corrupt[x_name] = bytes(bad)

    with pytest.raises(DataError, match=rf"{x_name}.*sha256.*corrupted"):
        fetch_monster(NAME, raw, revision=COMMIT2)
    for fname, data in files1.items():  # the previous good copy is untouched
        assert (dest / fname).read_bytes() == data
    assert json.loads((dest / PROVENANCE).read_text()) == old
    assert not (dest / STAGING / x_name).exists()
    assert fetch_monster(NAME, raw, offline=True) == old  # and still valid

    del hub.corrupt[x_name]
    new = fetch_monster(NAME, raw, revision=COMMIT2)
    assert new["revision"] == COMMIT2
    assert new["raw_files"] == {f"{NAME}/{f}": sha(b) for f, b in files2.items()}
    assert (dest / x_name).read_bytes() == files2[x_name]


def test_interrupted_transfer_fails_cleanly_then_retry_completes(hub, tmp_path):
    _, _, _, files = hub.data
    raw = tmp_path / "raw"
    dest = raw / NAME
    x_name = f"{NAME}_X.npy"
    hub.cut[x_name] = len(files[x_name]) // 2  # every GET of X stops at the middle

    with pytest.raises(DataError, match=rf"{NAME}.*{x_name}.*download"):
        fetch_monster(NAME, raw)
    x_gets = [r for m, p, r in hub.requests if m == "GET" and p.endswith(x_name)]
    assert len(x_gets) == 6  # hf_hub_download's first try and its 5 retries
    assert not (dest / x_name).exists() and not (dest / PROVENANCE).exists()
    leftovers = [p for p in dest.rglob("*") if p.is_file() and p.name.endswith(".npy")]
    assert leftovers == [], leftovers  # no complete-looking file anywhere

    del hub.cut[x_name]
    prov = fetch_monster(NAME, raw)
    assert (dest / x_name).read_bytes() == files[x_name]
    assert prov["raw_files"][f"{NAME}/{x_name}"] == sha(files[x_name])


@pytest.mark.parametrize("chunk", [None, 1024])
def test_connection_dropped_once_is_resumed(hub, hub_env, tmp_path, chunk):
    """hf_hub_download retries within the call: from byte 0 while it has written nothing,
    with a Range request once it has written whole chunks (chunk 1024 < the cut)."""
    import huggingface_hub.constants as constants

    if chunk is not None:
        hub_env.setattr(constants, "DOWNLOAD_CHUNK_SIZE", chunk)
    _, _, _, files = hub.data
    x_name = f"{NAME}_X.npy"
    cut = len(files[x_name]) // 3
    hub.cut[x_name], hub.cut_times[x_name] = cut, 1
    prov = fetch_monster(NAME, tmp_path / "raw")
    assert (tmp_path / "raw" / NAME / x_name).read_bytes() == files[x_name]
    assert prov["raw_files"][f"{NAME}/{x_name}"] == sha(files[x_name])
    x_gets = [r for m, p, r in hub.requests if m == "GET" and p.endswith(x_name)]
    assert x_gets == [None, None if chunk is None else f"bytes={cut // chunk * chunk}-"]


def test_unknown_dataset_names_the_repo(hub, tmp_path):
    with pytest.raises(DataError, match=r"monster-monash/NoSuchSet does not exist"):
        fetch_monster("NoSuchSet", tmp_path / "raw")
    with pytest.raises(DataError, match="not a plain name"):
        fetch_monster("../etc", tmp_path / "raw")


# --------------------------------------------------------------------------- fetch: offline
def test_offline_without_files_names_what_to_set(hub_env, tmp_path):
    with pytest.raises(DataError, match=rf"{NAME} is not available offline.*local_dir"):
        fetch_monster(NAME, tmp_path / "raw", offline=True)


def test_hf_hub_offline_is_respected(hub, hub_env, tmp_path):
    import huggingface_hub.constants as constants

    hub_env.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(DataError, match="not available offline"):
        fetch_monster(NAME, tmp_path / "raw")
    assert hub.count() == 0


def test_offline_adopts_files_placed_by_hand(hub_env, tmp_path):
    _, _, _, files = make_dataset()
    dest = write_files(tmp_path / "raw" / NAME, files)
    prov = fetch_monster(NAME, tmp_path / "raw", offline=True)
    assert prov["source"] == "local_dir" and prov["source_url"] == str(dest.resolve())
    assert prov["raw_files"] == {f"{NAME}/{f}": sha(b) for f, b in files.items()}
    # a damaged file no longer matches the provenance: offline, that is an error
    (dest / "test_indices_fold_3.txt").write_text("0\n")
    with pytest.raises(DataError, match=r"does not match its provenance\.json"):
        fetch_monster(NAME, tmp_path / "raw", offline=True)


# --------------------------------------------------------------------------- fetch: local_dir
@pytest.mark.parametrize("nested", [True, False])
def test_local_dir_source(hub_env, tmp_path, nested):
    _, _, _, files = make_dataset()
    local = tmp_path / "local"
    folder = write_files(local / NAME if nested else local, files)
    prov = fetch_monster(NAME, tmp_path / "raw", local_dir=local, offline=True)
    assert prov["source"] == "local_dir" and prov["source_url"] == str(folder.resolve())
    assert prov["raw_files"] == {f"{NAME}/{f}": sha(b) for f, b in files.items()}
    for fname, data in files.items():
        assert (tmp_path / "raw" / NAME / fname).read_bytes() == data
    assert fetch_monster(NAME, tmp_path / "raw", local_dir=local) == prov  # no-op


def test_local_dir_checks_sha256sums(hub_env, tmp_path):
    _, _, _, files = make_dataset()
    local = tmp_path / "local"
    write_files(local / NAME, files)
    sums = {f"{NAME}/{f}": sha(b) for f, b in files.items()}
    sums[f"{NAME}/{NAME}_y.npy"] = "0" * 64
    (local / "SHA256SUMS").write_text("".join(f"{s}  {p}\n" for p, s in sums.items()))
    with pytest.raises(DataError, match=rf"{NAME}_y.npy: sha256 .* does not match"):
        fetch_monster(NAME, tmp_path / "raw", local_dir=local)
    assert not (tmp_path / "raw" / NAME / PROVENANCE).exists()
    assert not [p for p in (tmp_path / "raw" / NAME).iterdir() if ".tmp-" in p.name]


def test_local_dir_missing_files(hub_env, tmp_path):
    _, _, _, files = make_dataset()
    files.pop("test_indices_fold_4.txt")
    write_files(tmp_path / "local" / NAME, files)
    with pytest.raises(DataError, match="lacks test_indices_fold_4.txt"):
        fetch_monster(NAME, tmp_path / "raw", local_dir=tmp_path / "local")


# --------------------------------------------------------------------------- prepare
def test_float32_x_is_copied_not_linked(hub_env, tmp_path):
    X, y, folds, files = make_dataset(np.float32, name="LakeIce")
    write_files(tmp_path / "local" / "LakeIce", files)
    fetch_monster("LakeIce", tmp_path / "raw", local_dir=tmp_path / "local")
    out = prepare_monster("LakeIce", tmp_path / "raw", tmp_path / "prepared")
    raw_x = tmp_path / "raw" / "LakeIce" / "LakeIce_X.npy"
    assert os.stat(out / "X.npy").st_ino != os.stat(raw_x).st_ino
    assert os.stat(out / "X.npy").st_nlink == os.stat(raw_x).st_nlink == 1
    meta = json.loads((out / "meta.json").read_text())
    assert meta["x_storage"] == "copy" and meta["raw_x_dtype"] == "float32"
    assert meta["domain"] == "Satellite"
    assert any(d.startswith("N: catalog 129280") for d in meta["catalog_differences"])
    ds = PreparedDataset(out)
    np.testing.assert_array_equal(ds.X, X)
    for k in range(5):
        np.testing.assert_array_equal(ds.test_indices(k), np.sort(folds[k]))
    # preparing again replaces the folder; the raw file stays intact
    prepare_monster("LakeIce", tmp_path / "raw", tmp_path / "prepared")
    np.testing.assert_array_equal(np.load(raw_x), X)


@pytest.mark.parametrize("kind", ["float64", "float32-fortran", "int16", "float32-bigendian"])
def test_conversion_in_tiny_chunks_equals_source(hub_env, tmp_path, kind):
    X, _, _, files = make_dataset(np.float64, n=23)
    X = X * 1e3  # float64 values that lose precision in float32
    if kind == "float32-fortran":
        X = np.asfortranarray(X.astype(np.float32))
    elif kind == "int16":
        X = X.astype(np.int16)
    elif kind == "float32-bigendian":
        X = X.astype(">f4")
    files[f"{NAME}_X.npy"] = npy_bytes(X)
    write_files(
        tmp_path / "raw" / NAME,
        files | {f"test_indices_fold_{k}.txt": b"%d\n" % k for k in range(5)},
    )
    for chunk_rows in (1, 4, 100):
        out = prepare_monster(NAME, tmp_path / "raw", tmp_path / "prep", chunk_rows=chunk_rows)
        Xp = np.load(out / "X.npy", allow_pickle=False)
        assert Xp.dtype == np.float32
        np.testing.assert_array_equal(Xp, X.astype(np.float32))
    meta = json.loads((out / "meta.json").read_text())
    assert meta["x_storage"].startswith("converted from")
    assert meta["folds_partition"] is False and meta["fold_sizes"] == [1] * 5
    assert meta["source"] == "raw_dir"  # no provenance: files placed by hand


def _raw_copy(tmp_path, files) -> Path:
    return write_files(tmp_path / "raw" / NAME, files)


def test_truncated_npy_is_named(hub_env, tmp_path):
    _, _, _, files = make_dataset()
    x_name = f"{NAME}_X.npy"
    files[x_name] = files[x_name][:-100]
    _raw_copy(tmp_path, files)
    with pytest.raises(DataError, match=rf"{x_name}: .* truncated"):
        prepare_monster(NAME, tmp_path / "raw", tmp_path / "prep")
    assert not (tmp_path / "prep" / NAME).exists()
    assert not [p for p in tmp_path.glob("prep/*")]  # no temporary folder left

    files[x_name] = b"not a numpy file at all"
    _raw_copy(tmp_path, files)
    with pytest.raises(DataError, match=rf"{x_name}: not a readable \.npy"):
        prepare_monster(NAME, tmp_path / "raw", tmp_path / "prep")


def test_changed_raw_file_is_refused(hub_env, tmp_path):
    _, _, _, files = make_dataset()
    write_files(tmp_path / "local" / NAME, files)
    fetch_monster(NAME, tmp_path / "raw", local_dir=tmp_path / "local")
    (tmp_path / "raw" / NAME / f"{NAME}_y.npy").unlink()
    (tmp_path / "raw" / NAME / f"{NAME}_y.npy").write_bytes(npy_bytes(np.zeros(N, np.int64)))
    with pytest.raises(DataError, match=rf"{NAME}_y.npy: sha256 .* differs"):
        prepare_monster(NAME, tmp_path / "raw", tmp_path / "prep")


def test_unreadable_provenance_is_refused_before_x_is_read(hub_env, tmp_path):
    _, _, _, files = make_dataset()
    files[f"{NAME}_X.npy"] = b"not a numpy file at all"  # reading X first would fail on it
    _raw_copy(tmp_path, files)
    (tmp_path / "raw" / NAME / "provenance.json").write_text("{not json")
    with pytest.raises(DataError, match=r"provenance.json: not a valid provenance record.*--force"):
        prepare_monster(NAME, tmp_path / "raw", tmp_path / "prep")
    assert not (tmp_path / "prep" / NAME).exists()


def test_nan_and_inf_are_rejected_with_counts(hub_env, tmp_path):
    X, _, _, files = make_dataset(np.float32)
    X[3, 1, 4] = np.nan
    X[40, 2, 0] = np.nan
    X[7, 0, 9] = np.inf
    files[f"{NAME}_X.npy"] = npy_bytes(X)
    _raw_copy(tmp_path, files)
    with pytest.raises(DataError, match=rf"{NAME}_X.npy: 2 NaN and 1 infinite"):
        prepare_monster(NAME, tmp_path / "raw", tmp_path / "prep", chunk_rows=5)

    X64 = np.full((N, C, L), 1e300)
    files[f"{NAME}_X.npy"] = npy_bytes(X64)
    _raw_copy(tmp_path, files)
    with pytest.raises(DataError, match="beyond the float32 range"):
        prepare_monster(NAME, tmp_path / "raw", tmp_path / "prep")


@pytest.mark.parametrize(
    "text, message",
    [("0\n50\n", r"out of range \[0, 50\)"), ("1\n2\n1\n", "repeats"), ("1\nx\n", "integer")],
)
def test_bad_fold_files(hub_env, tmp_path, text, message):
    _, _, _, files = make_dataset()
    files["test_indices_fold_2.txt"] = text.encode()
    _raw_copy(tmp_path, files)
    with pytest.raises(DataError, match=rf"test_indices_fold_2.txt: .*{message}"):
        prepare_monster(NAME, tmp_path / "raw", tmp_path / "prep")


def test_y_of_wrong_length(hub_env, tmp_path):
    _, _, _, files = make_dataset()
    files[f"{NAME}_y.npy"] = npy_bytes(np.zeros(N - 1, np.int64))
    _raw_copy(tmp_path, files)
    with pytest.raises(DataError, match=rf"{NAME}_y.npy: shape \(49,\)"):
        prepare_monster(NAME, tmp_path / "raw", tmp_path / "prep")


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux /proc")
def test_prepare_does_not_load_x_into_memory(tmp_path):
    """A 256 MiB float64 X prepares (hash, scan, convert) with a resident set far below it."""
    n, c, length = 2048, 8, 2048  # 2048 * 8 * 2048 * 8 bytes = 256 MiB
    folder = tmp_path / "raw" / NAME
    folder.mkdir(parents=True)
    header = {"descr": "<f8", "fortran_order": False, "shape": (n, c, length)}
    rng = np.random.default_rng(0)
    with open(folder / f"{NAME}_X.npy", "wb") as f:
        np.lib.format.write_array_header_1_0(f, header)
        for _ in range(0, n, 256):
            f.write(rng.standard_normal((256, c, length)).tobytes())
    np.save(folder / f"{NAME}_y.npy", np.arange(n) % 4)
    for k in range(5):
        (folder / f"test_indices_fold_{k}.txt").write_text(
            "".join(f"{i}\n" for i in range(k, n, 5))
        )
    script = textwrap.dedent(
        f"""
        from ssmbench.data.monster.prepare import prepare_monster

        def kib(key):  # this process's VmRSS (now) / VmHWM (peak), from /proc
            for line in open("/proc/self/status"):
                if line.startswith(key + ":"):
                    return int(line.split()[1])

        base = kib("VmRSS")
        prepare_monster({NAME!r}, {str(tmp_path / "raw")!r}, {str(tmp_path / "prep")!r})
        print(base, kib("VmHWM"))
        """
    )
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    base_kib, peak_kib = map(int, res.stdout.split())
    assert (peak_kib - base_kib) < 128 * 1024, (base_kib, peak_kib)  # X is 256 MiB
    Xp = np.load(tmp_path / "prep" / NAME / "X.npy", mmap_mode="r")
    assert Xp.dtype == np.float32 and Xp.shape == (n, c, length)
    assert PreparedDataset(tmp_path / "prep" / NAME).meta["folds_partition"] is True


def test_monster_files_names():
    assert monster_files("LakeIce") == [
        "LakeIce_X.npy",
        "LakeIce_y.npy",
        *(f"test_indices_fold_{k}.txt" for k in range(5)),
    ]


# --------------------------------------------------------------------------- label spelling
def _capital_y(files: dict[str, bytes]) -> dict[str, bytes]:
    """The repo's files with the label file spelt ``<Name>_Y.npy``, as some MONSTER repos do."""
    return {(f"{NAME}_Y.npy" if f == f"{NAME}_y.npy" else f): d for f, d in files.items()}


def test_monster_files_follow_the_listing():
    assert monster_files("LakeIce", ["LakeIce_Y.npy", "LakeIce_X.npy"])[1] == "LakeIce_Y.npy"
    assert monster_files("LakeIce", ["LakeIce_y.npy"])[1] == "LakeIce_y.npy"
    both = ["LakeIce_Y.npy", "LakeIce_y.npy"]  # aeon and the MONSTER loader take _Y first
    assert monster_files("LakeIce", both)[1] == "LakeIce_Y.npy"


@pytest.mark.parametrize("label", ["_y.npy", "_Y.npy"])
def test_both_label_spellings_from_the_hub(hub_env, tmp_path, label):
    X, y, _, files = make_dataset(np.float64)
    if label == "_Y.npy":
        files = _capital_y(files)
    with FakeHub() as server:
        server.add_repo(REPO, files, COMMIT1)
        hub_env.setenv("HF_ENDPOINT", server.endpoint)
        prov = fetch_monster(NAME, tmp_path / "raw")
        tree = [p for m, p, _ in server.requests if m == "GET" and "/tree/" in p]
    assert tree and tree[0].startswith(f"/api/datasets/{REPO}/tree/{COMMIT1}")
    assert f"{NAME}/{NAME}{label}" in prov["raw_files"]
    out = prepare_monster(NAME, tmp_path / "raw", tmp_path / "prep")
    np.testing.assert_array_equal(np.load(out / "y.npy"), np.searchsorted(sorted(LABELS), y))


def test_a_hub_repo_without_labels_names_what_it_holds(hub, hub_env, tmp_path):
    _, _, _, files = make_dataset(np.float64)
    del files[f"{NAME}_y.npy"]
    hub.add_repo(REPO, files, COMMIT2)
    with pytest.raises(DataError, match=rf"has no {NAME}_y\.npy; it holds {NAME}_X\.npy"):
        fetch_monster(NAME, tmp_path / "raw")


def test_capital_y_from_a_local_dir(hub_env, tmp_path):
    _, y, _, files = make_dataset(np.float64)
    write_files(tmp_path / "local" / NAME, _capital_y(files))
    prov = fetch_monster(NAME, tmp_path / "raw", local_dir=tmp_path / "local")
    assert f"{NAME}/{NAME}_Y.npy" in prov["raw_files"]
    out = prepare_monster(NAME, tmp_path / "raw", tmp_path / "prep")
    assert np.load(out / "y.npy").shape == y.shape


def test_an_array_stored_n_l_c_is_refused_not_prepared_as_n_c_l(hub_env, tmp_path):
    """UCIActivity has C = 9 channels of L = 128 steps: an X of shape (N, 128, 9) is the
    layout the other way round (it prepared as 128 channels of 9 steps)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((10, 128, 9)).astype(np.float32)
    y = rng.choice(LABELS, size=10).astype(np.int64)
    files = {"UCIActivity_X.npy": npy_bytes(X), "UCIActivity_y.npy": npy_bytes(y)}
    for k, fold in enumerate(np.array_split(np.arange(10), 5)):
        files[f"test_indices_fold_{k}.txt"] = "".join(f"{i}\n" for i in fold).encode()
    write_files(tmp_path / "local" / "UCIActivity", files)
    fetch_monster("UCIActivity", tmp_path / "raw", local_dir=tmp_path / "local")
    says = (r"UCIActivity_X\.npy: shape \(10, 128, 9\) is \(N, L, C\) for UCIActivity, "
            r"whose catalog has C = 9 channels of L = 128")  # fmt: skip
    with pytest.raises(DataError, match=says):
        prepare_monster("UCIActivity", tmp_path / "raw", tmp_path / "prepared")
    assert not (tmp_path / "prepared" / "UCIActivity").exists()
