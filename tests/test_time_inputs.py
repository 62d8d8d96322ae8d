"""The time-aware model contract: a family declares its inputs (``INPUTS``), the prepared
dataset gives the physical step sizes Δ from its timestamps, the training loop passes them
to the models that take them, and each record says what its model saw."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn as nn
from conftest import REPO

from ssmbench.config import Job, job_spec
from ssmbench.data.errors import DataError
from ssmbench.data.store import PreparedDataset
from ssmbench.models import FAMILIES, model_inputs
from ssmbench.models.frame import SequenceClassifier
from ssmbench.params_file import read_params
from ssmbench.train.protocol import run_job

N, C, L = 48, 2, 12


def _folder(tmp_path: Path, times: np.ndarray | None) -> Path:
    """A prepared per-step regression dataset whose target needs Δ: y_t = x_t · Δ_t."""
    rng = np.random.default_rng(0)
    folder = tmp_path / "prepared" / "reg" / "Toy"
    folder.mkdir(parents=True)
    X = rng.normal(size=(N, C, L)).astype(np.float32)
    steps = np.diff(times, axis=1, prepend=0.0) if times is not None else np.ones((N, L))
    y = (X * steps[:, None, :]).astype(np.float32)
    np.save(folder / "X.npy", X)
    np.save(folder / "y.npy", y)
    if times is not None:
        np.save(folder / "T.npy", times.astype(np.float32))
    (folder / "test_indices_fold_0.txt").write_text("".join(f"{i}\n" for i in range(40, N)))
    meta = {"name": "Toy", "N": N, "C": C, "L": L, "task": "regression",
            "fold_scheme": "given_folds", "n_folds": 1, "n_classes": None}  # fmt: skip
    (folder / "meta.json").write_text(json.dumps(meta))
    return folder


def _irregular_times() -> np.ndarray:
    """Increasing timestamps, the last 3 steps of every row padding (the last time
    repeated), as the data layer writes them."""
    rng = np.random.default_rng(1)
    times = np.cumsum(rng.uniform(0.5, 1.5, size=(N, L)), axis=1)
    times[:, -3:] = times[:, -4:-3]
    return times


class StepEcho(SequenceClassifier):
    """A per-step model that needs Δ (y = x · Δ is learnable only from it); it keeps the
    step sizes of its last call."""

    INPUTS = ("values", "steps")
    seen: list = []

    def __init__(self, n_channels: int, n_classes: int, length: int | None,
                 per_step: bool = False) -> None:  # fmt: skip
        super().__init__(n_channels, n_classes, length, per_step)
        self.scale = nn.Parameter(torch.zeros(n_channels))
        self.head = nn.Identity()

    def forward(self, x: torch.Tensor, steps: torch.Tensor | None = None) -> torch.Tensor:
        StepEcho.seen.append(None if steps is None else steps.detach().clone())
        steps = torch.ones_like(x[:, 0, :]) if steps is None else steps  # complexity counts
        out = (1 + self.scale)[None, :, None] * x * steps[:, None, :]  # (B, C, L)
        return self.readout(out.transpose(-1, -2))  # (B, L, C): one output per channel


@pytest.fixture
def step_echo(monkeypatch):
    monkeypatch.setitem(FAMILIES, "stepecho", StepEcho)
    StepEcho.seen = []
    return StepEcho


def _spec(folder: Path, model: str, model_params: dict) -> dict:
    params = read_params(REPO / "params.yaml")
    spec = job_spec(params, Job("uea", "BasicMotions", "MS4N", 0), "default")
    spec.update(benchmark="reg", dataset="Toy", model=model, model_params=model_params)
    spec["settings"].update(max_epochs=2, batch_size=16)
    spec["prepared_dir"] = str(folder)
    return spec


def test_steps_come_from_the_timestamps_and_padding_steps_are_zero(tmp_path):
    times = _irregular_times()
    steps, source = PreparedDataset(_folder(tmp_path, times)).steps()
    assert source == PreparedDataset.STEPS_FROM_TIMESTAMPS and steps.dtype == np.float32
    assert steps.shape == (N, L)
    assert np.allclose(steps[:, 0], times[:, 0])  # Δ_0 = t_0
    assert np.allclose(steps[:, 1:-3], np.diff(times[:, :-3], axis=1), atol=1e-5)
    assert (steps[:, -3:] == 0).all()  # the state is carried through padding


def test_regular_data_gets_unit_steps(tmp_path):
    steps, source = PreparedDataset(_folder(tmp_path, None)).steps()
    assert source == PreparedDataset.STEPS_UNIT and (steps == 1).all()


@pytest.mark.parametrize("bad", [-0.25, np.nan])
def test_a_negative_or_non_finite_step_names_the_file_and_row(tmp_path, bad):
    times = _irregular_times()
    times[7, 5] = times[7, 4] + bad  # row 7, step 5
    with pytest.raises(DataError, match=r"T\.npy: row 7, step 5") as err:
        PreparedDataset(_folder(tmp_path, times)).steps()
    assert ("negative" if bad < 0 else "not finite") in str(err.value)


@pytest.mark.parametrize("shape", [(N - 5, C, L), (N + 5, C, L), (N, C, L - 2), (N, L)])
@pytest.mark.parametrize("reader", ["steps", "padding_warning", "observed"])
def test_a_mask_of_another_shape_than_x_is_named_by_every_reader(tmp_path, shape, reader):
    """M.npy is read for the steps and the padding warning as well as for the models that
    take it: each reader names it before it reads a row, whichever comes first."""
    folder = _folder(tmp_path, _irregular_times())
    np.save(folder / "M.npy", np.ones(shape, dtype=bool))
    with pytest.raises(DataError) as err:
        getattr(PreparedDataset(folder), reader)()
    assert str(err.value) == (
        f"{folder / 'M.npy'}: shape {shape} dtype bool, expected bool (N, C, L) = "
        f"{(N, C, L)}, X.npy's. Run the prepare step again."
    )


def test_a_time_aware_model_is_given_the_datasets_steps(tmp_path, step_echo):
    times = _irregular_times()
    folder = _folder(tmp_path, times)
    record = run_job(_spec(folder, "StepEcho", {"family": "stepecho"}),
                     tmp_path / "runs" / "fold0.json", log=lambda _: None)  # fmt: skip
    assert record["inputs"] == ["values", "steps"]
    assert record["steps_source"] == "T.npy"
    given = [s for s in step_echo.seen if s is not None]
    # every training and evaluation call got Δ; only the MAC counts (meta, x alone) did not
    assert len(given) >= 6 and len(step_echo.seen) - len(given) <= 2
    expected = PreparedDataset(folder).steps()[0]
    assert any(torch.equal(s, torch.from_numpy(expected[40:N])) for s in given)  # the test rows
    # y = x · Δ: with Δ the model is exact from the start (scale 0), so the loss is ~0
    assert record["test_error"] < 1e-6  # float32 rounding; Δ = 1 instead would be ~0.3


def test_without_timestamps_it_gets_unit_steps_and_the_log_and_record_say_so(tmp_path, step_echo):
    lines: list[str] = []
    record = run_job(_spec(_folder(tmp_path, None), "StepEcho", {"family": "stepecho"}),
                     tmp_path / "runs" / "fold0.json", log=lines.append)  # fmt: skip
    assert record["steps_source"] == PreparedDataset.STEPS_UNIT
    assert any("no timestamps" in line and "Δ = 1" in line for line in lines)
    given = [s for s in step_echo.seen if s is not None]
    assert given and all(torch.equal(s, torch.ones_like(s)) for s in given)


def test_a_values_only_model_is_called_with_x_alone_and_its_record_says_so(tmp_path):
    folder = _folder(tmp_path, _irregular_times())
    record = run_job(_spec(folder, "MS4N", {"family": "ms4", "d_model": 8, "d_state": 8}),
                     tmp_path / "runs" / "fold0.json", log=lambda _: None)  # fmt: skip
    assert record["inputs"] == ["values"] and record["steps_source"] is None


def test_declared_inputs_are_checked():
    assert model_inputs(FAMILIES["ms4"]) == ("values",)

    class Bad(SequenceClassifier):
        INPUTS = ("values", "clock")

    with pytest.raises(ValueError, match="'clock'.*one of \\('values', 'steps', 'mask'\\)"):
        model_inputs(Bad)


class MaskEcho(SequenceClassifier):
    """A per-step model that reads the observation mask: y = x where observed, else 0 (its
    target below); it keeps the masks of its calls."""

    INPUTS = ("values", "mask")
    seen: list = []

    def __init__(self, n_channels: int, n_classes: int, length: int | None,
                 per_step: bool = False) -> None:  # fmt: skip
        super().__init__(n_channels, n_classes, length, per_step)
        self.scale = nn.Parameter(torch.zeros(n_channels))
        self.head = nn.Identity()

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        MaskEcho.seen.append(None if mask is None else mask.clone())
        mask = torch.ones_like(x, dtype=torch.bool) if mask is None else mask
        out = (1 + self.scale)[None, :, None] * x * mask  # (B, C, L)
        return self.readout(out.transpose(-1, -2))


@pytest.mark.parametrize("with_mask", [True, False])
def test_a_model_that_takes_the_mask_is_given_the_datasets_mask(tmp_path, monkeypatch, with_mask):
    monkeypatch.setitem(FAMILIES, "maskecho", MaskEcho)
    MaskEcho.seen = []
    folder = _folder(tmp_path, None)
    observed = np.random.default_rng(2).random((N, C, L)) > 0.3
    if with_mask:
        np.save(folder / "M.npy", observed)
        X = np.load(folder / "X.npy")
        np.save(folder / "y.npy", (X * observed).astype(np.float32))
    lines: list[str] = []
    record = run_job(_spec(folder, "MaskEcho", {"family": "maskecho"}),
                     tmp_path / "runs" / "fold0.json", log=lines.append)  # fmt: skip
    assert record["inputs"] == ["values", "mask"] and record["steps_source"] is None
    given = [m for m in MaskEcho.seen if m is not None]
    assert given and all(m.dtype == torch.bool for m in given)
    if with_mask:
        assert record["mask_source"] == "M.npy"
        assert any(torch.equal(m, torch.from_numpy(observed[40:N])) for m in given)
        assert record["test_error"] < 1e-6  # exact only with the mask
    else:
        assert record["mask_source"] == PreparedDataset.OBSERVED_ALL
        assert all(bool(m.all()) for m in given)
        assert any("no M.npy" in line for line in lines)
