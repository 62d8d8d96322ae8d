"""Inputs are snapshots: a prepared dataset never shares storage with the user's source
files, the raw copy and the data recipe say where the data came from, and a source that
changes after the fetch (same path, other content) is seen, re-fetched and re-prepared,
and the run record's dataset digest follows it.

Real data: aeon's BasicMotions (UEA, through a private ``archive_dir``) and a small
MONSTER-format dataset in a ``local_dir``, built as tests/test_monster.py builds them.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from ssmbench.data import sources
from ssmbench.data.errors import DataError
from ssmbench.data.store import PreparedDataset

NAME = "TinyMonster"
N, C, L = 50, 3, 16
UEA = "BasicMotions"


def _sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _npy_bytes(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def _monster_local_dir(root: Path) -> tuple[np.ndarray, Path]:
    """A local_dir holding ``<NAME>/``: float32 X (N, C, L), labels, five folds."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N, C, L)).astype(np.float32)
    y = rng.choice([3, 7, 9], size=N).astype(np.int64)
    folder = root / NAME
    folder.mkdir(parents=True)
    (folder / f"{NAME}_X.npy").write_bytes(_npy_bytes(X))
    (folder / f"{NAME}_y.npy").write_bytes(_npy_bytes(y))
    for k, part in enumerate(np.array_split(rng.permutation(N), 5)):
        (folder / f"test_indices_fold_{k}.txt").write_text("".join(f"{i}\n" for i in part))
    return X, folder


def _bundled(name: str) -> Path:
    import aeon.datasets

    return Path(aeon.datasets.__file__).resolve().parent / "data" / name


def _uea_archive(root: Path, compress: bool = False) -> Path:
    """An archive_dir (no SHA256SUMS) holding a writable copy of BasicMotions."""
    (root / UEA).mkdir(parents=True)
    for split in ("TRAIN", "TEST"):
        src = _bundled(UEA) / f"{UEA}_{split}.ts"
        if compress:
            (root / UEA / f"{src.name}.gz").write_bytes(gzip.compress(src.read_bytes()))
        else:
            shutil.copyfile(src, root / UEA / src.name)
    return root


def _edit_train_file(archive: Path, compress: bool = False) -> None:
    """Change one value of the first TRAIN row in place (same path, other content)."""
    path = archive / UEA / f"{UEA}_TRAIN.ts{'.gz' if compress else ''}"
    text = (gzip.decompress(path.read_bytes()) if compress else path.read_bytes()).decode()
    head, data = text.split("@data\n", 1)
    first, rest = data.split("\n", 1)
    values = first.split(",")
    values[0] = "12.5" if values[0] != "12.5" else "13.5"
    body = (head + "@data\n" + ",".join(values) + "\n" + rest).encode()
    with open(path, "r+b") as f:  # in place: the inode stays
        f.write(gzip.compress(body) if compress else body)
        f.truncate()


def _uea_settings(archive: Path | None) -> dict:
    return {
        "source": "uea",
        "archive_dir": None if archive is None else str(archive),
        "download": False,
        "normalise": True,
    }


# --------------------------------------------------------------------------- MONSTER
def test_local_dir_edited_in_place_leaves_the_prepared_data_and_is_seen(tmp_path):
    X, folder = _monster_local_dir(tmp_path / "local")
    settings = {"source": "monster", "local_dir": str(tmp_path / "local"), "offline": True}
    raw, prepared = tmp_path / "raw", tmp_path / "prepared"
    sources.fetch(NAME, raw, settings)
    out = sources.prepare(NAME, raw, prepared, settings)

    source_x, raw_x, prep_x = folder / f"{NAME}_X.npy", raw / NAME / f"{NAME}_X.npy", out / "X.npy"
    inodes = {os.stat(p).st_ino for p in (source_x, raw_x, prep_x)}
    assert len(inodes) == 3, "the source, the raw copy and the prepared X share storage"
    assert [os.stat(p).st_nlink for p in (source_x, raw_x, prep_x)] == [1, 1, 1]
    meta = json.loads((out / "meta.json").read_text())
    assert meta["x_storage"] == "copy"

    # the tester's edit: the user's file zeroed in place through a writable memory map
    mm = np.load(source_x, mmap_mode="r+", allow_pickle=False)
    mm[:] = 0
    mm.flush()
    del mm
    np.testing.assert_array_equal(PreparedDataset(out).X, X)
    np.testing.assert_array_equal(np.load(raw_x, allow_pickle=False), X)

    # prepare: the raw copy no longer stands for its source, so nothing is prepared
    with pytest.raises(DataError, match=r"TinyMonster_X\.npy changed since it was fetched"):
        sources.prepare(NAME, raw, prepared, settings)
    np.testing.assert_array_equal(PreparedDataset(out).X, X)

    # fetch (no --force): the change is seen, the copy replaced, the reason recorded
    prov = sources.fetch(NAME, raw, settings)
    assert prov["raw_files"][f"{NAME}/{NAME}_X.npy"] == _sha(source_x)
    assert "changed since it was fetched" in prov["fetched_because"]
    assert sources.raw_copy_problem(NAME, raw, settings) is None
    out = sources.prepare(NAME, raw, prepared, settings)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["raw_files"][f"{NAME}/{NAME}_X.npy"] == _sha(source_x)
    assert not PreparedDataset(out).X.any()

    # touched, not changed: kept, and its new time stamps recorded (no hashing next time)
    os.utime(source_x, ns=(1_000_000_000, 1_000_000_000))
    again = sources.fetch(NAME, raw, settings)
    assert again["raw_files"] == prov["raw_files"] and again["fetched"] == prov["fetched"]
    assert again["origin"][f"{NAME}/{NAME}_X.npy"]["mtime_ns"] == 1_000_000_000


def test_a_raw_copy_hard_linked_to_its_source_is_copied_again(tmp_path):
    _, folder = _monster_local_dir(tmp_path / "local")
    settings = {"source": "monster", "local_dir": str(tmp_path / "local"), "offline": True}
    raw = tmp_path / "raw"
    sources.fetch(NAME, raw, settings)
    source_x, raw_x = folder / f"{NAME}_X.npy", raw / NAME / f"{NAME}_X.npy"
    raw_x.unlink()
    os.link(source_x, raw_x)  # as a copy made by linking is: same bytes, same inode
    prov = sources.fetch(NAME, raw, settings)
    assert "is a hard link to" in prov["fetched_because"]
    assert os.stat(raw_x).st_ino != os.stat(source_x).st_ino
    assert os.stat(source_x).st_nlink == 1


@pytest.mark.parametrize("adopted", [False, True], ids=["local_dir", "raw folder"])
def test_a_monster_file_linked_from_outside_its_folder_is_refused(tmp_path, adopted):
    """A symbolic link in the dataset's folder to a file elsewhere on the machine is
    refused, the link named and neither the target nor its content printed; nothing is
    copied. The same holds for files put in the raw folder by hand (offline adoption)."""
    _, folder = _monster_local_dir(tmp_path / "local")
    secret = tmp_path / "elsewhere" / "private.npy"
    secret.parent.mkdir()
    secret.write_bytes(_npy_bytes(np.full((N, C, L), 7.0, dtype=np.float32)))
    raw = tmp_path / "raw"
    if adopted:
        shutil.copytree(folder, raw / NAME)
        folder = raw / NAME
        settings = {"source": "monster", "local_dir": None, "offline": True}
    else:
        settings = {"source": "monster", "local_dir": str(tmp_path / "local"), "offline": True}
    link = folder / f"{NAME}_X.npy"
    link.unlink()
    link.symlink_to(secret)
    with pytest.raises(DataError) as err:
        sources.fetch(NAME, raw, settings)
    assert str(err.value) == (
        f"{link}: a symbolic link to a file outside its folder {folder}; put the file itself "
        f"in the folder"
    )
    assert not (raw / NAME / "provenance.json").exists()
    if not adopted:
        assert not (raw / NAME / f"{NAME}_X.npy").exists()


def test_local_dir_moved_elsewhere_changes_the_recipe_and_is_fetched_from_there(tmp_path):
    _, first = _monster_local_dir(tmp_path / "a")
    _, second = _monster_local_dir(tmp_path / "b")
    a = {"source": "monster", "local_dir": str(tmp_path / "a"), "offline": True}
    b = {**a, "local_dir": str(tmp_path / "b")}
    assert sources.data_settings(a) != sources.data_settings(b)
    raw = tmp_path / "raw"
    assert sources.fetch(NAME, raw, a)["source_url"] == str(first.resolve())
    prov = sources.fetch(NAME, raw, b)  # same bytes, other folder: the origin is recorded
    assert prov["source_url"] == str(second.resolve())
    assert "local_dir" in prov["fetched_because"]
    files = [f"{NAME}_X.npy", f"{NAME}_y.npy"] + [f"test_indices_fold_{k}.txt" for k in range(5)]
    assert sources.source_files(NAME, b) == [second / f for f in files]


# --------------------------------------------------------------------------- UEA
def test_archive_dir_pointed_elsewhere_changes_the_recipe_and_refetches(tmp_path):
    first = _uea_archive(tmp_path / "a")
    second = _uea_archive(tmp_path / "b")
    _edit_train_file(second)
    a, b = _uea_settings(first), _uea_settings(second)
    assert sources.data_settings(a) != sources.data_settings(b)

    raw, prepared = tmp_path / "raw", tmp_path / "prepared"
    sources.fetch(UEA, raw, a)
    sources.prepare(UEA, raw, prepared, a)
    with pytest.raises(DataError, match=r"archive_dir"):
        sources.prepare(UEA, raw, prepared, b)  # the raw copy is first's

    prov = sources.fetch(UEA, raw, b)
    assert prov["source_url"] == str((second / UEA).resolve())
    assert "archive_dir" in prov["fetched_because"]
    train = f"{UEA}/{UEA}_TRAIN.ts"
    assert prov["raw_files"][train] == _sha(second / train) != _sha(first / train)
    assert _sha(raw / train) == _sha(second / train)
    meta = PreparedDataset(sources.prepare(UEA, raw, prepared, b)).meta
    assert meta["source_url"] == prov["source_url"] and meta["raw_files"] == prov["raw_files"]
    assert sources.source_files(UEA, b) == [second / train, second / UEA / f"{UEA}_TEST.ts"]


@pytest.mark.parametrize("compress", [False, True], ids=["ts", "ts.gz"])
def test_archive_file_changed_in_place_is_refetched(tmp_path, compress):
    archive = _uea_archive(tmp_path / "archive", compress)
    settings = _uea_settings(archive)
    raw, prepared = tmp_path / "raw", tmp_path / "prepared"
    before = sources.fetch(UEA, raw, settings)
    sources.prepare(UEA, raw, prepared, settings)
    assert sources.fetch(UEA, raw, settings) == before  # unchanged: kept

    _edit_train_file(archive, compress)
    with pytest.raises(DataError, match=rf"{UEA}_TRAIN\.ts(\.gz)? changed since it was fetched"):
        sources.prepare(UEA, raw, prepared, settings)
    after = sources.fetch(UEA, raw, settings)
    assert sources.raw_copy_problem(UEA, raw, settings) is None
    train = f"{UEA}/{UEA}_TRAIN.ts"
    assert after["raw_files"][train] != before["raw_files"][train]
    assert after["raw_files"][f"{UEA}/{UEA}_TEST.ts"] == before["raw_files"][f"{UEA}/{UEA}_TEST.ts"]
    meta = PreparedDataset(sources.prepare(UEA, raw, prepared, settings)).meta
    assert meta["raw_files"] == after["raw_files"]


# --------------------------------------------------------------------------- records
@pytest.fixture(scope="module")
def two_records(tmp_path_factory):
    """BasicMotions from a private archive_dir: fetched, prepared and trained (1 epoch);
    its TRAIN file then changed in place, fetched and prepared again, and trained again
    (what `ssmbench train --force` runs). Returns (spec, first record path, second)."""
    from ssmbench.config import Job, job_spec
    from ssmbench.params_file import read_params
    from ssmbench.train.protocol import run_job

    root = tmp_path_factory.mktemp("records")
    archive = _uea_archive(root / "archive")
    settings = _uea_settings(archive)
    raw, prepared = root / "raw", root / "prepared"
    params = read_params(Path(__file__).resolve().parents[1] / "params.yaml")
    spec = job_spec(params, Job("uea", UEA, "MS4", 0), "default")
    spec["settings"]["max_epochs"] = 1
    spec["prepared_dir"] = str(prepared / UEA)

    sources.fetch(UEA, raw, settings)
    sources.prepare(UEA, raw, prepared, settings)
    run_job(spec, root / "first" / "fold0.json", log=lambda _: None)
    _edit_train_file(archive)
    sources.fetch(UEA, raw, settings)
    sources.prepare(UEA, raw, prepared, settings)
    run_job(spec, root / "second" / "fold0.json", log=lambda _: None)
    return spec, root / "first" / "fold0.json", root / "second" / "fold0.json", archive


def test_a_record_carries_the_digest_of_the_data_it_was_trained_on(two_records):
    spec, first, second, archive = two_records
    old = json.loads(first.read_text())["dataset_sha256"]
    new = json.loads(second.read_text())["dataset_sha256"]
    train = f"{UEA}/{UEA}_TRAIN.ts"
    assert new[train] == _sha(archive / train) != old[train]
    assert new == PreparedDataset(spec["prepared_dir"]).meta["raw_files"]


def test_a_record_of_other_data_is_stale(two_records):
    from ssmbench.staleness import record_state

    spec, first, second, _ = two_records
    assert record_state(second, spec).current
    stale = record_state(first, spec)
    assert not stale.current and not stale.edited
    assert f"changed since the record: dataset ({UEA}/{UEA}_TRAIN.ts: sha256 " in stale.why


# --------------------------------------------------------------------------- the copy
@pytest.mark.parametrize("offered", [True, False], ids=["copy_file_range", "fallback"])
def test_copy_file_makes_a_file_of_its_own(tmp_path, monkeypatch, offered):
    import errno

    from ssmbench.data.download import copy_file

    src = tmp_path / "src.bin"
    src.write_bytes(np.random.default_rng(0).bytes(3 << 20 | 123))
    if not offered:  # another filesystem or OS: the kernel does not copy for us

        def refuse(*args, **kwargs):
            raise OSError(errno.EXDEV, "Invalid cross-device link")

        monkeypatch.setattr(os, "copy_file_range", refuse)
    copy_file(src, tmp_path / "dst.bin")
    assert (tmp_path / "dst.bin").read_bytes() == src.read_bytes()
    assert os.stat(tmp_path / "dst.bin").st_ino != os.stat(src).st_ino
    assert os.stat(src).st_nlink == 1


def test_status_and_train_see_a_source_changed_after_the_record(tmp_path):
    """A run whose record is current, whose data's source (archive_dir) then changes in
    place: `ssmbench status` calls it stale and says why, `ssmbench train` warns that it
    reads the prepared copy of what was fetched."""
    import subprocess
    import sys

    from conftest import make_project, tool_env

    from ssmbench.config import Job, benchmark_settings, job_spec, load_params
    from ssmbench.status import run_status
    from ssmbench.train.protocol import run_job

    archive = _uea_archive(tmp_path / "archive")

    def edit(params):
        params["benchmarks"]["uea"]["archive_dir"] = str(archive)
        params["benchmarks"]["uea"]["max_epochs"] = 1

    root = make_project(tmp_path / "proj", edit)
    params = load_params(root / "params.yaml")
    job = Job("uea", UEA, "MS4", 0)
    settings = benchmark_settings(params, "uea", None, UEA)
    sources.fetch(UEA, root / "data/raw/uea", settings)
    sources.prepare(UEA, root / "data/raw/uea", root / "data/prepared/uea", settings)
    spec = job_spec(params, job)
    spec["prepared_dir"] = str(root / spec["prepared_dir"])
    record = job.record_path(root / params["paths"]["runs"])
    run_job(spec, record, log=lambda _: None)
    assert run_status(params, job, root).state == "done"

    _edit_train_file(archive)
    status = run_status(params, job, root)
    assert status.state == "stale", status
    assert status.detail.startswith(
        f"its raw copy no longer stands for its source: {archive / UEA / UEA}_TRAIN.ts "
        "changed since it was fetched"
    ), status.detail

    done = subprocess.run(
        [sys.executable, "-m", "ssmbench.cli", "train", "--benchmark", "uea", "--dataset",
         UEA, "--model", "MS4", "--fold", "0"],
        cwd=root, env=tool_env(root), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"warning: uea/{UEA}: its raw copy no longer stands for its source: " in done.stderr
    assert (
        "`ssmbench train` reads (and judges a record current against) the prepared copy of "
        "what was fetched" in done.stderr
    )
