"""The TIDES family's fused CPU kernel (``tides_cpu_scan.zoh_scan``: the zero-order hold
and the recurrence in one numba kernel) against the reference path (``tides_scan``'s
``zoh_elements`` and ``linear_scan``): values and every gradient (Re Λ, Im Λ, Δ, Bu, h0)
for real and complex states, static and per-step Λ, both directions, an initial state, and
ragged lengths (L = 1, L not a multiple of any chunk), to float64 rounding and within
float32 tolerance; float64 ``gradcheck``; the fallback to the reference (one log line);
bitwise determinism (repeated calls, one and two threads); the layer over every option of
tests/test_tides_fast_scan.py; TIDES, S5 and MambaS as a run builds them, a training step
on the fused path against the reference path."""

from __future__ import annotations

import copy
import itertools
import logging

import pytest
import torch
import torch.nn.functional as F
from conftest import REPO
from test_tides_fast_scan import OPTIONS, _inputs, _layer

from ssmbench.config import model_entry
from ssmbench.models import build_model, numba_runtime, tides_cpu_scan
from ssmbench.models.scan_paths import CHUNKED_LINEAR, FUSED_TIDES_CPU, scan_of
from ssmbench.models.tides import TIDESSSM
from ssmbench.models.tides_cpu_scan import unsupported, zoh_scan
from ssmbench.models.tides_scan import linear_scan, zoh_elements
from ssmbench.params_file import read_params

pytestmark = pytest.mark.skipif(
    numba_runtime.numba_missing() is not None, reason="the fused kernel needs numba"
)

F64 = torch.float64


def reference(re, im, delta, bu, h0=None, reverse=False, both=False):
    """zoh_elements, then linear_scan (both: the two directions concatenated)."""
    a, b = zoh_elements(re, im, delta, bu)
    if both:
        return torch.cat([linear_scan(a, b), linear_scan(a, b, reverse=True)], dim=-1)
    return linear_scan(a, b, h0, reverse)


def _operands(T, B, S, real, re_steps, im_steps, with_h0, dtype=F64, seed=0):
    """Re Λ < 0 (one strongly decaying state), Im Λ of a few units, Δ >= 0 with Δ = 0 at
    the first and last step, Bu and h0 of the states' field; static parts (S,)."""
    gen = torch.Generator().manual_seed(seed)
    full = (T, B, S)
    re = -torch.rand(full if re_steps else (S,), generator=gen, dtype=F64) - 0.1
    re[..., 0] = -20.0
    im = None if real else 3 * torch.randn(full if im_steps else (S,), generator=gen, dtype=F64)
    delta = torch.rand(T, B, S, generator=gen, dtype=F64)
    delta[[0, -1]] = 0.0
    field = F64 if real else torch.complex128
    bu = torch.randn(T, B, S, generator=gen, dtype=field)
    h0 = torch.randn(B, S, generator=gen, dtype=field) if with_h0 else None
    parts = [re, im, delta, bu, h0]
    return [None if p is None else p.to(dtype if p.is_floating_point() else dtype.to_complex())
            for p in parts]  # fmt: skip


def _values_and_grads(fn, parts, weight_seed=5, **kw):
    """fn's states and the gradients of Re<conj(w), h> with respect to every operand."""
    leaves = [None if p is None else p.clone().requires_grad_() for p in parts]
    h = fn(*leaves, **kw)
    gen = torch.Generator().manual_seed(weight_seed)
    w = torch.randn(h.shape, generator=gen, dtype=F64).to(h.dtype)
    if h.is_complex():
        w = w + 1j * torch.randn(h.shape, generator=gen, dtype=F64).to(h.dtype)
    (h * w.conj()).real.sum().backward()
    return [h.detach()] + [None if p is None else p.grad for p in leaves]


def _close(got, want, rtol, atol):
    names = ["h", "re", "im", "delta", "bu", "h0"]
    for name, x, y in zip(names, got, want, strict=True):
        assert (x is None) == (y is None), name
        if x is not None:
            torch.testing.assert_close(x, y.to(x.dtype), rtol=rtol, atol=atol, msg=name)


DIRECTIONS = {
    "forward": {},
    "reverse": {"reverse": True},
    "both": {"both": True},
    "forward-h0": {},
    "reverse-h0": {"reverse": True},
}


@pytest.mark.parametrize("direction", list(DIRECTIONS))
@pytest.mark.parametrize("field", ["complex", "real"])
@pytest.mark.parametrize("T", [1, 2, 13, 37])
def test_equals_the_reference_float64(direction, field, T):
    """Every combination of static and per-step Re Λ / Im Λ, B = 1 and 3: states and
    gradients to float64 rounding (L = 37: 4 chunks of 9 and a step left in the
    reference's scan; 13: 2 chunks of 3 and 7 left; 1 and 2 step by step)."""
    real = field == "real"
    for B, re_steps, im_steps in itertools.product((1, 3), (False, True), (False, True)):
        if real and im_steps:
            continue
        parts = _operands(T, B, 5, real, re_steps, im_steps, direction.endswith("h0"), seed=T)
        kw = DIRECTIONS[direction]
        got = _values_and_grads(zoh_scan, parts, **kw)
        want = _values_and_grads(reference, parts, **kw)
        _close(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("direction", ["forward-h0", "both"])
@pytest.mark.parametrize("field", ["complex", "real"])
def test_float32_within_float32_tolerance(direction, field):
    """float32, L = 300, 64 states (several vector widths), per-step Re Λ and static Im Λ
    as TIDES runs: the float64 reference's states and gradients within float32 tolerance,
    as close as the float32 reference path is."""
    real = field == "real"
    parts64 = _operands(300, 4, 64, real, True, False, direction == "forward-h0")
    parts64[2] = parts64[2] * 0.2  # Re Λ Δ of a few tenths: states of O(1)
    parts32 = [None if p is None else p.to(torch.complex64 if p.is_complex() else torch.float32)
               for p in parts64]  # fmt: skip
    kw = DIRECTIONS[direction]
    want = _values_and_grads(reference, parts64, **kw)
    _close(_values_and_grads(zoh_scan, parts32, **kw), want, rtol=2e-4, atol=2e-4)
    _close(_values_and_grads(reference, parts32, **kw), want, rtol=2e-4, atol=2e-4)


def test_exp_expm1_sin_cos_to_float64_rounding():
    """The kernels' polynomials against numpy's libm: within 2 ulp of float64 (relative;
    sin and cos absolute) over small, moderate and large arguments, and the limits."""
    import numpy as np
    from numba import njit

    @njit(cache=False)
    def evaluate(x):
        out = np.empty((4, x.size))
        for i in range(x.size):
            out[0, i], out[1, i] = tides_cpu_scan._exp_expm1(x[i])
            out[2, i], out[3, i] = tides_cpu_scan._sincos(x[i])
        return out

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 3, 20000), rng.normal(0, 1e-7, 2000),
                        np.linspace(-700, 700, 20001), [0.0, 1e-300, -1e-300]])  # fmt: skip
    e, em1, sin, cos = evaluate(x)
    ulp = 2.0**-52
    assert np.all(np.abs(e - np.exp(x)) <= 2 * ulp * np.exp(x))
    assert np.all(np.abs(em1 - np.expm1(x)) <= 2 * ulp * np.abs(np.expm1(x)))
    assert np.max(np.abs(sin - np.sin(x))) <= 2 * ulp and np.max(np.abs(cos - np.cos(x))) <= 2 * ulp
    small = np.abs(x) < 1  # relative accuracy where sin x ~ x
    assert np.all(np.abs(sin[small] - np.sin(x[small])) <= 2 * ulp * np.abs(np.sin(x[small])))
    limits = evaluate(np.array([-800.0, 800.0, np.nan]))
    assert limits[0, 0] == 0 and limits[1, 0] == -1 and np.isinf(limits[0, 1])
    assert np.isnan(limits[:, 2]).all()


def test_zero_steps_carry_the_state_exactly():
    """Δ = 0 gives a = 1 and b = 0 exactly: the states after such steps equal the state
    before them, bit for bit (padding steps), in float32."""
    re, im, delta, bu, h0 = _operands(12, 2, 8, False, True, False, True, dtype=torch.float32)
    delta[5:] = 0.0
    with torch.no_grad():
        h = zoh_scan(re, im, delta, bu, h0)
    assert torch.equal(h[5:], h[4:5].expand_as(h[5:]))


@pytest.mark.parametrize("field", ["complex", "real"])
@pytest.mark.parametrize("direction", list(DIRECTIONS))
def test_gradcheck(field, direction):
    """float64 finite differences at T 4, B 2, S 3: every input, Λ per step and static."""
    real = field == "real"
    kw = DIRECTIONS[direction]
    for re_steps in (False, True):
        parts = _operands(4, 2, 3, real, re_steps, not re_steps and not real,
                          direction.endswith("h0"), seed=7)  # fmt: skip
        parts[2] = parts[2] + 0.1  # away from Δ = 0 (no kink there, but no margin either)
        leaves = [None if p is None else p.clone().requires_grad_() for p in parts]

        def fn(*xs):
            return zoh_scan(*xs, **kw)

        assert torch.autograd.gradcheck(fn, leaves, eps=1e-6, atol=1e-7, rtol=1e-5)


def test_deterministic():
    """Two calls, one thread and two: the same bits for the states and every gradient
    (each lane's arithmetic is fixed; a static Λ's sum runs in row order)."""
    parts = _operands(50, 6, 16, False, False, False, False, dtype=torch.float32)
    results = []
    before = torch.get_num_threads()
    try:
        for threads in (1, 1, 2):
            torch.set_num_threads(threads)
            results.append(_values_and_grads(zoh_scan, parts, both=True))
    finally:
        torch.set_num_threads(before)
    for other in results[1:]:
        for x, y in zip(results[0], other, strict=True):
            assert (x is None and y is None) or torch.equal(x, y)


def test_torch_keeps_its_thread_count():
    """A call leaves torch's intra-op thread count as it was (numba's OpenMP layer sets the
    count of the same libgomp when it restores its own)."""
    parts = _operands(3, 2, 4, False, False, False, False, dtype=torch.float32)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        _values_and_grads(zoh_scan, parts)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_unsupported_names_what_the_kernel_does_not_take():
    re, im, delta, bu, h0 = _operands(3, 2, 4, False, False, False, True, dtype=torch.float32)
    assert unsupported(re, im, delta, bu, h0) is None
    assert "bfloat16" in unsupported(re.bfloat16(), None, delta.bfloat16(), bu.real.bfloat16())
    assert "mixed dtypes" in unsupported(re.double(), im, delta, bu)
    assert "h0" in unsupported(re, im, delta, bu, h0, both=True)
    assert "neither" in unsupported(re[:2], im, delta, bu)
    assert "not (T, B, S)" in unsupported(re, im, delta[0], bu[0])
    with pytest.raises(ValueError, match="cannot take"):
        zoh_scan(re, im, delta[0], bu[0])


def _scan_records(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "ssmbench.kernels"]


def test_bfloat16_falls_back_to_the_reference_with_one_log_line(caplog, monkeypatch):
    """A layer in bfloat16 (real Λ: its reference path runs in bfloat16): the fused
    kernel does not take it; the reference path's output, one log line for two passes."""
    monkeypatch.setattr(numba_runtime, "_said", set())
    layer = _layer(dict(real_lambda=True, lambda_re_mode="input_dependent")).bfloat16()
    u, steps = _inputs(2, 9, dtype=torch.bfloat16)
    with caplog.at_level(logging.WARNING, logger="ssmbench.kernels"), torch.no_grad():
        y = layer(u, steps)
        assert layer.scan_path == CHUNKED_LINEAR
        layer(u, steps)
        layer.use_fused = False
        y_ref = layer(u, steps)
    assert torch.equal(y, y_ref)
    lines = _scan_records(caplog)
    assert len(lines) == 1 and "bfloat16" in lines[0], lines


def test_numba_missing_falls_back(caplog, monkeypatch):
    monkeypatch.setattr(numba_runtime, "_said", set())
    monkeypatch.setattr(tides_cpu_scan, "numba_missing", lambda: "numba does not import (test)")
    layer = _layer(OPTIONS["tides-uea"])
    u, steps = _inputs(2, 9)
    with caplog.at_level(logging.WARNING, logger="ssmbench.kernels"), torch.no_grad():
        y = layer(u, steps)
        layer.use_fused = False
        y_ref = layer(u, steps)
    assert torch.equal(y, y_ref)
    lines = _scan_records(caplog)
    assert len(lines) == 1 and "numba does not import (test)" in lines[0], lines


# --- the layer and the models --------------------------------------------------------------


def _layer_run(layer, u0, steps0, weight):
    layer.zero_grad(set_to_none=True)
    u, steps = u0.clone().requires_grad_(), steps0.clone().requires_grad_()
    y = layer(u, steps)
    (y * weight).sum().backward()
    grads = {name: p.grad for name, p in layer.named_parameters()}
    grads.update(u=u.grad, steps=steps.grad)
    return y.detach(), grads, layer.scan_path


@pytest.mark.parametrize("name", list(OPTIONS))
def test_layer_fused_equals_reference_path(name):
    """Every option of the layer (TIDES, S5, MambaS and their parts; bidirectional; real Λ;
    bilinear, which keeps the reference path), float32, L = 1 and 23 (whole and in
    checkpointed chunks of 5: the state carried between them): the fused path's outputs
    and gradients within float32 tolerance of the reference path's."""
    layer = _layer(OPTIONS[name]).float()
    zoh = layer.discretization == "zoh"
    for L, chunk in ((1, None), (23, None), (23, 5)):
        u, steps = _inputs(3, L, dtype=torch.float32) if L > 4 else (
            torch.randn(3, L, 5), torch.rand(3, L))  # fmt: skip
        weight = torch.randn(3, L, 5, generator=torch.Generator().manual_seed(L))
        layer.chunk_steps = chunk
        layer.use_fused = True
        y, g, path = _layer_run(layer, u, steps, weight)
        assert path == (FUSED_TIDES_CPU if zoh else CHUNKED_LINEAR)
        layer.use_fused = False
        y_ref, g_ref, path_ref = _layer_run(layer, u, steps, weight)
        assert path_ref == CHUNKED_LINEAR
        torch.testing.assert_close(y, y_ref, rtol=1e-4, atol=1e-5)
        for key in g_ref:
            torch.testing.assert_close(g[key], g_ref[key], rtol=1e-4, atol=1e-4, msg=key)


def _use_fused(model, fused: bool):
    for module in model.modules():
        if isinstance(module, TIDESSSM):
            module.use_fused = fused
    return model


@pytest.mark.parametrize("name", ["TIDES", "S5", "MambaS", "S5-logncde", "TIDES-drop"])
def test_model_training_step_fused_equals_reference(name):
    """The params.yaml entry as a run builds it (TIDES-drop: bidirectional, stable map,
    clipped; S5-logncde: conj_sym, time channel), a training step (forward, cross-entropy,
    backward, Adam's step) on the fused path and on the reference path from the same weights:
    the same loss and gradients within float32 tolerance, the fused path named."""
    B, C, K, L = 4, 3, 3, 29
    torch.manual_seed(0)
    model = build_model(name, C, K, L, model_entry(read_params(REPO / "params.yaml"), name))
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(B, C, L, generator=gen)
    steps = 0.5 + torch.rand(B, L, generator=gen)
    y = torch.randint(0, K, (B,), generator=gen)
    results = []
    for fused in (True, False):
        m = _use_fused(copy.deepcopy(model), fused).train()
        optimizer = torch.optim.Adam(m.parameters(), lr=1e-3)
        torch.manual_seed(2)  # the same dropout masks
        loss = F.cross_entropy(m(x, steps), y)
        loss.backward()
        grads = {n: p.grad.clone() for n, p in m.named_parameters() if p.grad is not None}
        optimizer.step()
        results.append((loss.item(), grads, scan_of(m)))
    (loss, grads, path), (loss_ref, grads_ref, path_ref) = results
    assert path == FUSED_TIDES_CPU and path_ref == CHUNKED_LINEAR
    assert loss == pytest.approx(loss_ref, rel=1e-5, abs=1e-6)
    assert grads.keys() == grads_ref.keys()
    for key in grads_ref:
        torch.testing.assert_close(grads[key], grads_ref[key], rtol=1e-3, atol=2e-5, msg=key)
