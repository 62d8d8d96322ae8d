"""The parts the TIDES diagnostics add to the spine: a suite's per-benchmark models and
per-model settings, the Mamba baselines' time channel, the trained model's probes (the
effective decay rate per zone), the noisy Fading Flash variant, and the report's
effective-decay figure."""

from __future__ import annotations

import copy
import json
import math
from importlib import resources

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import REPO

from ssmbench.config import ConfigError, Job, check_params, job_spec, suite_grid
from ssmbench.data.store import PreparedDataset
from ssmbench.data.synthetic.prepare import NOISY_NAME, prepare_fading_flash
from ssmbench.models import build_model, model_inputs
from ssmbench.models.frame import with_time_channel
from ssmbench.params_file import read_params
from ssmbench.report.fading_flash import decay_results, fading_flash_decay_figure
from ssmbench.train.probes import run_probes

PARAMS = read_params(REPO / "params.yaml")


# --- suites: models per benchmark, settings per model ---------------------------------
def test_a_suite_runs_each_benchmark_with_its_own_models():
    jobs = suite_grid(PARAMS, "tides-diagnostics")
    by_bench = {b: {j.model for j in jobs if j.benchmark == b} for b in {j.benchmark for j in jobs}}
    assert by_bench["synthetic"] == {"FF-S5", "FF-TIDES", "FF-TIDES-Lambda", "FF-MambaS"}
    assert "FF-TIDES" not in by_bench["uea_drop"] and "MS4N" in by_bench["uea_drop"]
    assert by_bench["physiome"] == {"TIDES-physio", "TIDES-physio-ImInput"}
    # a benchmark without its own list takes the suite's models
    params = copy.deepcopy(PARAMS)
    del params["suites"]["tides-diagnostics"]["benchmark_models"]["physiome"]
    jobs = suite_grid(params, "tides-diagnostics")
    assert {j.model for j in jobs if j.benchmark == "physiome"} == {"MS4N"}


def test_model_overrides_apply_to_that_model_only_and_last():
    mamba = job_spec(PARAMS, Job("uea_drop", "EigenWormsDrop", "Mamba2-drop", 0), "tides-paper")
    tides = job_spec(PARAMS, Job("uea_drop", "EigenWormsDrop", "TIDES-drop", 0), "tides-paper")
    assert mamba["settings"]["weight_decay"] == 0.0 and tides["settings"]["weight_decay"] == 0.1
    assert mamba["settings"]["lr"] == tides["settings"]["lr"] == 1e-3
    assert mamba["settings"]["batch_size"] == 32 and tides["settings"]["batch_size"] == 10


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda s: s["benchmark_models"].update(nowhere=["MS4N"]), "benchmark_models: 'nowhere'"),
        (lambda s: s["benchmark_models"]["physiome"].append("NoSuchModel"), "NoSuchModel"),
        (lambda s: s["model_overrides"].update({"FF-S5x": {"lr": 1.0}}), "FF-S5x"),
        (lambda s: s["model_overrides"]["Mamba1-drop"].update(d_model=3), "d_model"),
    ],
)
def test_bad_per_benchmark_models_or_model_overrides_are_named(edit, message):
    params = copy.deepcopy(PARAMS)
    edit(params["suites"]["tides-paper"])
    with pytest.raises(ConfigError, match=message):
        check_params(params)


# --- the time channel ---------------------------------------------------------------
def test_the_time_channel_is_the_cumulative_time_over_the_length():
    x = torch.zeros(2, 3, 5)
    steps = torch.tensor([[0.0, 1.0, 1.0, 2.0, 0.0], [0.0, 4.0, 0.0, 0.0, 0.0]])
    out = with_time_channel(x, steps, 5)
    assert out.shape == (2, 4, 5)
    assert out[:, 0].tolist() == [[0.0, 0.25, 0.5, 1.0, 1.0], [0.0, 1.0, 1.0, 1.0, 1.0]]
    assert with_time_channel(x, None, 5)[0, 0].tolist() == [0.25, 0.5, 0.75, 1.0, 1.25]


@pytest.mark.parametrize("model", ["Mamba1-drop", "Mamba2-drop"])
def test_a_mamba_with_a_time_channel_takes_steps_and_reads_them(model):
    torch.manual_seed(0)
    entry = PARAMS["models"][model]
    net = build_model(model, 3, 4, 20, entry).eval()
    plain = build_model(model, 3, 4, 20, {**entry, "time_channel": False})
    assert model_inputs(net) == ("values", "steps") and model_inputs(plain) == ("values",)
    x = torch.randn(2, 3, 20)
    regular, gappy = torch.ones(2, 20), torch.ones(2, 20)
    gappy[:, 5:] = 3.0
    with torch.no_grad():
        assert not torch.allclose(net(x, steps=regular), net(x, steps=gappy))
        assert torch.equal(net(x), net(x, steps=regular))  # None: regular steps


# --- probes ----------------------------------------------------------------------------
PROBE = {"rates": [1.0, 1.5, 2.0], "inputs": [[0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
         "dts": [0.1, 1.0, 2.0]}  # fmt: skip


def _ff(name):
    torch.manual_seed(0)
    return build_model(name, 4, 1, 40, PARAMS["models"][name], per_step=True)


def test_s5_has_one_decay_rate_for_every_zone_and_every_step():
    model = _ff("FF-S5")
    answer = run_probes(model, {"probes": {"effective_decay": PROBE}})["effective_decay"]
    expected = (-model.Lambda_re * torch.exp(model.log_step)).detach().double().numpy()
    for zone in answer["per_state"]:
        for row in zone:
            np.testing.assert_allclose(row, expected, rtol=1e-6)
    # the matched state is the one closest to the zone's rate
    for rate, matched in zip(answer["rates"], answer["matched"], strict=True):
        assert matched[0] == min(expected, key=lambda v: abs(v - rate))


def test_mambas_rate_drifts_with_the_step_and_tides_follows_its_input():
    mamba = _ff("FF-MambaS")  # step softplus(0.5413) = 1 at the start: rate −Λ / Δ
    rates = run_probes(mamba, {"probes": {"effective_decay": PROBE}})["effective_decay"]
    row_01, row_2 = rates["per_state"][0][0], rates["per_state"][0][2]
    np.testing.assert_allclose(np.asarray(row_01) / np.asarray(row_2), 20.0, rtol=1e-3)
    tides = _ff("FF-TIDES")
    with torch.no_grad():  # an input-dependent Re Λ: each zone its own rate
        tides.lambda_re_proj.weight.normal_()
    zones = run_probes(tides, {"probes": {"effective_decay": PROBE}})["effective_decay"]
    assert zones["per_state"][0][1] != zones["per_state"][2][1]


def test_a_model_without_the_probes_method_or_a_dataset_without_probes_gets_none():
    ms4n = build_model("MS4N", 4, 2, 40, PARAMS["models"]["MS4N"])
    assert run_probes(ms4n, {"probes": {"effective_decay": PROBE}}) is None
    assert run_probes(_ff("FF-S5"), {}) is None


# --- the noisy variant -----------------------------------------------------------------
def test_the_noisy_variant_has_noisy_training_rows_and_the_clean_test_sets(tmp_path):
    kw = {"n_train": 4000, "n_test_per_dt": 50, "test_dts": [0.5, 2.0]}
    clean = PreparedDataset(prepare_fading_flash(tmp_path, **kw))
    noisy = PreparedDataset(
        prepare_fading_flash(tmp_path, **kw, input_noise=0.2, target_noise=0.05, name=NOISY_NAME)
    )
    assert noisy.path.name == NOISY_NAME and noisy.meta["name"] == NOISY_NAME
    train = np.arange(4000)
    dx = np.asarray(noisy.X[train]) - np.asarray(clean.X[train])
    dy = np.asarray(noisy.y[train]) - np.asarray(clean.y[train])
    assert math.isclose(dx.std(), 0.2, rel_tol=0.02) and math.isclose(dy.std(), 0.05, rel_tol=0.02)
    test = np.arange(4000, 4100)
    assert np.array_equal(noisy.X[test], clean.X[test]) and np.array_equal(
        noisy.y[test], clean.y[test]
    )
    assert noisy.meta["generation"]["train_input_noise"] == 0.2
    assert noisy.meta["probes"]["effective_decay"]["dts"] == [0.5, 2.0]
    with pytest.raises(ValueError, match="input_noise"):
        prepare_fading_flash(tmp_path, **kw, input_noise=-1.0)


# --- the report's effective-decay figure ------------------------------------------------
def test_the_decay_figure_reads_the_records_probes(tmp_path):
    matched = [[1.0, 1.1, 1.2], [1.5, 1.5, 1.5], [2.0, 2.0, 1.9]]
    probes = {"effective_decay": {**PROBE, "per_state": [], "matched": matched}}
    records = [
        {"benchmark": "synthetic", "dataset": "FadingFlash", "model": "FF-TIDES", "fold": f,
         "probes": json.dumps(probes) if f else probes}  # a dict, or JSON from metrics
        for f in (0, 1)
    ]  # fmt: skip
    decay = decay_results(pd.DataFrame(records))
    assert len(decay) == 2 * 3 * 3
    assert decay[(decay.rate == 1.0) & (decay.dt == 2.0)]["decay"].tolist() == [1.2, 1.2]
    files = fading_flash_decay_figure(decay, tmp_path / "decay")
    assert all(p.is_file() for p in files.values())
    files = fading_flash_decay_figure(decay.iloc[0:0], tmp_path / "empty")
    assert all(p.is_file() for p in files.values())


# --- per-dataset hyperparameters: the Log-NCDE benchmark's S5 -------------------------
def _logncde_s5_params(C, K, H, n_layers, ssm_size, time):
    """The parameters of the Log-NCDE repository's S5 (models/S5.py, conj_sym): Linear
    encoder, per layer Λ (re, im), B, C (complex, P = ssm_size / 2 states), D, log Δ and a
    GLU(H, H); Linear head."""
    P = ssm_size // 2
    layer = 2 * P + 2 * P * H + 2 * H * P + H + P + 2 * (H * H + H)
    return (C + int(time)) * H + H + n_layers * layer + H * K + K


@pytest.mark.parametrize(
    "dataset, C, K",
    [("EigenWorms", 6, 5), ("EthanolConcentration", 3, 4), ("Heartbeat", 61, 2),
     ("MotorImagery", 64, 2), ("SelfRegulationSCP1", 6, 2), ("SelfRegulationSCP2", 7, 2)],
)  # fmt: skip
def test_a_dataset_gets_its_own_hyperparameters(dataset, C, K):
    from ssmbench.complexity import count_params

    spec = job_spec(PARAMS, Job("uea", dataset, "S5-logncde", 0), "default")
    hyper = spec["model_params"]
    assert "dataset_params" not in hyper
    config = json.loads(
        resources.files("ssmbench.reference").joinpath("logncde_repeat_configs.json").read_text()
    )["S5"][dataset]
    assert hyper["d_model"] == int(config["hidden_dim"])  # params.yaml holds the repository's
    assert hyper["n_layers"] == int(config["num_blocks"])
    assert hyper["ssm_size"] == int(config["ssm_dim"])
    assert hyper["ssm_blocks"] == int(config["ssm_blocks"])
    assert hyper["time_channel"] == (config["time"] == "True")
    model = build_model("S5-logncde", C, K, 100, hyper)
    expected = _logncde_s5_params(
        C, K, hyper["d_model"], hyper["n_layers"], hyper["ssm_size"], hyper["time_channel"]
    )
    assert count_params(model) == expected


def test_bad_dataset_params_are_named():
    params = copy.deepcopy(PARAMS)
    params["models"]["S5-logncde"]["dataset_params"]["Heartbeat"]["d_modle"] = 3
    with pytest.raises(ConfigError, match=r"S5-logncde.dataset_params.Heartbeat.*d_modle"):
        check_params(params)
    params = copy.deepcopy(PARAMS)
    params["models"]["S5-logncde"]["dataset_params"]["NoSuchSet"] = {"d_model": 8}
    with pytest.raises(ConfigError, match="'NoSuchSet' is not a dataset of any benchmark"):
        check_params(params)
