"""A write the machine refuses is one line naming the file, the cause and what to do, not a
traceback (ssmbench.os_errors, ssmbench.io): a full disk while `ssmbench tune` writes its
Optuna journal or its tuned file, or while `ssmbench prepare` writes a dataset (numpy's
short write, which says neither why nor where); a full checkpoints folder (torch's zip
writer's "unexpected pos"); a folder where the journal or the tuned file should be.

A full disk is simulated as in tests/test_record_integrity.py: an fsync that fails with
ENOSPC on the files whose names hold a given part (the file written, or the probe
ssmbench.os_errors.no_room writes to find out why a write failed)."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import make_project

from ssmbench.cli import main
from ssmbench.data import fetch_uea, prepare_uea
from ssmbench.train import checkpoint as ckpt

TUNE = ["tune", "--benchmark", "uea", "--dataset", "BasicMotions", "--model", "MS4"]
JOURNAL = Path("results/tuning/uea/BasicMotions/MS4.journal")
TUNED = Path("results/tuned/uea/BasicMotions/MS4.json")
#: the part of the probe's name that `full_disk` matches
PROBE = "space-probe"


def _edit(params):
    params["suites"]["tiny"] = {
        "description": "write refusals",
        "benchmarks": {"uea": ["BasicMotions"]},
        "models": ["MS4"],
        "folds": [0],
        "overrides": {"max_epochs": 1},
        "tuning": {},
    }
    params["suite"] = "tiny"
    params["tuning"]["searches"] = {
        "MS4": {
            "benchmarks": ["uea"], "fold": 0, "n_trials": 1, "n_startup_trials": 1,
            "sampler_seed": 0, "settings": {"max_epochs": 1},
            "space": {"lr": {"type": "float", "low": 1e-4, "high": 1e-2, "log": True}},
        }
    }  # fmt: skip


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = make_project(tmp_path_factory.mktemp("refusals") / "proj", _edit)
    fetch_uea("BasicMotions", root / "data/raw/uea", archive_dir=None, download=False)
    prepare_uea("BasicMotions", root / "data/raw/uea", root / "data/prepared/uea")
    return root


@pytest.fixture
def here(project, monkeypatch):
    """The project as the working folder, without an earlier test's search."""
    import shutil

    for folder in ("results/tuning", "results/tuned"):
        shutil.rmtree(project / folder, ignore_errors=True)
    monkeypatch.chdir(project)
    return project


def full_disk(monkeypatch, *names: str) -> None:
    """ENOSPC from fsync on any file whose name holds one of ``names``."""
    real = os.fsync

    def fsync(fd):
        name = os.readlink(f"/proc/self/fd/{fd}").rsplit("/", 1)[-1]
        if any(part in name for part in names):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def error_line(err: str) -> str:
    """The one error line of a command's stderr (no traceback before it)."""
    assert "Traceback" not in err, err
    (line,) = [x for x in err.splitlines() if " error: " in x]
    return line


@pytest.mark.parametrize("where", ["journal", "tuned"])
def test_a_folder_where_the_journal_or_tuned_file_should_be_is_one_line(here, capsys, where):
    path = JOURNAL if where == "journal" else TUNED
    path.mkdir(parents=True)
    assert main(TUNE) == 2
    line = error_line(capsys.readouterr().err)
    assert line.startswith(f"ssmbench tune: error: {path}: a folder, where the ")
    assert "move the folder aside" in line


def test_a_file_where_a_folder_of_the_journal_should_be_is_one_line(here, capsys):
    (here / "results/tuning/uea").mkdir(parents=True)
    (here / "results/tuning/uea/BasicMotions").write_text("")
    assert main(TUNE) == 2
    line = error_line(capsys.readouterr().err)
    assert line.startswith("ssmbench tune: error: results/tuning/uea/BasicMotions: a file, ")
    assert f"where a folder of the search's Optuna journal {JOURNAL} should be" in line


@pytest.mark.parametrize("path", [JOURNAL, TUNED], ids=["journal", "tuned"])
def test_a_full_disk_while_tune_writes_is_one_line_naming_the_file(here, capsys, monkeypatch, path):
    full_disk(monkeypatch, path.name)
    assert main(TUNE) == 1
    line = error_line(capsys.readouterr().err)
    assert line == (
        f"ssmbench tune: error: {path}: No space left on device (ENOSPC); free space on its "
        "file system (or point params.yaml's paths elsewhere) and run the command again"
    )


def test_a_full_disk_during_prepare_is_one_line_not_numpys_short_write(here, capsys, monkeypatch):
    real_save = np.save

    def save(file, arr, *args, **kwargs):
        if str(file).endswith("X.npy"):  # what numpy says when the disk takes part of it
            raise OSError("48000 requested and 16352 written")
        return real_save(file, arr, *args, **kwargs)

    monkeypatch.setattr(np, "save", save)
    full_disk(monkeypatch, PROBE)
    before = sorted(p.name for p in (here / "data/prepared/uea/BasicMotions").iterdir())
    assert main(["prepare", "--benchmark", "uea", "--dataset", "BasicMotions"]) == 1
    line = error_line(capsys.readouterr().err)
    assert line.startswith(
        "ssmbench prepare: error: data/prepared/uea/BasicMotions: No space left on device "
        "(ENOSPC); free space on its file system"
    )
    after = sorted(p.name for p in (here / "data/prepared/uea/BasicMotions").iterdir())
    assert after == before  # the previous folder, whole
    assert not [p for p in (here / "data/prepared/uea").iterdir() if ".tmp-" in p.name]


def test_a_short_write_with_room_left_keeps_its_own_message(here, monkeypatch):
    """The probe finds room: the failure is not a full disk and is not called one."""

    def save(file, arr, *args, **kwargs):
        raise OSError("48000 requested and 16352 written")

    monkeypatch.setattr(np, "save", save)
    with pytest.raises(OSError, match="^48000 requested and 16352 written$"):
        main(["prepare", "--benchmark", "uea", "--dataset", "BasicMotions"])


def test_a_full_checkpoints_folder_says_no_space_left(tmp_path, monkeypatch):
    def save(obj, f, *args, **kwargs):  # torch's zip writer on a full disk
        Path(f).write_bytes(b"\0" * 64)
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 64 vs 0")

    monkeypatch.setattr(torch, "save", save)
    full_disk(monkeypatch, PROBE)
    state = {key: 0 for key in ckpt._KEYS if key != "content_sha256"}
    path = tmp_path / "checkpoints" / "fold0.pt"
    with pytest.raises(ckpt.CheckpointWriteError) as failed:
        ckpt.save(path, state)
    message = str(failed.value)
    assert message.startswith(f"checkpoint {path} could not be written: ")
    assert "No space left on device" in message and "enforce fail" not in message
    assert not list(path.parent.iterdir())  # no temporary left behind


def test_other_torch_errors_keep_their_message(tmp_path, monkeypatch):
    def save(obj, f, *args, **kwargs):
        raise RuntimeError("something else")

    monkeypatch.setattr(torch, "save", save)
    state = {key: 0 for key in ckpt._KEYS if key != "content_sha256"}
    with pytest.raises(ckpt.CheckpointWriteError, match=re.escape("written: something else")):
        ckpt.save(tmp_path / "fold0.pt", state)
