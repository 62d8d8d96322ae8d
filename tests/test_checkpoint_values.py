"""A checkpoint whose digests match (written by faulty code, or crafted and re-sealed with
`content_digest`) but whose values this run cannot take up is discarded before any of it
is applied, with a log line naming what is wrong, and the run starts over and writes the
record an uninterrupted run writes. Taken up instead, each of these fails at the first
optimizer step or random draw (and again on every retry, the checkpoint being kept), or
trains a wrong run without a word.

One real checkpoint, made mid-epoch 2 of a 2-epoch BasicMotions run, is the base of every
variant."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch
from conftest import make_project, signal_at_training_batch

from ssmbench.config import Job, job_spec
from ssmbench.data import fetch_uea, prepare_uea
from ssmbench.params_file import read_params
from ssmbench.train import checkpoint as ckpt
from ssmbench.train.checkpoint import TrainingInterrupted
from ssmbench.train.protocol import run_job
from ssmbench.train.provenance import with_provenance

JOB = Job("uea", "BasicMotions", "MS4", 0)
EPOCHS = 2
N_BATCHES = 9  # BasicMotions' training rows in batches of the protocol's size
RESULT_KEYS = ("test_error", "test_loss", "best_epoch", "best_val_loss", "epochs_run")


def quiet(_):
    pass


@pytest.fixture(scope="module")
def spec(tmp_path_factory) -> dict:
    root = make_project(tmp_path_factory.mktemp("ckvalues") / "proj")
    fetch_uea("BasicMotions", root / "data/raw/uea", archive_dir=None, download=False)
    prepare_uea("BasicMotions", root / "data/raw/uea", root / "data/prepared/uea")
    spec = job_spec(read_params(root / "params.yaml"), JOB)
    spec["settings"].update(max_epochs=EPOCHS)
    spec["prepared_dir"] = str(root / spec["prepared_dir"])
    return spec


@pytest.fixture(scope="module")
def reference(spec, tmp_path_factory) -> dict:
    """The record of the uninterrupted run."""
    path = tmp_path_factory.mktemp("reference") / "fold0.json"
    run_job(spec, path, log=quiet)
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def real_checkpoint(spec, tmp_path_factory) -> dict:
    """A real checkpoint of the run, stopped in batch 5 of epoch 2 (after batch 4)."""
    folder = tmp_path_factory.mktemp("real")
    checkpoint = folder / "ckpt" / "fold0.pt"
    with pytest.MonkeyPatch.context() as monkeypatch:
        signal_at_training_batch(monkeypatch, N_BATCHES + 5)
        with pytest.raises(TrainingInterrupted):
            run_job(spec, folder / "fold0.json", log=quiet, checkpoint_path=checkpoint)
    state = torch.load(checkpoint, weights_only=True)
    assert (state["epoch"], state["step"], len(state["curve"])) == (2, 4, 1)
    assert state["early_stopping"]["best"] is not None
    return state


def _first_param_state(state: dict) -> dict:
    return state["optimizer"]["state"][0]


# (name, edit of the real checkpoint's state, text its discard line holds)
VARIANTS = [
    ("optimizer exp_avg shape",
     lambda s: _first_param_state(s).update(exp_avg=torch.zeros(5)),
     "its optimizer state for parameter 0 (exp_avg) has shape (5,), the parameter (64, 6)"),
    ("optimizer exp_avg_sq shape",
     lambda s: _first_param_state(s).update(exp_avg_sq=torch.zeros(64, 7)),
     "its optimizer state for parameter 0 (exp_avg_sq) has shape (64, 7)"),
    ("optimizer step not a count",
     lambda s: _first_param_state(s).update(step=torch.tensor(-1.0)),
     "its optimizer state for parameter 0 has step -1.0, not a count"),
    ("partial a string",
     lambda s: s["partial"].update(loss_sum="abc"),
     "its partial loss_sum 'abc' is not a finite number"),
    ("partial n_rows a float",
     lambda s: s["partial"].update(n_rows=16.5),
     "its partial n_rows 16.5 is not a count of rows"),
    ("python rng of strings",
     lambda s: s["rng"]["python"].update(state=["x"] * 625),
     "its rng.python is not a state random.setstate takes (TypeError"),
    ("torch rng a float tensor",
     lambda s: s["rng"].update(torch=s["rng"]["torch"].to(torch.float32)),
     "its rng.torch is a float32 tensor"),
    ("shuffle rng a float tensor",
     lambda s: s["rng"].update(shuffle=s["rng"]["shuffle"].to(torch.float32)),
     "its rng.shuffle is a float32 tensor"),
    ("numpy rng keys out of range",
     lambda s: s["rng"]["numpy"].update(keys=s["rng"]["numpy"]["keys"] + 2**32),
     "its rng.numpy keys are not 32-bit unsigned integers"),
    ("numpy rng pos out of range",
     lambda s: s["rng"]["numpy"].update(pos=700),
     "its rng.numpy pos 700 is not a position in its 624 keys"),
    ("best a string",
     lambda s: s["early_stopping"].update(best="ab"),
     "its early_stopping best 'ab' is not a pair of numbers"),
    ("best not finite",
     lambda s: s["early_stopping"].update(best=[float("inf"), 0.5]),
     "its early_stopping best [inf, 0.5] is not a pair of numbers"),
    ("epoch beyond max_epochs",
     lambda s: s.update(epoch=999),
     f"its epoch 999 is beyond max_epochs {EPOCHS}"),
    ("epoch negative",
     lambda s: s.update(epoch=-3),
     "its epoch -3 is not an epoch (they count from 1)"),
    ("epoch 0",
     lambda s: s.update(epoch=0),
     "its epoch 0 is not an epoch (they count from 1)"),
    ("epoch without its curve",
     lambda s: s.update(epoch=1),
     "its curve holds 1 epochs, not the 0 before its epoch 1"),
    ("curve of junk",
     lambda s: s.update(curve=["junk"]),
     "its curve row 1 is not the row of epoch 1"),
    ("step beyond the epoch",
     lambda s: s.update(step=500),
     f"its step 500 is not a batch of an epoch of {N_BATCHES} batches"),
    ("step negative",
     lambda s: s.update(step=-1),
     f"its step -1 is not a batch of an epoch of {N_BATCHES} batches"),
    ("model weight int64",
     lambda s: s["model"].update({"input_proj.weight": torch.zeros(64, 6, dtype=torch.int64)}),
     "its model tensor input_proj.weight is int64, the model's float32"),
    ("best weights float64",
     lambda s: s["early_stopping"]["best_state"].update(
         {"head.0.bias": s["early_stopping"]["best_state"]["head.0.bias"].double()}),
     "its best_state tensor head.0.bias is float64, the model's float32"),
    ("best weights without best",
     lambda s: s["early_stopping"].update(best_state=None),
     "its early_stopping best, best_state and best_epoch disagree"),
    ("optimizer base_lr of another run",
     lambda s: s["optimizer"]["param_groups"][0].update(base_lr=0.5),
     "its optimizer group 0 has base_lr 0.5, this run 0.001"),
]  # fmt: skip


def _sealed(state: dict, edit) -> dict:
    """A copy of `state` with `edit` applied, its content digest matching again."""
    state = copy.deepcopy(state)
    edit(state)
    state["content_sha256"] = ckpt.content_digest(state)
    return state


def _run(spec, state: dict | None, tmp_path: Path) -> tuple[list[str], dict, Path]:
    """Run the job with `state` as its checkpoint: (log lines, record, checkpoint path)."""
    record, checkpoint = tmp_path / "fold0.json", tmp_path / "ckpt" / "fold0.pt"
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    torch.save(state, checkpoint)
    lines: list[str] = []
    run_job(spec, record, log=lines.append, checkpoint_path=checkpoint)
    # the record with its provenance file (each resume: "resumed")
    return lines, with_provenance(record, json.loads(record.read_text())), checkpoint


def _same_result(got: dict, want: dict) -> None:
    for key in RESULT_KEYS:
        assert got[key] == want[key], (key, got[key], want[key])


def test_the_real_checkpoint_resealed_resumes(spec, reference, real_checkpoint, tmp_path):
    """The base of the variants passes every check and resumes to the same record."""
    lines, record, checkpoint = _run(spec, _sealed(real_checkpoint, lambda s: None), tmp_path)
    assert any(line.startswith(f"resumed from {checkpoint}: epoch 2, batch 4/") for line in lines)
    assert not any("discarded" in line for line in lines), lines
    assert len(record["resumed"]) == 1
    _same_result(record, reference)


@pytest.mark.parametrize(
    ("edit", "problem"), [v[1:] for v in VARIANTS], ids=[v[0] for v in VARIANTS]
)
def test_a_checkpoint_of_wrong_values_is_discarded(
    spec, reference, real_checkpoint, tmp_path, edit, problem
):
    state = _sealed(real_checkpoint, edit)
    assert ckpt._malformed(state) is None  # only its values are wrong
    lines, record, checkpoint = _run(spec, state, tmp_path)
    discarded = [line for line in lines if "discarded" in line]
    assert len(discarded) == 1, lines
    line = discarded[0]
    assert line.startswith(f"checkpoint {checkpoint} was made with other settings or code ("), line
    assert problem in line, line
    assert line.endswith("): discarded, starting from epoch 1"), line
    assert not any(line.startswith("resumed") for line in lines)
    assert record["resumed"] == []
    assert not checkpoint.exists()
    _same_result(record, reference)


def test_every_variant_is_caught_before_anything_is_applied(spec, real_checkpoint):
    """`check_matches` names each variant's problem on its own, with nothing loaded."""
    from ssmbench.train.optim import build_optimizer
    from ssmbench.train.run_setup import set_up

    run = set_up(spec, 1)
    optimizer = build_optimizer(run.model, spec["settings"])
    before = copy.deepcopy(run.model.state_dict())
    check = lambda state: ckpt.check_matches(  # noqa: E731
        state, run.model, optimizer, n_batches=N_BATCHES, max_epochs=EPOCHS
    )
    assert check(real_checkpoint) is None
    # real positions and values at the edges: every batch done (its validation left), and
    # a regression's best (its accuracy NaN)
    assert check(_sealed(real_checkpoint, lambda s: s.update(step=N_BATCHES))) is None
    nan_accuracy = lambda s: s["early_stopping"].update(best=[1.0, float("nan")])  # noqa: E731
    assert check(_sealed(real_checkpoint, nan_accuracy)) is None
    for name, edit, problem in VARIANTS:
        got = check(_sealed(real_checkpoint, edit))
        assert got is not None and problem in got, (name, got)
    assert optimizer.state_dict()["state"] == {}
    assert all(torch.equal(v, run.model.state_dict()[k]) for k, v in before.items())


def test_a_checkpoint_of_finished_training_without_best_weights_is_discarded(
    spec, reference, real_checkpoint, tmp_path
):
    """Training done (epoch max_epochs + 1) but no best weights to test: discarded."""

    def edit(state):
        state.update(epoch=EPOCHS + 1, step=0, curve=state["curve"] * 2)
        state["curve"][1] = {**state["curve"][1], "epoch": 2}
        state["early_stopping"].update(best=None, best_state=None, best_epoch=0)

    lines, record, _ = _run(spec, _sealed(real_checkpoint, edit), tmp_path)
    assert any(
        f"its training ended (epoch {EPOCHS + 1}, max_epochs {EPOCHS}) without a best epoch" in line
        and "discarded, starting from epoch 1" in line
        for line in lines
    ), lines
    _same_result(record, reference)
