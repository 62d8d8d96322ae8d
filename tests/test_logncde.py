"""Tests for ssmbench.models.logncde (Log-NCDE, Walker et al. 2024): the windowed
log-signatures against increments and Lévy areas computed directly in numpy (both backends,
the reference's windows and basepoint), the Heun solver against expm(A t), the reference's
solver schedule, the depth-2 term against ``torch.func.jvp`` and the reference's pair loop,
the model's fast path (Jacobian form, stage tables) against the per-tangent arithmetic of
tests/logncde_oracle.py (outputs and gradients), the Log-ODE against the CDE it
approximates, shapes, learning, errors, the time channel, the parameter count, the Lip(2)
penalty, the cache and the MAC count. (The model contract runs in
tests/test_model_contract.py once the family is registered; ``test_contract_*`` here run
its checks on this family meanwhile.)"""

from __future__ import annotations

import copy
import json
import math
from functools import partial
from importlib import resources

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import REPO
from logncde_oracle import oracle_forward, oracle_increment
from torch.func import jvp, vmap

import ssmbench.models.logncde as logncde
import ssmbench.models.logsignature as logsignature
from ssmbench.complexity import count_params, mmac
from ssmbench.models import build_model, validate_model_params
from ssmbench.models.hyperparams import hyperparams_of
from ssmbench.models.log_ode import heun, log_ode_schedule
from ssmbench.models.logncde import LogNCDEClassifier, VectorField, param_count
from ssmbench.models.logsignature import (
    LogSignatureCache,
    hall_pairs,
    logsig_dim,
    n_windows,
    windowed_logsignature,
)
from ssmbench.params_file import read_params

F64 = torch.float64
#: params.yaml's Log-NCDE entry and its per-dataset configurations (the reference's)
ENTRY = read_params(REPO / "params.yaml")["models"]["LogNCDE"]
DATASET_PARAMS = ENTRY["dataset_params"]
#: the six UEA sets' (C, L, K)
UEA = {
    "EigenWorms": (6, 17984, 5),
    "EthanolConcentration": (3, 1751, 4),
    "Heartbeat": (61, 405, 2),
    "MotorImagery": (64, 3000, 2),
    "SelfRegulationSCP1": (6, 896, 2),
    "SelfRegulationSCP2": (7, 1152, 2),
}


# ------------------------------------------------------------------ numpy oracle
def numpy_windows(path: np.ndarray, stepsize: int) -> list[np.ndarray]:
    """The reference's windows (generate_paths.py) of one series (L, d), written out:
    the based path (0, X_0, ..., X_{L-1}), window k its points k s - 1 .. (k + 1) s - 1
    (window 0 from the basepoint), the remainder a last shorter window."""
    based = np.concatenate([np.zeros((1, path.shape[1])), path])
    out, k = [], 0
    while k * stepsize < len(based):
        out.append(based[max(k * stepsize - 1, 0) : (k + 1) * stepsize])
        k += 1
    return out


def numpy_logsig(points: np.ndarray, depth: int) -> np.ndarray:
    """Increments, then the Lévy areas A_ab = ½ ∫ (x^a dx^b - x^b dx^a), a < b, of a
    piecewise-linear path, segment by segment (∫ x^a dx^b over a segment from p to p + Δ
    is p^a Δ^b + Δ^a Δ^b / 2, relative to the start)."""
    rel = points - points[0]
    d = points.shape[1]
    increment = rel[-1]
    if depth == 1:
        return increment
    integral = np.zeros((d, d))  # ∫ x^a dx^b
    for p, q in zip(rel[:-1], rel[1:], strict=True):
        delta = q - p
        integral += np.outer(p, delta) + 0.5 * np.outer(delta, delta)
    areas = [0.5 * (integral[a, b] - integral[b, a]) for a in range(d) for b in range(a + 1, d)]
    return np.concatenate([increment, areas])


@pytest.mark.parametrize("backend", ["pysiglib", "torch"])
@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("stepsize", [1, 2, 3, 4, 5, 10])
def test_windowed_logsignature_is_increments_and_levy_areas(backend, depth, stepsize):
    rng = np.random.default_rng(stepsize)
    path = rng.normal(size=(3, 10, 4))  # L = 10: s = 5, 10 leave a 1-point remainder
    out = windowed_logsignature(torch.tensor(path, dtype=F64), depth, stepsize, backend)
    assert out.shape == (3, n_windows(10, stepsize), logsig_dim(4, depth))
    assert out.dtype == F64
    for i in range(3):
        windows = numpy_windows(path[i], stepsize)
        expected = np.stack([numpy_logsig(w, depth) for w in windows])
        np.testing.assert_allclose(out[i].numpy(), expected, atol=1e-12)


def test_depth_one_is_the_increments_and_depth_two_extends_it():
    path = torch.randn(2, 30, 3, dtype=F64)
    one = windowed_logsignature(path, 1, 4)
    two = windowed_logsignature(path, 2, 4)
    based = torch.cat([torch.zeros(2, 1, 3, dtype=F64), path], dim=1)
    ends = torch.arange(3, 31, 4)  # window k ends at based point (k + 1) s - 1, the last at L
    ends = torch.cat([ends, torch.tensor([30])])
    starts = torch.cat([torch.tensor([0]), ends[:-1]])
    torch.testing.assert_close(one, based[:, ends] - based[:, starts])
    torch.testing.assert_close(two[..., :3], one)
    assert two.shape[-1] == 3 + 3


def test_levy_area_of_a_square_loop_and_the_hall_order():
    # the unit square, anticlockwise from the origin, as one window after the basepoint
    # (the last point twice: window 0 is points 0 .. s - 1 of the based path (0, X_0, ...))
    corners = [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.0, 0.0], [0.0, 0.0]]
    square = torch.tensor([corners], dtype=F64)
    out = windowed_logsignature(square, 2, 6)  # window 0 = the basepoint + the whole loop
    torch.testing.assert_close(out[0, 0], torch.tensor([0.0, 0.0, 1.0], dtype=F64))
    a, b = hall_pairs(4)
    assert list(zip(a.tolist(), b.tolist(), strict=True)) == [
        (0, 1),
        (0, 2),
        (0, 3),
        (1, 2),
        (1, 3),
        (2, 3),
    ]


def test_logsignature_dtype_device_and_grad():
    x = torch.randn(2, 12, 3, requires_grad=True)
    out = windowed_logsignature(x, 2, 4)
    assert out.dtype == torch.float32 and not out.requires_grad
    assert windowed_logsignature(x.half(), 2, 4).dtype == torch.float16
    meta = windowed_logsignature(torch.empty(2, 12, 3, device="meta"), 2, 4)
    assert meta.device.type == "meta" and meta.shape == out.shape


# ----------------------------------------------------------------------- solver
def test_heun_integrates_a_linear_ode_to_the_matrix_exponential():
    gen = torch.Generator().manual_seed(0)
    A = torch.randn(4, 4, generator=gen, dtype=F64) / 2
    y0 = torch.randn(1, 4, generator=gen, dtype=F64)
    exact = y0 @ torch.linalg.matrix_exp(A * 1.5).T
    errors = []
    for n in (100, 200):
        dt = 1.5 / n
        y = heun(lambda j, stage, y, c: c * (y @ A.T), y0, [(dt, dt)] * n)
        errors.append((y - exact).abs().max().item())
    assert errors[0] < 1e-4
    assert 3.5 < errors[0] / errors[1] < 4.5  # second order


@pytest.mark.parametrize(
    "L, s, dt0",
    [
        (100, 7, 0.0123),
        (405, 2, 0.002),
        (40, 4, 0.1),
        (17984, 12, 0.00066711140760507),
        (896, 16, 0.002),
    ],
)
def test_schedule_is_the_references_heun_grid(L, s, dt0):
    """diffrax.Heun, ConstantStepSize dt0, from ts[0] = 0 to ts[-1] = (L - 1) / L, in float32 as
    the reference runs: t accumulated t + dt0, clipped within 1e-6 of the end; a stage at t
    reads interval searchsorted(intervals, t) - 1, intervals = ts[0::s] and T = 1."""
    plan = log_ode_schedule(L, s, dt0)
    f32 = np.float32
    ts = f32(1 / L) * np.arange(L).astype(f32)
    intervals = np.append(ts[::s], f32(1.0))
    times = [f32(0)]
    while times[-1] < ts[-1]:
        t = f32(times[-1] + f32(dt0))
        times.append(ts[-1] if t > f32(ts[-1] - f32(1e-6)) else t)
    np.testing.assert_allclose(plan.times, np.array(times, dtype=np.float64), rtol=0, atol=0)
    assert plan.n_steps == len(times) - 1 and plan.n_intervals == math.ceil(L / s)
    for j in range(plan.n_steps):
        for stage, t in enumerate((times[j], times[j + 1])):
            idx = int(np.searchsorted(intervals, t))  # logsig[idx - 1]: -1 (the last) at t = 0
            assert plan.stages[j][stage] == idx - 1
            dt = float(times[j + 1]) - float(times[j])
            width = float(intervals[idx]) - float(intervals[idx - 1])  # -T at t = 0
            assert plan.coefficients[j][stage] == pytest.approx(dt / width, rel=1e-12)


def test_schedule_facts():
    ew = log_ode_schedule(17984, 12, None)  # dt0 None: 1 / ceil(L / s), EigenWorms' value
    assert ew.n_intervals == 1499 and ew.n_steps == 1499
    assert 1 / ew.n_intervals == pytest.approx(DATASET_PARAMS["EigenWorms"]["dt0"], rel=1e-12)
    assert ew.times[-1] == pytest.approx(17983 / 17984)
    assert ew.stages[:3] == ((-1, 0), (0, 1), (1, 2))  # t = 0 wraps; steps straddle
    assert ew.coefficients[0][0] == pytest.approx(-DATASET_PARAMS["EigenWorms"]["dt0"], rel=1e-6)
    assert log_ode_schedule(1, 1, None).n_steps == 0  # L = 1: nothing to integrate
    with pytest.raises(ValueError, match="'dt0'"):
        log_ode_schedule(10, 2, -0.1)


# ------------------------------------------------------------------ vector field
def _reference_increment(vf: VectorField, y: torch.Tensor, logsig: torch.Tensor) -> torch.Tensor:
    """LogNeuralCDEs.py's func (times the interval width): jvps[i, j] = J_{f_j} f_i by
    vmapped jvp, the Lie brackets of the Hall pairs jvps[a, b] - jvps[b, a]."""
    d, h = vf.n_paths, vf.hidden_dim
    out = []
    for i in range(y.shape[0]):

        def field(z):
            return vf(z[None])[0].reshape(-1)

        point = y[i]
        fields = field(point).view(d, h)
        jvps = vmap(lambda t, p=point: jvp(field, (p,), (t,))[1])(fields).view(d, d, h)
        value = logsig[i, :d] @ fields
        if logsig.shape[-1] > d:
            a, b = hall_pairs(d)
            value = value + logsig[i, d:] @ (jvps[a, b] - jvps[b, a])
        out.append(value)
    return torch.stack(out)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
@pytest.mark.parametrize("hidden_dim", [3, 5])  # H < d = 4: the Jacobian form; else the push
@pytest.mark.parametrize("vf_depth", [0, 1, 3])
@pytest.mark.parametrize("depth", [1, 2])
def test_increment_is_the_references_jvp_lie_brackets(vf_depth, depth, hidden_dim):
    torch.manual_seed(vf_depth)
    vf = VectorField(hidden_dim, 4, 6, vf_depth, scale=1.0).double()
    assert vf.jacobian_form == (hidden_dim < 4)
    y = torch.randn(3, hidden_dim, dtype=F64)
    ls = torch.randn(3, logsig_dim(4, depth), dtype=F64)
    torch.testing.assert_close(vf.increment(y, ls), _reference_increment(vf, y, ls))
    torch.testing.assert_close(vf.increment(y, ls), oracle_increment(vf, y, ls))


def test_stage_tables_hold_the_increments_and_the_area_matrix():
    vf = VectorField(2, 4, 3, 1, scale=1.0).double()
    ls = torch.randn(5, 7, logsig_dim(4, 2), dtype=F64)
    table = vf.stage_tables(ls)
    assert table.shape == (5, 7, 5, 4)
    torch.testing.assert_close(table[..., 0, :], ls[..., :4])
    lam_t = table[..., 1:, :]  # Λᵀ: Λ_ab = ℓ^{ab} for a < b, antisymmetric
    torch.testing.assert_close(lam_t, -lam_t.transpose(-1, -2))
    for m, (a, b) in enumerate(zip(*hall_pairs(4), strict=True)):
        torch.testing.assert_close(lam_t[..., b, a], ls[..., 4 + m])
    torch.testing.assert_close(vf.stage_tables(ls[..., :4]), ls[..., None, :4])  # depth 1


def test_vector_field_layers_and_scale():
    torch.manual_seed(0)
    plain = VectorField(8, 3, 16, 2, scale=1.0)
    torch.manual_seed(0)
    scaled = VectorField(8, 3, 16, 2, scale=1000.0)
    shapes = [tuple(layer.weight.shape) for layer in plain.linears()]
    assert shapes == [(16, 8), (16, 16), (24, 16)]  # eqx.nn.MLP(depth=2): 3 Linear layers
    for a, b in zip(plain.parameters(), scaled.parameters(), strict=True):
        torch.testing.assert_close(a / 1000.0, b)
    y = torch.randn(4, 8)
    out = plain(y)
    assert out.shape == (4, 3, 8) and out.abs().max() < 1  # tanh


def test_log_ode_approximates_the_cde():
    """Over one window the depth-2 Log-ODE is closer to the CDE dh = f(h) dX than depth 1,
    and a closed loop (zero increment) moves h only through the Lie bracket."""
    torch.manual_seed(3)
    vf = VectorField(3, 2, 8, 1, scale=1.0).double()
    theta = torch.linspace(0, 2 * math.pi, 65, dtype=F64)
    radius = 0.1
    loop = radius * torch.stack([torch.cos(theta) - 1, torch.sin(theta)], dim=-1)  # closed
    h0 = torch.randn(1, 3, dtype=F64)

    def solve(increments, substeps):  # Heun on dy/ds = increment(y, ℓ)
        y = h0
        for ls in increments:
            c = 1.0 / substeps
            y = heun(
                lambda j, st, y, c, ls=ls: vf.increment(y, ls[None] * c), y, [(c, c)] * substeps
            )
        return y

    deltas = loop.diff(dim=0)
    cde = solve([torch.cat([dx, torch.zeros(1, dtype=F64)]) for dx in deltas], 20)
    # one window: the basepoint (= loop[0], adds nothing) and the loop (its last point twice,
    # so that window 0, points 0 .. s - 1 of the based path, ends at the loop's end)
    path = torch.cat([loop, loop[-1:]])[None]
    ls = windowed_logsignature(path, 2, path.shape[1])[0, 0]
    log2 = solve([ls], 200)
    log1 = solve([torch.cat([ls[:2], torch.zeros(1, dtype=F64)])], 200)
    assert ls[:2].abs().max() < 1e-12
    assert ls[2] == pytest.approx(math.pi * radius**2, rel=1e-2)  # the enclosed area
    torch.testing.assert_close(log1, h0)  # depth 1 does not see a loop
    assert (log2 - cde).norm() < 0.1 * (log1 - cde).norm()


# ------------------------------------------------------------------------ model
def small(C=3, K=4, L=40, **kw):
    params = dict(hidden_dim=8, vf_depth=2, vf_width=8, depth=2, stepsize=4, scale=1.0)
    params.update(kw)
    torch.manual_seed(0)
    return LogNCDEClassifier(C, K, L, **params)


def _outputs_and_gradients(model, forward, x, steps, target):
    """The output and the gradients of a loss in the parameters and in x."""
    x = x.clone().requires_grad_()
    out = forward(x, steps)
    loss = (out * target).sum() + model.regulariser()
    params = list(model.parameters())
    return out.detach(), torch.autograd.grad(loss, [*params, x])


@pytest.mark.parametrize("dtype", [F64, torch.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("dt0", [None, 0.03])
@pytest.mark.parametrize("time_channel", [False, True])
@pytest.mark.parametrize("depth", [1, 2])
def test_fast_path_is_the_oracle(depth, time_channel, dt0, dtype):
    """Outputs, parameter gradients and the input's gradient of the model (stage tables,
    the Jacobian form or the push) equal the oracle's (per-tangent arithmetic): float64 to
    1e-10, float32 to ~1e-5 relative. scale 1 so that the vector field is far from linear;
    vf_depth 2 and 0 (M = I); H = 2 < d (the Jacobian form) and H = 8 > d (the push)."""
    for vf_depth, hidden_dim in ((2, 2), (2, 8), (0, 2), (0, 8)):
        gen = torch.Generator().manual_seed(vf_depth + 3 * depth + hidden_dim)
        model = small(C=3, K=4, L=30, depth=depth, stepsize=4, vf_depth=vf_depth,
                      hidden_dim=hidden_dim, time_channel=time_channel, dt0=dt0,
                      lambd=0.1).to(dtype)  # fmt: skip
        assert model.vf.jacobian_form == (hidden_dim < model.n_paths)
        x = torch.randn(3, 3, 30, generator=gen, dtype=dtype)
        steps = torch.rand(3, 30, generator=gen, dtype=dtype) + 0.5
        target = torch.randn(3, 4, generator=gen, dtype=dtype)
        out, grads = _outputs_and_gradients(model, model, x, steps, target)
        ref, ref_grads = _outputs_and_gradients(model, partial(oracle_forward, model), x,
                                                steps, target)  # fmt: skip
        tight = dtype == F64
        for got, want in zip([out, *grads], [ref, *ref_grads], strict=True):
            scale = want.abs().max().item()
            rtol = 1e-10 if tight else 1e-5
            torch.testing.assert_close(got, want, rtol=rtol, atol=rtol * max(scale, 1e-3))


def test_fast_path_is_the_oracle_per_step_and_at_motor_imagerys_width():
    """per_step outputs and gradients, and a MotorImagery-like vector field (d = 64,
    H = 16, w = 64, vf_depth 3, scale 1000) in float32, against the oracle."""
    model = small(C=3, L=30, per_step=True, stepsize=3).double()
    x, steps, target = torch.randn(2, 3, 30, dtype=F64), None, torch.randn(2, 30, 4, dtype=F64)
    out, grads = _outputs_and_gradients(model, model, x, steps, target)
    ref, ref_grads = _outputs_and_gradients(model, partial(oracle_forward, model), x, steps,
                                            target)  # fmt: skip
    for got, want in zip([out, *grads], [ref, *ref_grads], strict=True):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
    params = dict(DATASET_PARAMS["MotorImagery"], scale=ENTRY["scale"], dt0=0.05)
    torch.manual_seed(0)
    model = LogNCDEClassifier(64, 2, 160, **params)
    gen = torch.Generator().manual_seed(0)
    x = 17 * torch.randn(4, 64, 160, generator=gen)
    target = torch.randn(4, 2, generator=gen)
    out, grads = _outputs_and_gradients(model, model, x, None, target)
    ref, ref_grads = _outputs_and_gradients(model, partial(oracle_forward, model), x, None,
                                            target)  # fmt: skip
    for got, want in zip([out, *grads], [ref, *ref_grads], strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5 * want.abs().max().item())


@pytest.mark.parametrize("depth", [1, 2])
def test_forward_shapes(depth):
    model = small(depth=depth).eval()
    with torch.no_grad():
        assert model(torch.randn(5, 3, 40)).shape == (5, 4)
        assert model(torch.randn(1, 3, 40)).shape == (1, 4)  # batch of one
        assert model(torch.randn(2, 3, 13)).shape == (2, 4)  # another length
    per_step = small(depth=depth, per_step=True)
    out = per_step(torch.randn(2, 3, 40))
    assert out.shape == (2, 40, 4)
    out.sum().backward()


def test_per_step_reads_the_states_at_the_samples():
    model = small(per_step=True, stepsize=1, dt0=1 / 40).eval()  # t_l = l / L: step l's end
    classifier = small(stepsize=1, dt0=1 / 40).eval()
    x = torch.randn(2, 3, 40)
    with torch.no_grad():
        out = model(x)
        torch.testing.assert_close(out[:, -1], classifier(x))  # t_{L-1} = t_N: the last state
        torch.testing.assert_close(out[:, 0], model.head(model.initial(model.input_path(x)[:, 0])))


def test_precomputed_stage_tables_change_nothing(monkeypatch):
    model = small(C=3, stepsize=5).double()
    x = torch.randn(2, 3, 40, dtype=F64)
    loss = model(x).square().sum()
    grads = torch.autograd.grad(loss, list(model.parameters()))
    monkeypatch.setattr(logncde, "PRECOMPUTED_TABLES_MAX", 0)  # tables formed at every stage
    model._logsig_cache.clear()
    loss2 = model(x).square().sum()
    torch.testing.assert_close(loss2, loss)
    for a, b in zip(grads, torch.autograd.grad(loss2, list(model.parameters())), strict=True):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("depth", [1, 2])
def test_one_optimisation_step_lowers_the_loss(depth):
    gen = torch.Generator().manual_seed(1)
    x, y = torch.randn(8, 3, 24, generator=gen), torch.arange(8) % 4
    model = small(L=24, depth=depth, lambd=1e-3)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

    def loss_now():
        with torch.no_grad():
            return (F.cross_entropy(model(x), y) + model.regulariser()).item()

    before = loss_now()
    optimizer.zero_grad()
    (F.cross_entropy(model(x), y) + model.regulariser()).backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
    optimizer.step()
    assert loss_now() < before


def test_bad_hyperparameters_name_themselves():
    for depth in (0, 3, True):
        with pytest.raises(ValueError, match="'depth'"):
            small(depth=depth)
    with pytest.raises(ValueError, match="'stepsize'.*longer than the series"):
        small(L=10, stepsize=11)
    with pytest.raises(ValueError, match="'stepsize'"):
        small(stepsize=0)
    model = small(L=None, stepsize=8)  # no length: checked in forward
    with pytest.raises(ValueError, match="'stepsize' = 8 is longer than the series \\(L = 5\\)"):
        model(torch.randn(1, 3, 5))
    with pytest.raises(ValueError, match="'stepsize'"):
        windowed_logsignature(torch.randn(1, 5, 2), 2, 6)
    with pytest.raises(ValueError, match="'depth'"):
        windowed_logsignature(torch.randn(1, 5, 2), 3, 2)
    for name, value in (("hidden_dim", 0), ("vf_width", 0), ("vf_depth", -1), ("lambd", -1.0),
                        ("scale", 0.0), ("dt0", 0.0)):  # fmt: skip
        with pytest.raises(ValueError, match=f"'{name}'"):
            small(**{name: value})


def test_registry_checks_depth_choices():
    with pytest.raises(ValueError, match="'depth' must be one of \\(1, 2\\)"):
        validate_model_params("x", {"family": "logncde", "depth": 3})
    hyper = hyperparams_of(LogNCDEClassifier)
    assert hyper["dt0"] is float and hyper["depth"] is int and hyper["time_channel"] is bool


@pytest.mark.parametrize("time_channel", [True, False])
def test_time_channel_adds_one_input_dimension(time_channel):
    model = small(C=3, time_channel=time_channel, depth=2)
    d = 3 + int(time_channel)
    assert model.n_paths == d and model.initial.in_features == d
    assert model.vf.last.out_features == d * 8
    assert model.logsig_dim == d + d * (d - 1) // 2
    assert model.logsignature(torch.randn(2, 3, 40)).shape == (2, 11, d + d * (d - 1) // 2)
    assert model.INPUTS == (("values", "steps") if time_channel else ("values",))


def test_time_channel_is_the_references_and_reads_physical_steps():
    model = small(C=2)
    x = torch.randn(2, 2, 10)
    path = model.input_path(x)
    torch.testing.assert_close(path[..., 0], (torch.arange(10) / 10).expand(2, 10))
    torch.testing.assert_close(path[..., 1:], x.transpose(1, 2))
    steps = torch.tensor([[1.0] * 10, [0.5, 2.0] + [1.0] * 8])
    timed = model.input_path(x, steps)
    torch.testing.assert_close(timed[0, :, 0], torch.arange(10) / 10)
    assert timed[1, 1, 0] == pytest.approx(0.2) and timed[1, 2, 0] == pytest.approx(0.3)
    with torch.no_grad():
        assert not torch.equal(model(x, steps), model(x))
        torch.testing.assert_close(model(x, torch.ones(2, 10)), model(x))
    untimed = small(C=2, time_channel=False)
    with torch.no_grad():
        torch.testing.assert_close(untimed(x, steps), untimed(x))  # Δ unused without it


# ------------------------------------------------------------ parameters, penalty
#: the reference's LogNeuralCDE (5612f00) built from each repeat config with jax 0.10.2 /
#: equinox 0.13.8: its trainable leaves (vf, linear1, linear2), counted outside this suite
REFERENCE_COUNTS = {"EigenWorms": 36_421, "EthanolConcentration": 29_700, "Heartbeat": 164_210,
                    "MotorImagery": 77_042, "SelfRegulationSCP1": 91_458,
                    "SelfRegulationSCP2": 36_034}  # fmt: skip


@pytest.mark.parametrize("dataset", sorted(UEA))
def test_parameter_count_formula(dataset):
    C, L, K = UEA[dataset]
    params = DATASET_PARAMS[dataset]
    model = LogNCDEClassifier(C, K, L, **params)
    assert count_params(model) == REFERENCE_COUNTS[dataset]
    expected = param_count(C, K, params["hidden_dim"], params["vf_depth"], params["vf_width"],
                           params["time_channel"])  # fmt: skip
    assert count_params(model) == expected


def test_eigenworms_parameter_count():
    # vector field 128*32 + 32 + 32*32 + 32 + 32*896 + 896, linear1 7*128 + 128, linear2 128*5 + 5
    assert param_count(6, 5, 128, 2, 32) == 34752 + 1024 + 645 == 36421
    assert count_params(LogNCDEClassifier(6, 5, 17984)) == 36421  # the defaults: EigenWorms'
    assert count_params(LogNCDEClassifier(6, 5, 100, vf_depth=0)) == param_count(6, 5, 128, 0, 32)


def test_regulariser_is_the_references_lip2_norm():
    model = small(lambd=0.5)
    total = 0.0
    for layer in model.vf.linears():
        w, b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
        total += np.mean(np.linalg.norm(w, axis=-1) + np.linalg.norm(b, axis=-1))
    assert model.regulariser().item() == pytest.approx(0.5 * total, rel=1e-6)
    assert small(lambd=0.0).regulariser().item() == 0.0
    model.regulariser().backward()
    assert model.vf.last.weight.grad is not None and model.head.weight.grad is None


# ------------------------------------------------------------ cache, meta, MACs
def test_precomputed_and_cached_logsignatures(monkeypatch):
    model = small().eval()
    x = torch.randn(2, 3, 40)
    calls = []
    real = logsignature.windowed_logsignature

    def counting(path, depth, stepsize, backend="pysiglib"):
        calls.append(path.shape[0])
        return real(path, depth, stepsize, backend)

    monkeypatch.setattr(logsignature, "windowed_logsignature", counting)
    with torch.no_grad():
        first = model(x)
        assert calls == [2]
        torch.testing.assert_close(model(x, logsig=model.logsignature(x)), first)
        calls.clear()
        assert torch.equal(model(x.clone()), first)  # the same series: no new computation
        swapped = model(torch.cat([x[1:], torch.randn(1, 3, 40), x[:1]]))  # another batch
        assert calls == [1]  # only the new series
        torch.testing.assert_close(swapped[0], first[1])
        torch.testing.assert_close(swapped[2], first[0])
        x2 = x.clone()
        x2[0, 0, 5] += 1.0  # one value changed: that series again
        model(x2)
        assert calls == [1, 1]
    assert copy.deepcopy(model)._logsig_cache.entries == {}
    with pytest.raises(ValueError, match="logsig must be"):
        model(x, logsig=torch.zeros(2, 3, 3))


def test_cache_keeps_to_its_budget_and_keys_depth_and_stepsize():
    path = torch.randn(4, 30, 3)
    one = windowed_logsignature(path[:1], 2, 4)
    cache = LogSignatureCache(max_bytes=2 * one.numel() * one.element_size())
    out = cache.get(path, 2, 4)
    torch.testing.assert_close(out, windowed_logsignature(path, 2, 4))
    assert len(cache.entries) == 2 and cache.nbytes <= cache.max_bytes
    torch.testing.assert_close(cache.get(path, 1, 4), windowed_logsignature(path, 1, 4))
    torch.testing.assert_close(cache.get(path[:2], 2, 5), windowed_logsignature(path[:2], 2, 5))
    half = cache.get(path.half(), 2, 4)
    assert half.dtype == torch.float16


def test_meta_forward_and_macs():
    model = small(L=200, stepsize=4)
    with torch.no_grad():
        out = copy.deepcopy(model).to("meta")(torch.empty(2, 3, 200, device="meta"))
    assert out.shape == (2, 4) and out.device.type == "meta"
    paper = mmac(model, 3, 200, device="meta")
    full = mmac(model, 3, 200, device="meta", convention="full")
    assert mmac(model, 3, 200, device="cpu") == pytest.approx(paper)
    stages = 2 * model.schedule(200).n_steps
    vf_macs = sum(m.in_features * m.out_features + m.out_features for m in model.vf.linears())
    edges = (4 * 8 + 8) + (8 * 4 + 4)  # initial, head
    assert paper * 1e6 == pytest.approx(stages * vf_macs + edges)
    assert full > paper


def test_params_yaml_is_the_references_repeat_configs():
    """params.yaml's LogNCDE entry holds logncde_repeat_configs.json's "log_ncde" per
    dataset (the base entry is EigenWorms'), and every configuration builds and validates."""
    reference = json.loads(
        resources.files("ssmbench.reference").joinpath("logncde_repeat_configs.json").read_text()
    )["log_ncde"]
    assert set(DATASET_PARAMS) == set(reference) == set(UEA)
    base = {k: v for k, v in ENTRY.items() if k not in ("dataset_params", "dataset_settings")}
    validate_model_params("LogNCDE", base)
    for dataset, config in reference.items():
        params = DATASET_PARAMS[dataset]
        assert params["hidden_dim"] == int(config["hidden_dim"])
        assert params["vf_depth"] == int(config["vf_depth"])
        assert params["vf_width"] == int(config["vf_width"])
        assert params["depth"] == int(config["depth"])
        assert params["stepsize"] == int(float(config["stepsize"]))
        assert params["lambd"] == float(config["lambd"])
        assert params["dt0"] == float(config["dt0"])
        assert params["time_channel"] == (config["time"] == "True")
        assert base["scale"] == float(config["scale"])
        assert ENTRY["dataset_settings"][dataset]["lr"] == float(config["lr"])
        entry = {**base, **params}
        validate_model_params("LogNCDE", entry)
        C, L, K = UEA[dataset]
        model = build_model("LogNCDE", C, K, L, entry)
        assert model.stepsize <= L and model.schedule(L).n_steps > 0
    assert {k: base[k] for k in DATASET_PARAMS["EigenWorms"] if k != "dt0"} == {
        k: v for k, v in DATASET_PARAMS["EigenWorms"].items() if k != "dt0"
    }


def test_the_training_loop_adds_the_lip2_penalty(tmp_path, monkeypatch):
    """run_job (the spine's training loop) adds ``regulariser()`` to each training batch's
    loss, once per batch, and it changes what is learnt (a huge ``lambd``, same seed)."""
    from ssmbench.config import Job, job_spec
    from ssmbench.data import fetch_uea, prepare_uea
    from ssmbench.train.protocol import run_job

    fetch_uea("BasicMotions", tmp_path / "raw", archive_dir=None, download=False)
    prepared = prepare_uea("BasicMotions", tmp_path / "raw", tmp_path / "prepared")
    params = read_params(REPO / "params.yaml")
    calls = []
    real = LogNCDEClassifier.regulariser

    def counted(self):
        calls.append(self.lambd)
        return real(self)

    monkeypatch.setattr(LogNCDEClassifier, "regulariser", counted)
    records = {}
    for lambd in (0.0, 1.0e3):
        spec = job_spec(params, Job("uea", "BasicMotions", "LogNCDE", 0), "default")
        spec["model_params"].update(hidden_dim=8, vf_width=8, stepsize=10, lambd=lambd)
        spec["settings"].update(max_epochs=1, batch_size=8, lr=1e-2)
        spec["prepared_dir"] = str(prepared)
        calls.clear()
        records[lambd] = run_job(spec, tmp_path / f"l{lambd}" / "fold0.json", log=lambda _: None)
        n_train = records[lambd]["n_train"]
        assert calls == [lambd] * math.ceil(n_train / 8)  # every training batch, only those
    assert records[0.0]["test_loss"] != records[1.0e3]["test_loss"]
