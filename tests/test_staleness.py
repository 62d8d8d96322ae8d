"""ssmbench.staleness: whether a record is current, the settings marker, and `ssmbench
train` keeping a current record."""

from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import REPO

from ssmbench.cli import main
from ssmbench.config import Job, job_spec, load_params
from ssmbench.staleness import (
    EXECUTION_KEYS,
    RecordState,
    record_is_stale,
    record_state,
    sealed,
    settings_marker_path,
    sync_settings_marker,
    tracked_settings,
)

JOB = Job("uea", "BasicMotions", "MS4N", 0)


@pytest.fixture()
def params():
    return load_params(REPO / "params.yaml")


@pytest.fixture()
def spec(params, tmp_path):
    """The spec of JOB, its prepared folder present (empty: no meta.json to compare)."""
    prepared = tmp_path / "prepared/uea/BasicMotions"
    prepared.mkdir(parents=True)
    return {**job_spec(params, JOB, "default"), "prepared_dir": str(prepared)}


def write_record(path: Path, spec: dict, curve: bool = True, **changes) -> Path:
    """A record with what staleness reads, as `ssmbench train` writes it."""
    record = {
        **{key: spec[key] for key in ("benchmark", "dataset", "model", "fold")},
        "model_params": spec["model_params"],
        "protocol": spec["settings"],
        "code_digest": spec["code"],
        "curve_file": path.with_suffix(".curve.csv").name,
        **changes,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(sealed(record)))
    if curve:
        path.with_suffix(".curve.csv").write_text("epoch\n1\n")
    return path


# --- the state of a record -------------------------------------------------------------


def test_record_state_says_current_or_why_not(spec, tmp_path):
    record = tmp_path / "fold0.json"
    assert record_state(record, spec) == RecordState(False, ("no record",))
    write_record(record, spec)
    assert record_state(record, spec) == RecordState(True, ())
    assert not record_is_stale(record, spec)

    write_record(record, spec, protocol={"lr": 1.0}, model_params={})
    state = record_state(record, spec)
    assert not state.current and record_is_stale(record, spec)
    assert state.why.startswith("changed since the record: model hyperparameters (")
    assert ", protocol settings (" in state.why and "lr: 1.0 -> " in state.why
    write_record(record, spec, code_digest="0" * 16)
    assert record_state(record, spec).why == (
        f"changed since the record: training code (0000000000000000 -> {spec['code']})"
    )
    write_record(record, spec, curve=False)
    record.with_suffix(".curve.csv").unlink()
    assert record_state(record, spec).why == "its curve file fold0.curve.csv is missing"

    record.write_text('{"benchmark": "uea", ')  # cut short
    state = record_state(record, spec)
    assert not state.current and state.why.startswith("record unreadable (JSONDecodeError")
    record.write_text("[1, 2]")
    assert record_state(record, spec).why == (
        "record unreadable (not a JSON object); it will be rerun"
    )


def test_checkpoint_settings_never_make_a_record_stale(spec, tmp_path):
    """How often a run checkpoints changes how it executes, not its result: editing it
    must not rerun the grid."""
    record = write_record(tmp_path / "fold0.json", spec)
    assert not record_is_stale(record, spec)
    changed = {**spec, "settings": {**spec["settings"], "checkpoint_every": 7}}
    assert set(EXECUTION_KEYS) <= set(spec["settings"])
    assert not record_is_stale(record, changed)
    assert tracked_settings(changed) == tracked_settings(spec)
    other = {**spec, "settings": {**spec["settings"], "lr": 0.5}}
    assert record_is_stale(record, other)


def test_a_setting_a_record_leaves_out_stands_for_its_default(spec, tmp_path):
    """A record whose protocol lacks a setting (made where no place, and so no reader,
    gave it a value) was made with the setting's default: current while the run asks for
    that default, stale once it asks for another; an origin is no content either way."""
    without = {k: v for k, v in spec["settings"].items() if k not in ("lr_schedule", "batch_size")}
    record = write_record(tmp_path / "fold0.json", spec, protocol=without)
    assert (spec["settings"]["lr_schedule"], spec["settings"]["batch_size"]) == ("constant", None)
    assert record_state(record, spec).current
    cosine = {**spec, "settings": {**spec["settings"], "lr_schedule": "cosine"}}
    assert record_state(record, cosine).why == (
        'changed since the record: protocol settings (lr_schedule: absent -> "cosine")'
    )
    moved = copy.deepcopy(spec)
    moved["origins"]["settings"]["lr_schedule"] = "suites.default.overrides"
    assert record_state(record, moved).current


def test_settings_marker_dates_say_whether_a_record_is_current(spec, tmp_path):
    record = tmp_path / "runs" / "uea" / "BasicMotions" / "MS4N" / "fold0.json"
    marker = settings_marker_path(tmp_path / "settings", JOB.record_path(""))
    assert marker == tmp_path / "settings/uea/BasicMotions/MS4N/fold0/settings.json"
    sync_settings_marker(record, marker, spec)  # no record yet: the job runs anyway
    assert marker.is_file()

    write_record(record, spec)
    os.utime(record, (1_000_000, 1_000_000))
    sync_settings_marker(record, marker, spec)
    assert marker.stat().st_mtime < record.stat().st_mtime  # current: not rerun

    changed = json.loads(json.dumps(spec))
    changed["settings"]["lr"] = 0.01
    sync_settings_marker(record, marker, changed)
    assert marker.stat().st_mtime > record.stat().st_mtime  # stale: rerun
    assert json.loads(marker.read_text())["settings"]["lr"] == 0.01
    sync_settings_marker(record, marker, spec)  # current again: dated before the record
    assert marker.stat().st_mtime < record.stat().st_mtime


# --- `ssmbench train` keeps a current record -------------------------------------------


def test_train_keeps_a_current_record_and_force_trains(spec, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")
    shutil.copytree(REPO / "params", tmp_path / "params")
    (tmp_path / "data/prepared/uea/BasicMotions").mkdir(parents=True)  # present, empty
    record = write_record(tmp_path / "results/runs/uea/BasicMotions/MS4N/fold0.json", spec)
    before = record.read_text()
    argv = [
        "train", "--benchmark", "uea", "--dataset", "BasicMotions", "--model", "MS4N",
        "--fold", "0", "--record", str(record),
    ]  # fmt: skip
    assert main(argv) == 0
    assert f"{record} is current: kept, not trained again" in capsys.readouterr().err
    assert record.read_text() == before

    # --force trains (here it fails at once: no prepared data)
    assert main([*argv, "--force"]) != 0
    err = capsys.readouterr().err
    assert "kept, not trained again" not in err and "prepared" in err
    # a record that is not current is trained again too
    write_record(record, spec, code_digest="0" * 16)
    assert main(argv) != 0 and "kept" not in capsys.readouterr().err
