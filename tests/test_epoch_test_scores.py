"""The selection-optimism diagnostic (protocol ``epoch_test_scores``): the test split
scored at each epoch into a file of its own. With it on, a run trains, selects and tests
exactly what it does with it off; a resumed run keeps the scores of its first attempt; a
tuning trial never scores the test split; the main tables, the scorecard and summary.json
are the same whatever the file holds, and only the selection-optimism table reads it.
BasicMotions, the real UEA set aeon ships."""

from __future__ import annotations

import csv
import json
import logging
from pathlib import Path

import pandas as pd
import pytest
from conftest import make_project, signal_at_training_batch

from ssmbench.config import Job, job_spec
from ssmbench.data import fetch_uea, prepare_uea
from ssmbench.params_file import read_params
from ssmbench.report.aggregate import collect_records
from ssmbench.report.build import build_report
from ssmbench.report.selection_optimism import (
    MEAN_ROW,
    selection_optimism_runs,
    selection_optimism_table,
)
from ssmbench.staleness import sealed, sha256_hex
from ssmbench.train import epoch_test_scores
from ssmbench.train.checkpoint import TrainingInterrupted
from ssmbench.train.epoch_test_scores import SCORES_FILE_KEY, SCORES_SHA256_KEY, scores_path_of
from ssmbench.train.protocol import run_job, validate_job

EPOCHS = 6
#: what selection decides and what the record holds of it
RESULT_KEYS = (
    "test_error", "test_loss", "test_accuracy", "best_val_loss", "best_val_accuracy",
    "best_epoch", "epochs_run", "stopped_early", "params",
)  # fmt: skip


def quiet(_line: str) -> None:
    pass


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    def edit(params):
        params["protocol"]["checkpoint_min_seconds"] = 0

    root = make_project(tmp_path_factory.mktemp("scores") / "proj", edit)
    fetch_uea("BasicMotions", root / "data/raw/uea", archive_dir=None, download=False)
    prepare_uea("BasicMotions", root / "data/raw/uea", root / "data/prepared/uea")
    return root


def spec_of(project: Path, model: str, scores: bool, epochs: int = EPOCHS) -> dict:
    params = read_params(project / "params.yaml")
    spec = job_spec(params, Job("uea", "BasicMotions", model, 0))
    spec["settings"].update(max_epochs=epochs, epoch_test_scores=scores)
    spec["prepared_dir"] = str(project / spec["prepared_dir"])
    return spec


def curve_without_times(record: Path) -> list[dict]:
    with open(record.with_name("fold0.curve.csv"), newline="") as f:
        return [{k: v for k, v in row.items() if k != "seconds"} for row in csv.DictReader(f)]


def scores_of(record: Path) -> pd.DataFrame:
    return pd.read_csv(scores_path_of(record))


# MS4N draws dropout masks from torch's generator every batch; FCN has BatchNorm, whose
# running statistics an evaluation in training mode would move
@pytest.mark.parametrize("model", ["MS4N", "FCN"])
def test_selection_is_the_same_with_and_without_the_test_scores(project, tmp_path, model):
    off = run_job(spec_of(project, model, False), tmp_path / "off" / "fold0.json", log=quiet)
    on_path = tmp_path / "on" / "fold0.json"
    on = run_job(spec_of(project, model, True), on_path, log=quiet)

    assert {k: on[k] for k in RESULT_KEYS} == {k: off[k] for k in RESULT_KEYS}
    assert curve_without_times(on_path) == curve_without_times(tmp_path / "off" / "fold0.json")
    assert SCORES_FILE_KEY not in off and not scores_path_of(tmp_path / "off/fold0.json").exists()
    assert off["protocol"]["epoch_test_scores"] is False

    scores = scores_of(on_path)
    assert on[SCORES_FILE_KEY] == "fold0.test_scores.csv"
    assert on[SCORES_SHA256_KEY] == sha256_hex(scores_path_of(on_path).read_bytes())
    assert scores["epoch"].tolist() == list(range(1, EPOCHS + 1))
    # the scores at the tested epoch are the record's test scores: the same weights
    tested = scores.set_index("epoch").loc[on["best_epoch"]]
    assert tested["test_accuracy"] == pytest.approx(on["test_accuracy"], abs=1e-12)
    assert tested["test_loss"] == pytest.approx(on["test_loss"], rel=1e-9)
    # the record's keys are the file's, and nothing else of the record mentions them
    assert "test_scores" not in json.dumps(on["protocol"]).replace("epoch_test_scores", "")


def test_a_resumed_run_keeps_the_scores_of_its_first_attempt(project, tmp_path, monkeypatch):
    reference = tmp_path / "reference" / "fold0.json"
    run_job(spec_of(project, "MS4N", True), reference, log=quiet)
    record, checkpoint = tmp_path / "fold0.json", tmp_path / "ckpt" / "fold0.pt"
    # BasicMotions: 36 training rows, batch 4: 9 batches an epoch; stop within epoch 4
    signal_at_training_batch(monkeypatch, 9 * 3 + 5)
    with pytest.raises(TrainingInterrupted):
        run_job(spec_of(project, "MS4N", True), record, log=quiet, checkpoint_path=checkpoint)
    monkeypatch.undo()
    run_job(spec_of(project, "MS4N", True), record, log=quiet, checkpoint_path=checkpoint)
    assert scores_path_of(record).read_bytes() == scores_path_of(reference).read_bytes()


def test_a_tuning_trial_never_scores_the_test_split(project, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a tuning trial scored the test split")

    monkeypatch.setattr("ssmbench.train.protocol.score_epoch", refuse)
    trial = validate_job(spec_of(project, "MS4N", True, epochs=2), log=quiet)
    assert trial["epochs_run"] == 2


def test_a_non_finite_test_loss_is_kept_as_nan_and_the_run_goes_on(project, tmp_path,
                                                                   monkeypatch):  # fmt: skip
    """Epoch 2's test rows score as a non-finite loss would (evaluation raises
    DivergedError): the scores keep NaN there, and the run trains on to its record."""
    from ssmbench.train.checks import DivergedError

    original = epoch_test_scores.score_epoch

    def score(data, model, batch_size, device, epoch, name):
        if epoch != 2:
            return original(data, model, batch_size, device, epoch, name)
        real_score = data.score

        def non_finite(*args, **kwargs):
            raise DivergedError("test scores, epoch 2: loss is inf")

        data.score = non_finite
        try:
            return original(data, model, batch_size, device, epoch, name)
        finally:
            data.score = real_score

    monkeypatch.setattr("ssmbench.train.protocol.score_epoch", score)
    record = run_job(spec_of(project, "MS4N", True, epochs=3), tmp_path / "fold0.json",
                     log=quiet)  # fmt: skip
    scores = scores_of(tmp_path / "fold0.json")
    assert scores["test_loss"].isna().tolist() == [False, True, False]
    assert record["epochs_run"] == 3


# ----------------------------------------------------------------------------- report
def _runs(project: Path, runs: Path) -> None:
    for model in ("MS4N", "FCN"):
        spec = spec_of(project, model, True)
        run_job(spec, runs / "uea" / "BasicMotions" / model / "fold0.json", log=quiet)


def _report(runs: Path, out: Path) -> dict[str, Path]:
    return build_report(runs, out / "results", out / "figures", {}, benchmarks=["uea"])


MAIN_FILES = ("metrics_csv", "summary_json", "scorecard_csv", "scorecard_md", "table5_csv",
              "table5_md", "protocol_notes_md")  # fmt: skip


def test_only_the_selection_optimism_table_reads_the_scores(project, tmp_path, caplog):
    runs = tmp_path / "runs"
    _runs(project, runs)
    first = _report(runs, tmp_path / "a")
    optimism = pd.read_csv(first["selection_optimism_csv"])
    assert set(optimism["model"]) == {"MS4N", "FCN"}
    assert MEAN_ROW in set(optimism["dataset"])

    # every epoch's test accuracy set to 1.0, the file's sha256 in its record (and the
    # record's own) made to match:
    # a diagnostic that says "a test-selected protocol would print 0.000 everywhere"
    for model in ("MS4N", "FCN"):
        record_path = runs / "uea" / "BasicMotions" / model / "fold0.json"
        path = scores_path_of(record_path)
        scores = pd.read_csv(path).assign(test_accuracy=1.0)
        scores.to_csv(path, index=False, lineterminator="\n")
        record = json.loads(record_path.read_text())
        record[SCORES_SHA256_KEY] = sha256_hex(path.read_bytes())
        record_path.write_text(json.dumps(sealed(record)))  # its own digest made to match
    second = _report(runs, tmp_path / "b")
    for name in MAIN_FILES:
        assert first[name].read_bytes() == second[name].read_bytes(), name
    changed = pd.read_csv(second["selection_optimism_csv"])
    cells = changed[changed["dataset"] == "BasicMotions"]
    assert set(cells["ours if test-selected"]) == {"0.000 ± 0.000"}

    # a file that is not the one its record names is left out, loudly
    path = scores_path_of(runs / "uea" / "BasicMotions" / "FCN" / "fold0.json")
    path.write_text(path.read_text() + "7,0.1,0.5\n")
    with caplog.at_level(logging.WARNING):
        third = _report(runs, tmp_path / "c")
    assert "are not the ones written with it (sha256): left out" in caplog.text
    left = pd.read_csv(third["selection_optimism_csv"])
    assert "FCN" not in set(left["model"])
    for name in MAIN_FILES:
        assert first[name].read_bytes() == third[name].read_bytes(), name


def _record(runs: Path, model: str, fold: int, test_error: float, best_epoch: int,
            accuracies: list[float]) -> None:  # fmt: skip
    """A record of ours with its test scores (epochs 1..n, the given test accuracies)."""
    path = runs / "uea" / "Libras" / model / f"fold{fold}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"epoch": e, "test_loss": 1.0 - a, "test_accuracy": a}
            for e, a in enumerate(accuracies, 1)]  # fmt: skip
    text = epoch_test_scores.scores_text(rows)
    scores = scores_path_of(path)
    scores.write_text(text)
    path.write_text(json.dumps(sealed({
        "benchmark": "uea", "dataset": "Libras", "model": model, "fold": fold,
        "task": "classification", "test_error": test_error, "best_epoch": best_epoch,
        SCORES_FILE_KEY: scores.name, SCORES_SHA256_KEY: sha256_hex(text.encode()),
    })))  # fmt: skip


def test_optimism_is_the_tested_error_less_the_best_test_error(tmp_path):
    runs = tmp_path / "runs"
    # fold 0: validation chose epoch 2 (error 0.30); the test split's best is epoch 3 (0.10)
    _record(runs, "MS4N", 0, 0.30, 2, [0.5, 0.7, 0.9, 0.8])
    # fold 1: validation chose the test split's best epoch: no optimism
    _record(runs, "MS4N", 1, 0.20, 1, [0.8, 0.6])
    per_run = selection_optimism_runs(collect_records(runs), runs)
    assert per_run["test_selected"].tolist() == pytest.approx([0.10, 0.20])
    assert per_run["test_selected_epoch"].tolist() == [3, 1]
    assert per_run["optimism"].tolist() == pytest.approx([0.20, 0.0])

    paper = pd.DataFrame([{"benchmark": "uea", "dataset": "Libras", "model": "MS4N",
                           "error": 0.155}])  # fmt: skip
    table = selection_optimism_table(per_run, paper)
    cell = table[table["dataset"] == "Libras"].iloc[0]
    assert (cell["n"], cell["ours"], cell["ours if test-selected"]) == (
        "2",
        "0.250 ± 0.050",
        "0.150 ± 0.050",
    )
    assert (cell["optimism"], cell["paper"]) == ("0.100", "0.155")
    mean = table[table["dataset"] == MEAN_ROW].iloc[0]
    assert (mean["n"], mean["optimism"]) == ("2 runs, 1 datasets", "0.100")


def test_no_scores_no_rows(tmp_path):
    assert selection_optimism_runs(pd.DataFrame({"model": ["MS4N"]}), tmp_path).empty
    table = selection_optimism_table(selection_optimism_runs(pd.DataFrame(), tmp_path),
                                     pd.DataFrame())  # fmt: skip
    assert table.iloc[0]["benchmark"].startswith("no run of these records scored")


def test_a_tuning_search_may_not_turn_it_on():
    from ssmbench.config import TRAINING_KEYS

    assert "epoch_test_scores" not in TRAINING_KEYS
