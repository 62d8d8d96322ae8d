"""Every model of the ``uea6-paper`` suite trains on real MotorImagery values without
diverging or exploding: a real slice of the archive (tests/uea_slice.py: 20 TRAIN and 10
TEST rows, 64 channels cut to 500 steps, as ``.ts.xz``) fetched and prepared through the
CLI as a user's run would (uea, then the UEA-6 protocol's pooled split: raw values, not
normalised), then each model trained a few epochs with its MotorImagery settings from
params.yaml (``dataset_params`` / ``dataset_settings``: what ``uea6-paper`` runs).

The values are the archive's (per-channel std 13-29 on the full set): the models that
diverge or explode there with other settings (TIDES: NaN in epoch 4; Mamba1-logncde built
without the Log-NCDE block: a training loss of 3.6e24) are held to a loss of a few ln K
here.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
import yaml

from ssmbench import cli
from ssmbench.config import Job, job_spec
from ssmbench.params_file import read_params
from ssmbench.train.protocol import run_job

REPO = Path(__file__).resolve().parents[1]
SUITE = "uea6-paper"
EPOCHS = 3
#: a training epoch's mean loss above this many times ln K counts as exploding here (the
#: run's own stop, protocol.max_loss_ratio, is at 1000 ln K)
EXPLODING = 10.0


def _params(tmp: Path, archive: Path) -> dict:
    params = read_params(REPO / "params.yaml")
    for key in ("raw", "prepared", "runs", "logs", "results", "figures", "checkpoints",
                "settings", "splits", "tuned", "tuning"):  # fmt: skip
        params["paths"][key] = str(tmp / key)
    params["benchmarks"]["uea"]["archive_dir"] = str(archive)
    params["benchmarks"]["uea"]["download"] = False
    return params


@pytest.fixture(scope="module")
def motor_imagery_uea6(motor_imagery_archive, tmp_path_factory):
    """(params, prepared folder) of the slice under the UEA-6 protocol."""
    tmp = tmp_path_factory.mktemp("uea6-slice")
    params = _params(tmp, motor_imagery_archive)
    path = tmp / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    for benchmark in ("uea", "uea6"):
        for step in ("fetch", "prepare"):
            argv = ["--params", str(path), step, "--benchmark", benchmark]
            assert cli.main([*argv, "--dataset", "MotorImagery"]) == 0
    return params, tmp / "prepared" / "uea6" / "MotorImagery"


@pytest.mark.parametrize("model", read_params(REPO / "params.yaml")[
    "suites"][SUITE]["models"])  # fmt: skip
def test_every_uea6_paper_model_trains_on_real_motor_imagery_values(
    motor_imagery_uea6, tmp_path, model
):
    params, prepared = motor_imagery_uea6
    spec = job_spec(params, Job("uea6", "MotorImagery", model, 0), SUITE)
    assert spec["prepared_dir"] == str(prepared)
    spec["settings"].update(max_epochs=EPOCHS, early_stopping_patience=None)
    record_path = tmp_path / "fold0.json"
    record = run_job(spec, record_path, log=lambda _: None)  # DivergedError: no record
    assert record_path.is_file() and record["epochs_run"] == EPOCHS
    with open(record_path.with_suffix(".curve.csv"), newline="") as f:
        losses = [float(row["train_loss"]) for row in csv.DictReader(f)]
    assert len(losses) == EPOCHS
    limit = EXPLODING * math.log(2)
    assert all(math.isfinite(v) and v < limit for v in losses), (model, losses)
