"""The protocol choices the MS4N paper leaves open: the defaults are the authors' code's,
and each departure is an option that does what it says."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import REPO

from ssmbench.config import Job, benchmark_settings, job_spec
from ssmbench.data import fetch_uea, prepare_uea
from ssmbench.data.errors import DataError
from ssmbench.data.store import PreparedDataset
from ssmbench.data.validation_split import stratified_validation_split, validation_seed
from ssmbench.models import build_model
from ssmbench.models.s4d import ChannelDropout
from ssmbench.params_file import read_params
from ssmbench.report.aggregate import collect_records
from ssmbench.report.protocol_notes import protocol_notes
from ssmbench.report.reference import load_authors_protocol
from ssmbench.train.fold_split import split_indices
from ssmbench.train.protocol import run_job

PARAMS = read_params(REPO / "params.yaml")


@pytest.fixture(scope="module")
def basic_motions(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("data")
    fetch_uea("BasicMotions", root / "raw", archive_dir=None, download=False)
    return prepare_uea("BasicMotions", root / "raw", root / "prepared")


def _spec(prepared: Path, fold=0, max_epochs=4, model="MS4N", **settings) -> dict:
    spec = job_spec(PARAMS, Job("uea", "BasicMotions", model, fold), "default")
    spec["settings"].update(max_epochs=max_epochs, **settings)
    spec["prepared_dir"] = str(prepared)
    return spec


# ------------------------------------------------------------------ the defaults
@pytest.mark.parametrize("benchmark", ["uea", "monster"])
def test_default_protocol_is_the_authors_code(benchmark):
    """Every setting the authors' code has a value for is params.yaml's default for the
    MS4N benchmarks (the split fallback has none: sklearn raises there)."""
    authors = load_authors_protocol()
    overridden = PARAMS["benchmarks"][benchmark].get("dataset_overrides") or {}
    dataset = next(d for d in PARAMS["benchmarks"][benchmark]["datasets"] if d not in overridden)
    settings = benchmark_settings(PARAMS, benchmark, "monster-paper", dataset)
    checked = 0
    for _, row in authors[authors["benchmark"].isin(["*", benchmark])].iterrows():
        if not row["has_value"]:
            continue
        if row["setting"] == "dropout":
            for model in ("MS4N", "MS4", "MS4-2Layer", "MS4-H128", "S4D"):
                assert PARAMS["models"][model]["dropout"] == row["authors"], model
        else:
            assert settings[row["setting"]] == row["authors"], row["setting"]
        checked += 1
    assert checked >= 10


def test_monster_trains_100_epochs_on_eeg_har_and_satellite():
    from ssmbench.data.catalog import domain_of

    for name in PARAMS["benchmarks"]["monster"]["datasets"]:
        epochs = benchmark_settings(PARAMS, "monster", "monster-paper", name)["max_epochs"]
        want = 100 if domain_of("monster", name) in ("EEG", "HAR", "Satellite") else 200
        assert epochs == want, (name, domain_of("monster", name))


# -------------------------------------------------------------- validation split
def test_fixed_split_seed_gives_every_run_the_same_split(basic_motions):
    dataset = PreparedDataset(basic_motions)
    fixed = {"val_split_seed": 1234}
    splits = [split_indices(dataset, 0, 0.1, validation_seed(fixed, s))[1] for s in range(3)]
    assert all(np.array_equal(splits[0], v) for v in splits[1:])
    per_run = [
        split_indices(dataset, 0, 0.1, validation_seed({"val_split_seed": "run"}, s))[1]
        for s in range(3)
    ]
    assert not all(np.array_equal(per_run[0], v) for v in per_run[1:])


def test_fixed_split_is_sklearns_stratified_shuffle_split_with_1234():
    from sklearn.model_selection import StratifiedShuffleSplit

    y = np.repeat(np.arange(4), 10)
    _, val = stratified_validation_split(y, 0.1, 1234, "shuffle")
    want = next(StratifiedShuffleSplit(1, test_size=0.1, random_state=1234).split(y, y))[1]
    assert val.tolist() == sorted(want.tolist())


HANDWRITING_LIKE = np.arange(150) % 26  # 150 rows in 26 classes: 10% is 15 < 26


def test_too_few_rows_shuffle_keeps_ten_percent_unstratified():
    tr, va = stratified_validation_split(HANDWRITING_LIKE, 0.1, 1234, "shuffle")
    assert len(va) == math.ceil(0.1 * 150) == 15 and len(tr) == 135
    assert len(set(HANDWRITING_LIKE[va])) < 26  # not every class can be validated
    again = stratified_validation_split(HANDWRITING_LIKE, 0.1, 1234, "shuffle")[1]
    assert np.array_equal(va, again)


def test_a_stratified_split_exists_only_where_sklearn_can_draw_it():
    from ssmbench.data.validation_split import stratified_split_exists

    assert stratified_split_exists(np.repeat(np.arange(4), 10), 0.1)  # 4 rows, 4 classes
    assert not stratified_split_exists(HANDWRITING_LIKE, 0.1)  # 15 rows, 26 classes
    assert not stratified_split_exists(np.array([0] * 30 + [1]), 0.1)  # a single-row class


def test_too_few_rows_per_class_validates_every_class():
    tr, va = stratified_validation_split(HANDWRITING_LIKE, 0.1, 1234, "per_class")
    assert sorted(set(HANDWRITING_LIKE[va])) == list(range(26)) and len(va) == 26


def test_too_few_rows_error_names_the_counts_and_the_setting():
    with pytest.raises(DataError, match=r"0.1 of 150 rows is 15 rows, fewer than the 26 "
                       r"classes.*protocol.val_split_fallback"):  # fmt: skip
        stratified_validation_split(HANDWRITING_LIKE, 0.1, 1234, "error")
    with pytest.raises(DataError, match="fallback 'stratify' is not one of"):
        stratified_validation_split(HANDWRITING_LIKE, 0.1, 1234, "stratify")


# ------------------------------------------------------- stop rule and cadence
def _curve(record_path: Path) -> list[dict]:
    with open(record_path.with_name("fold0.curve.csv"), newline="") as fh:
        return list(csv.DictReader(fh))


def test_no_patience_trains_every_epoch_and_tests_the_best(basic_motions, tmp_path):
    rec = run_job(
        _spec(basic_motions, max_epochs=5, early_stopping_patience=None),
        tmp_path / "fold0.json", log=lambda _: None,
    )  # fmt: skip
    curve = _curve(tmp_path / "fold0.json")
    assert rec["epochs_run"] == 5 and not rec["stopped_early"]
    assert rec["val_split"] == "stratified"
    losses = [float(r["val_loss"]) for r in curve]
    assert rec["best_epoch"] == int(np.argmin(losses)) + 1


def test_patience_stops_early(basic_motions, tmp_path):
    rec = run_job(
        _spec(basic_motions, max_epochs=40, early_stopping_patience=1),
        tmp_path / "fold0.json", log=lambda _: None,
    )  # fmt: skip
    assert rec["stopped_early"] and rec["epochs_run"] < 40


def test_val_interval_validates_every_kth_and_the_last_epoch(basic_motions, tmp_path):
    rec = run_job(
        _spec(basic_motions, max_epochs=5, val_interval=2), tmp_path / "fold0.json",
        log=lambda _: None,
    )  # fmt: skip
    curve = _curve(tmp_path / "fold0.json")
    validated = [int(r["epoch"]) for r in curve if r["val_loss"] != ""]
    assert validated == [2, 4, 5] and len(curve) == 5
    assert all(r["train_loss"] != "" for r in curve)
    assert rec["best_epoch"] in validated


# --------------------------------------------------------------------- dropout
def test_channel_dropout_drops_whole_channels_at_every_step():
    torch.manual_seed(0)
    drop = ChannelDropout(0.5).train()
    y = drop(torch.ones(8, 16, 50))
    per_channel = y[..., :1]
    assert torch.equal(y, per_channel.expand_as(y))  # one decision per (sample, channel)
    assert set(per_channel.unique().tolist()) == {0.0, 2.0}
    assert torch.equal(drop.eval()(y), y)


def test_ms4_dropout_sits_where_the_authors_put_it():
    model = build_model("MS4N", 3, 4, 20, PARAMS["models"]["MS4N"])
    kinds = {name: type(m).__name__ for name, m in model.named_modules()}
    assert kinds["ssm_layers.0.dropout"] == "ChannelDropout"
    assert kinds["head.2"] == "Dropout" and model.head[2].p == 0.01
    # nothing else drops: the GLU's output goes straight to the residual
    droppers = [n for n, k in kinds.items() if "Dropout" in k]
    assert droppers == ["ssm_layers.0.dropout", "head.2"]


# ---------------------------------------------------------------- report notes
def test_protocol_notes_mark_each_departure(basic_motions, tmp_path):
    runs = tmp_path / "runs"
    run_job(_spec(basic_motions, max_epochs=1), runs / "uea/BasicMotions/MS4N/fold0.json",
            log=lambda _: None)  # fmt: skip
    authors_like = protocol_notes(collect_records(runs))
    run_job(
        _spec(basic_motions, max_epochs=1, fold=1, early_stopping_patience=50),
        runs / "uea/BasicMotions/MS4N/fold1.json", log=lambda _: None,
    )  # fmt: skip
    mixed = protocol_notes(collect_records(runs))

    def departing(text):
        return {
            line.split("|")[1].strip()
            for line in text.splitlines()
            if line.startswith("|") and "**departs**" in line
        }

    # the fallback always departs (the authors' code has none); max_epochs 1 is ours
    assert departing(authors_like) == {"val_split_fallback", "max_epochs"}
    assert departing(mixed) == {"val_split_fallback", "max_epochs", "early_stopping_patience"}
    assert "| early_stopping_patience | null, 50 | null |" in mixed
    assert "block-shuffled" not in mixed and "3 departure(s)." in mixed

    # a run whose X is over the in-memory budget reads block-shuffled epochs: a departure
    # no setting row shows, said under the table
    blocks = {"in_memory_max_gb": 0, "block_mb": 4 * 2400 / (1 << 20), "buffer_blocks": 2}
    run_job(_spec(basic_motions, max_epochs=1, fold=2, reading=blocks),
            runs / "uea/BasicMotions/MS4N/fold2.json", log=lambda _: None)  # fmt: skip
    with_blocks = protocol_notes(collect_records(runs))
    assert "**departs**: 1 of 3 runs read X in block-shuffled epochs" in with_blocks
    assert "4 departure(s)." in with_blocks

    # a record without a protocol among records with one (a frame's NaN there): its
    # settings show as not set, the notes are still written
    frame = collect_records(runs)
    frame["protocol"] = frame["protocol"].astype(object)
    frame.loc[frame.index[0], "protocol"] = float("nan")
    assert "(not set)" in protocol_notes(frame)


def test_check_lists_the_fallback_sets_and_an_error_fallback_stops_before_any_job():
    import copy

    from ssmbench.config import ConfigError, check_suite_sources, validation_fallbacks

    found = validation_fallbacks(PARAMS, "uea-paper")
    assert [d for _, d, _, _ in found] == [
        "AtrialFibrillation", "Cricket", "ERing", "Handwriting", "StandWalkJump"
    ]  # fmt: skip
    assert found[3][2:] == ("shuffle", "0.1 of its 150 training rows is 15, for 26 classes")
    params = copy.deepcopy(PARAMS)
    params["protocol"]["val_split_fallback"] = "error"
    params["suites"]["default"]["benchmarks"]["uea"] = ["BasicMotions", "ERing"]
    with pytest.raises(ConfigError, match=r"uea/ERing: 0.1 of its 30 training rows is 3, for "
                       r"6 classes, and val_split_fallback is error"):  # fmt: skip
        check_suite_sources(params, "default")
