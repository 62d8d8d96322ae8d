"""The TIDES reference's optimizer (train/optim.py, param_groups: tides): the SSM core at
lr without weight decay, the rest at lr · lr_factor, biases and log-steps undecayed; and
the cosine schedule with warmup, equal to torch's LinearLR → CosineAnnealingLR per epoch."""

from __future__ import annotations

import pytest
import torch
from conftest import REPO

from ssmbench.config import model_entry
from ssmbench.models import build_model
from ssmbench.params_file import read_params
from ssmbench.setting_defaults import setting_defaults
from ssmbench.train.optim import build_optimizer, lr_factor_at, set_epoch_lr

PARAMS = read_params(REPO / "params.yaml")


def _groups(model, **settings):
    settings = {**setting_defaults(), "optimizer": "adamw", "lr": 1e-3, "weight_decay": 0.05,
                "param_groups": "tides", "lr_factor": 10, **settings}  # fmt: skip
    opt = build_optimizer(model, settings)
    names = {id(p): n for n, p in model.named_parameters()}
    return opt, [
        (g["lr"], g["weight_decay"], sorted(names[id(p)] for p in g["params"]))
        for g in opt.param_groups
    ]


def test_s5s_static_lambda_b_c_are_the_core_and_biases_are_not_decayed():
    model = build_model("S5-drop", 6, 4, 50, model_entry(PARAMS, "S5-drop"))
    _, groups = _groups(model)
    (lr0, wd0, core), (lr1, wd1, decayed), (lr2, wd2, plain) = groups
    assert (lr0, wd0) == (1e-3, 0.0) and (lr1, wd1) == (1e-2, 0.05) and (lr2, wd2) == (1e-2, 0.0)
    assert core == [f"blocks.0.ssm.{n}" for n in ("B", "C", "Lambda_im", "Lambda_re")]
    assert all(n.endswith((".bias", ".log_step")) for n in plain) and plain
    assert "blocks.0.ssm.D" in decayed and "head.weight" in decayed
    assert len(core) + len(decayed) + len(plain) == len(list(model.parameters()))


def test_an_input_dependent_part_is_not_core_its_projection_is_a_regular_weight():
    model = build_model("TIDES-drop", 6, 4, 50, model_entry(PARAMS, "TIDES-drop"))
    _, groups = _groups(model)
    assert groups[0][2] == ["blocks.0.ssm.Lambda_im"]  # Re Λ and B/C are projected
    assert "blocks.0.ssm.b_proj.up.weight" in groups[1][2]
    assert "blocks.0.ssm.b_proj.up.bias" in groups[2][2]


def test_hints_and_the_tides_grouping_do_not_combine():
    model = build_model("S4D", 3, 2, 20, model_entry(PARAMS, "S4D"))
    with pytest.raises(ValueError, match="_optim hint.*param_groups: hints"):
        _groups(model)
    with pytest.raises(ValueError, match="param_groups 'layered'"):
        _groups(model, param_groups="layered")


@pytest.mark.parametrize("warmup", [0, 3])
def test_the_cosine_schedule_is_torchs_per_epoch(warmup):
    epochs = 12
    weight = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.AdamW([weight], lr=0.1)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs - warmup, eta_min=0)
    if warmup:
        ramp = torch.optim.lr_scheduler.LinearLR(opt, start_factor=1 / warmup, total_iters=warmup)
        sched = torch.optim.lr_scheduler.SequentialLR(opt, [ramp, cosine], milestones=[warmup])
    else:
        sched = cosine
    theirs = []
    for _ in range(epochs):
        theirs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    ours = [0.1 * lr_factor_at(e, epochs, "cosine", warmup) for e in range(epochs)]
    assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-12)
    assert lr_factor_at(5, epochs, "constant", warmup) == 1.0


def test_each_group_scales_from_its_own_base_rate():
    model = build_model("S5-drop", 6, 4, 50, model_entry(PARAMS, "S5-drop"))
    opt, _ = _groups(model)
    set_epoch_lr(opt, 0.5)
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([5e-4, 5e-3, 5e-3])
    set_epoch_lr(opt, 1.0)  # not compounded
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([1e-3, 1e-2, 1e-2])
