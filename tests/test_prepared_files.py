"""A record is current only if the prepared data it names are the data that are there.

BasicMotions prepared by the real prepare step and trained (MS4, 1 epoch) by the real
`ssmbench train`:

* meta.json records each prepared file's sha256 and size, and preparing again writes the
  same meta.json (DVC hashes it);
* the record names the prepared files it trained on (``prepared_sha256``);
* X.npy edited in place (same size) makes the record stale in `ssmbench status`, and
  `ssmbench train --force` refuses the data, naming the file and what to do; prepared
  again, the record is current again;
* the folder copied file by file (new dates) is still the same data: the record stays
  current, and the files are read once (meta.json is dated after them).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import make_project

from ssmbench.cli import main
from ssmbench.config import Job, load_params
from ssmbench.data.checksums import sha256_file
from ssmbench.data.prepared_files import changed_files
from ssmbench.status import run_status

SUITE = "prepared_files"
JOB = Job("uea", "BasicMotions", "MS4", 0)
TRAIN = ["train", "--benchmark", "uea", "--dataset", "BasicMotions", "--model", "MS4"]


def _edit(params):
    params["suites"][SUITE] = {
        "description": "prepared-file digests: one model, one fold, 1 epoch",
        "benchmarks": {"uea": ["BasicMotions"]},
        "models": ["MS4"],
        "folds": [0],
        "overrides": {"max_epochs": 1},
    }
    params["suite"] = SUITE


def _prepare(root: Path) -> Path:
    from ssmbench.data import prepare_uea

    return prepare_uea("BasicMotions", root / "data/raw/uea", root / "data/prepared/uea")


def _in(root: Path, argv: list[str], capsys) -> tuple[int, str]:
    cwd = os.getcwd()
    os.chdir(root)
    try:
        rc = main(argv)
    finally:
        os.chdir(cwd)
    printed = capsys.readouterr()
    return rc, printed.out + printed.err


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    from ssmbench.data import fetch_uea

    root = make_project(tmp_path_factory.mktemp("prepared") / "proj", _edit)
    fetch_uea("BasicMotions", root / "data/raw/uea", archive_dir=None, download=False)
    _prepare(root)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        assert main([*TRAIN, "--fold", "0", "--suite", SUITE]) == 0
    finally:
        os.chdir(cwd)
    return root


def _state(root: Path):
    return run_status(load_params(root / "params.yaml", suite=SUITE), JOB, root)


def test_meta_json_records_each_prepared_file_and_the_record_names_them(project):
    folder = project / "data/prepared/uea/BasicMotions"
    meta_text = (folder / "meta.json").read_text()
    files = json.loads(meta_text)["prepared_files"]
    assert sorted(files) == ["X.npy", "test_indices_fold_0.txt", "y.npy"]
    for name, entry in files.items():
        size = (folder / name).stat().st_size
        assert entry == {"sha256": sha256_file(folder / name), "size": size}
    record = json.loads(JOB.record_path(project / "results/runs").read_text())
    assert record["prepared_sha256"] == {name: e["sha256"] for name, e in files.items()}
    assert _state(project).state == "done"
    _prepare(project)  # the same data again: the same meta.json, byte for byte
    assert (folder / "meta.json").read_text() == meta_text
    assert _state(project).state == "done"


def test_x_edited_in_place_is_stale_and_refused_by_train(project, capsys):
    folder = project / "data/prepared/uea/BasicMotions"
    X = np.load(folder / "X.npy", mmap_mode="r+")
    X[0, 0, 0] += 1.0
    X.flush()
    del X
    status = _state(project)
    assert status.state == "stale", status
    assert "prepared data (X.npy: changed since it was prepared (sha256))" in status.detail
    rc, printed = _in(project, [*TRAIN, "--fold", "0", "--suite", SUITE, "--force"], capsys)
    assert rc != 0
    assert "data/prepared/uea/BasicMotions: not the data that were prepared (X.npy: " in printed
    assert "Prepare the dataset again" in printed
    _prepare(project)  # from the raw files: the data the record was trained on
    assert _state(project).state == "done"


def test_a_folder_copied_file_by_file_is_the_same_data_read_once(project, tmp_path):
    folder = project / "data/prepared/uea/BasicMotions"
    copy = tmp_path / "BasicMotions"
    copy.mkdir()
    shutil.copyfile(folder / "meta.json", copy / "meta.json")  # meta.json first: older
    for name in ("X.npy", "y.npy", "test_indices_fold_0.txt"):
        shutil.copyfile(folder / name, copy / name)
    newest = max((copy / n).stat().st_mtime_ns for n in ("X.npy", "y.npy"))
    os.utime(copy / "meta.json", ns=(newest - 10**9, newest - 10**9))
    assert changed_files(copy) == []
    assert (copy / "meta.json").stat().st_mtime_ns >= newest  # the next reader trusts dates
    shutil.rmtree(folder)
    shutil.copytree(copy, folder)
    assert _state(project).state == "done"


# ------------------------------------------------ a source that fails to prepare
def _archive(folder: Path, truncated: bool) -> Path:
    """An archive_dir holding BasicMotions (aeon's copy); its TRAIN file cut in half when
    ``truncated``."""
    import aeon.datasets

    bundled = Path(aeon.datasets.__file__).resolve().parent / "data/BasicMotions"
    (folder / "BasicMotions").mkdir(parents=True, exist_ok=True)
    for split in ("TRAIN", "TEST"):
        data = (bundled / f"BasicMotions_{split}.ts").read_bytes()
        if truncated and split == "TRAIN":
            data = data[: len(data) // 2]
        (folder / "BasicMotions" / f"BasicMotions_{split}.ts").write_bytes(data)
    return folder


def test_a_source_that_fails_to_prepare_leaves_no_current_record(tmp_path, capsys):
    """The archive replaced by a damaged one: the fetch copies it and the prepare refuses
    it, keeping the prepared folder made before (its records stand for the files it was
    made from, and a repaired source is prepared into it again). The raw copy is marked
    rejected, so the dataset's record is no longer current: `ssmbench status` says why
    and the workflow plans the fetch, the prepare and the run again. The archive
    repaired and prepared again, the record is current again."""
    archive = _archive(tmp_path / "archive", truncated=False)

    def edit(params):
        _edit(params)
        params["benchmarks"]["uea"]["archive_dir"] = str(archive)

    root = make_project(tmp_path / "proj", edit)
    for step in ("fetch", "prepare"):
        rc, printed = _in(root, [step, "--benchmark", "uea", "--dataset", "BasicMotions"], capsys)
        assert rc == 0, printed
    rc, printed = _in(root, [*TRAIN, "--fold", "0", "--suite", SUITE], capsys)
    assert rc == 0, printed
    assert _state(root).state == "done"

    _archive(archive, truncated=True)  # the source replaced by a damaged copy
    rc, printed = _in(root, ["fetch", "--benchmark", "uea", "--dataset", "BasicMotions"], capsys)
    assert rc == 0, printed
    rc, printed = _in(root, ["prepare", "--benchmark", "uea", "--dataset", "BasicMotions"], capsys)
    assert rc != 0 and "marked bad" in printed, printed
    assert (root / "data/prepared/uea/BasicMotions/meta.json").is_file()  # kept
    status = _state(root)
    assert status.state == "stale", status
    assert "failed to prepare" in status.detail, status.detail
    rc, printed = _in(root, ["--suite", SUITE, "status"], capsys)
    assert "failed to prepare" in printed, printed

    _archive(archive, truncated=False)  # repaired: the same files as before
    for step in ("fetch", "prepare"):
        rc, printed = _in(root, [step, "--benchmark", "uea", "--dataset", "BasicMotions"], capsys)
        assert rc == 0, printed
    assert _state(root).state == "done"
