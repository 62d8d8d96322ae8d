"""micro_batch_rows: a batch's forward and backward in parts of a few rows gives the whole
batch's gradient (classification, masked per-step regression, a model regulariser) and,
through the protocol, the same run; models with batch statistics are refused; the parts
apply on the CPU only (a GPU run trains whole batches and says why)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn
from test_protocol import _regression_folder, _regression_spec, basic_motions, spec_for  # noqa: F401

from ssmbench.config import ConfigError
from ssmbench.models import MS4Classifier
from ssmbench.models.tides import TIDESClassifier
from ssmbench.train.micro_batches import (
    backward_batch,
    check_micro_batching,
    effective_micro_batch_rows,
    micro_batches_record,
)
from ssmbench.train.objective import Objective
from ssmbench.train.protocol import run_job


def _gradients(model, objective, xb, yb, mb, rows) -> tuple[float, list[torch.Tensor]]:
    model.zero_grad(set_to_none=True)
    seen = []
    loss_sum, _ = backward_batch(model, objective, xb, yb, mb, {}, rows,
                                 lambda loss, inputs: seen.append(len(inputs)))  # fmt: skip
    assert sum(seen) == len(yb) and max(seen) == (rows or len(yb))
    return loss_sum, [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("rows", [1, 3, 8])
def test_parts_give_the_whole_batch_gradient_classification(rows):
    torch.manual_seed(0)
    model = MS4Classifier(3, 4, 50, d_model=16, d_state=8, n_layers=2, b_scales_step=True)
    objective = Objective({"task": "classification", "L": 50, "n_classes": 4}, (10,))
    xb, yb = torch.randn(10, 3, 50), torch.randint(0, 4, (10,))
    whole_loss, whole = _gradients(model, objective, xb, yb, None, None)
    part_loss, parts = _gradients(model, objective, xb, yb, None, rows)
    assert part_loss == pytest.approx(whole_loss, rel=1e-5)
    for a, b in zip(whole, parts, strict=True):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-6)


def test_parts_give_the_whole_batch_gradient_masked_regression():
    torch.manual_seed(1)
    model = MS4Classifier(2, 2, 40, d_model=16, d_state=8, per_step=True)
    objective = Objective({"task": "regression", "L": 40}, (9, 2, 40))
    xb, yb = torch.randn(9, 2, 40), torch.randn(9, 2, 40)
    mb = torch.rand(9, 2, 40) < 0.3
    mb[4] = False  # a part with no observed target carries no weight
    _, whole = _gradients(model, objective, xb, yb, mb, None)
    _, parts = _gradients(model, objective, xb, yb, mb, 2)
    for a, b in zip(whole, parts, strict=True):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-6)


class _Regularised(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(6, 3)

    def forward(self, x):
        return self.linear(x.flatten(1))

    def regulariser(self):
        return self.linear.weight.square().sum()


def test_the_regulariser_is_added_once_per_batch():
    torch.manual_seed(2)
    model = _Regularised()
    objective = Objective({"task": "classification", "L": 3, "n_classes": 3}, (6,))
    xb, yb = torch.randn(6, 2, 3), torch.randint(0, 3, (6,))
    _, whole = _gradients(model, objective, xb, yb, None, None)
    _, parts = _gradients(model, objective, xb, yb, None, 2)
    for a, b in zip(whole, parts, strict=True):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-7)


def test_batch_statistics_and_bad_values_are_refused():
    tides = TIDESClassifier(3, 4, 20, **TIDESClassifier.TEST_PARAMS)
    with pytest.raises(ConfigError, match=r"run X: micro_batch_rows = 4 would change the model"
                       r".*BatchNorm1d.*micro_batch_rows: null"):  # fmt: skip
        check_micro_batching(tides, 4, "run X")
    check_micro_batching(tides, None, "run X")  # off: nothing to refuse
    for bad in (0, 2.5, True):
        with pytest.raises(ConfigError, match="micro_batch_rows must be null or an integer"):
            check_micro_batching(MS4Classifier(3, 4, 20, d_model=8, d_state=8), bad, "run X")


def test_a_run_in_parts_is_the_same_run(basic_motions, tmp_path):  # noqa: F811
    spec = spec_for(basic_motions, model="MS4N", max_epochs=2)
    spec["settings"]["batch_size"] = 8
    spec["model_params"]["dropout"] = 0.0  # with dropout the parts draw their own masks
    whole = run_job(spec, tmp_path / "whole" / "fold0.json", log=lambda _: None)
    spec["settings"]["micro_batch_rows"] = 3
    parts = run_job(spec, tmp_path / "parts" / "fold0.json", log=lambda _: None)
    curves = [np.genfromtxt(tmp_path / d / "fold0.curve.csv", delimiter=",", names=True)
              for d in ("whole", "parts")]  # fmt: skip
    np.testing.assert_allclose(curves[1]["train_loss"], curves[0]["train_loss"], rtol=1e-4)
    np.testing.assert_allclose(curves[1]["val_loss"], curves[0]["val_loss"], rtol=1e-4)
    assert parts["test_loss"] == pytest.approx(whole["test_loss"], rel=1e-4)
    assert parts["protocol"]["micro_batch_rows"] == 3  # the record says how it was trained
    assert parts["micro_batches"] == {"rows": 3, "applied": True, "reason": None}
    assert whole["micro_batches"] is None
    assert whole["scan"] is None  # MS4N: a convolution kernel, no scan


@pytest.mark.parametrize("device", ["cpu", torch.device("cpu")])
def test_parts_apply_on_the_cpu(device):
    assert effective_micro_batch_rows(4, device) == (4, None)
    assert effective_micro_batch_rows(None, device) == (None, None)


@pytest.mark.parametrize("device", ["cuda", "cuda:1", torch.device("cuda", 0)])
def test_parts_do_not_apply_on_a_gpu_and_say_why(device):
    rows, reason = effective_micro_batch_rows(4, device)
    assert rows is None  # the whole batch
    assert reason.startswith("micro_batch_rows = 4 is not applied on cuda: ")
    assert "the same gradient" in reason
    assert micro_batches_record(4, reason) == {"rows": 4, "applied": False, "reason": reason}
    assert effective_micro_batch_rows(None, device) == (None, None)  # nothing asked
    assert micro_batches_record(None, None) is None


def test_a_run_refuses_parts_for_a_batchnorm_model(tmp_path):
    folder = _regression_folder(tmp_path, with_mask=False, with_val=True)
    spec = _regression_spec(folder, "TIDES-physio")
    spec["settings"]["micro_batch_rows"] = 4
    with pytest.raises(ConfigError, match="would change the model"):
        run_job(spec, tmp_path / "runs" / "fold0.json", log=lambda _: None)
    assert not (tmp_path / "runs" / "fold0.json").exists()
