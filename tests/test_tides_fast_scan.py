"""The TIDES layer's fast parallel path (``TIDESSSM.forward``: time-first chunked
``linear_scan`` with its closed-form backward, ``zoh_elements``, the factored projected
B_t / C_t, checkpointed chunks of time steps, the block's recomputed rest) against a
sequential reference written here from the layer's parameters (the formulas of tides.py's
docstring, complex arithmetic, one step at a time, every B_t and C_t formed): outputs and
gradients (parameters, inputs, steps) for every option, on irregular steps with Δ = 0 steps
and padded tails, in float64 (tight) and float32 (float32 tolerance)."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from ssmbench.models.tides import TIDESSSM, TIDESBlock, TIDESConfig, lambda_re_map
from ssmbench.models.tides_scan import discretize, linear_scan, recurrent_scan, zoh_elements

F64 = torch.float64
ID = "input_dependent"
EPS = 1e-6  # the reference's RMSNorm eps

#: one configuration per option of the layer (each alone where it can be, then combined)
OPTIONS = {
    "s5": {},
    "s5-clip-softplus": dict(clip_eigs=True, lambda_re_map="softplus"),
    "s5-conj": dict(conj_sym=True),
    "s5-bilinear": dict(discretization="bilinear"),
    "s5-bidir": dict(bidirectional=True),
    "s5-real": dict(real_lambda=True),
    "re-id": dict(lambda_re_mode=ID),
    "re-id-clip-stable": dict(lambda_re_mode=ID, clip_eigs=True, lambda_re_map="stable"),
    "re-im-id-encoder": dict(lambda_re_mode=ID, lambda_im_mode=ID, lambda_encoder_depth=1),
    "bc-rank3": dict(bc_mode=ID, rank=3),
    "bc-rank0": dict(bc_mode=ID, rank=0),
    "bc-rank-1": dict(bc_mode=ID, rank=-1),
    "tides-uea": dict(lambda_re_mode=ID, bc_mode=ID, rank=3),
    "tides-uea-no-norm": dict(lambda_re_mode=ID, bc_mode=ID, rank=3, proj_norm=False),
    "tides-conj": dict(lambda_re_mode=ID, bc_mode=ID, rank=2, conj_sym=True),
    "tides-bidir": dict(lambda_re_mode=ID, bc_mode=ID, rank=3, bidirectional=True),
    "tides-bidir-conj-rank-1": dict(
        lambda_re_mode=ID, bc_mode=ID, rank=-1, bidirectional=True, conj_sym=True,
        lambda_re_map="exp",
    ),
    "tides-bilinear": dict(lambda_re_mode=ID, bc_mode=ID, rank=3, discretization="bilinear"),
    "tides-real-rank2": dict(lambda_re_mode=ID, bc_mode=ID, rank=2, real_lambda=True),
    "tides-real-rank-1": dict(
        lambda_re_mode=ID, bc_mode=ID, rank=-1, real_lambda=True, proj_norm=False
    ),
    "tides-all-id-rank0-conj": dict(
        lambda_re_mode=ID, lambda_im_mode=ID, bc_mode=ID, rank=0, conj_sym=True
    ),
    "mambas": dict(bc_mode=ID, rank=-1, step_mode=ID, proj_norm=False),
    "mambas-conj-bidir": dict(
        bc_mode=ID, rank=-1, step_mode=ID, proj_norm=False, conj_sym=True, bidirectional=True
    ),
    "mambas-real-bilinear": dict(
        bc_mode=ID, rank=-1, step_mode=ID, proj_norm=False, real_lambda=True,
        discretization="bilinear",
    ),
}  # fmt: skip

H, P, BLOCKS = 5, 8, 2


def _layer(options: dict, seed: int = 0) -> TIDESSSM:
    """Every parameter moved off its initial value (zero-initialised projectors would hide
    what the input does); Re Λ kept negative where the map lets it go positive."""
    torch.manual_seed(seed)
    layer = TIDESSSM(H, P, BLOCKS, **options).double()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in layer.named_parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
            if name == "Lambda_re" and layer.lambda_re_map == "standard":
                p.copy_(-p.abs() - 0.05)
    return layer


def _inputs(batch: int, L: int, dtype=F64, seed: int = 1):
    """u (B, L, H); positive irregular steps with Δ = 0 at some steps (the first and last
    included) and a padded tail (row 0: Δ = 0 from L/2 on, its inputs zero)."""
    gen = torch.Generator().manual_seed(seed)
    u = torch.randn(batch, L, H, generator=gen, dtype=dtype)
    steps = 2 * torch.rand(batch, L, generator=gen, dtype=dtype)
    steps[:, [0, 3, 4, L - 1]] = 0.0
    steps[0, L // 2 :] = 0.0
    u[0, L // 2 :] = 0.0
    return u, steps


# --- the reference ------------------------------------------------------------------------


def _rms_norm(z: torch.Tensor, weight: torch.Tensor, dim: int) -> torch.Tensor:
    """z complex or real: z / sqrt(mean |z|² over ``dim`` + eps) * weight (along ``dim``)."""
    rms = torch.sqrt(z.abs().square().mean(dim=dim, keepdim=True) + EPS)
    shape = [1] * z.dim()
    shape[dim] = -1
    return z / rms * weight.reshape(shape)


def _complex(z: torch.Tensor, c: int) -> torch.Tensor:
    """(..., c) real pairs -> complex (real for c = 1)."""
    return torch.complex(z[..., 0], z[..., 1]) if c == 2 else z[..., 0]


def reference(layer: TIDESSSM, u: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
    """The layer one time step at a time, from its parameters: (B, L, H), (B, L) -> (B, L, H).

    Per step t: Λ_t, Δ_t, B_t, C_t (formed, (S, H) and (H, dirs S)), Λ̄_t = exp(Λ_t Δ_t) and
    B̄_t = (Λ̄_t - 1)/Λ_t B_t (ZOH) or the bilinear pair, h_t = Λ̄_t h_{t-1} + B̄_t u_t (and
    the reverse direction), y_t = Re(C_t h_t) (2 Re for conj_sym with everything LTI) + D u_t.
    """
    Bsz, L, _ = u.shape
    S, c, dirs, n = layer.S, layer.c, layer.dirs, layer.n_modes
    expand = layer.expand_conj

    def static(values: torch.Tensor, conj_axis: int) -> torch.Tensor:
        values = _complex(values, c)
        if not expand:
            return values
        return torch.cat([values, values.conj()], dim=conj_axis)

    a_steps, b_steps, C_steps = [], [], []
    for t in range(L):
        u_t, dt = u[:, t], steps[:, t]  # (B, H), (B,)
        # Λ_t
        if layer.lambda_re_mode == "lti":
            re = lambda_re_map(layer.Lambda_re, layer.lambda_re_map, layer.clip_eigs)
            re = torch.cat([re, re]) if expand else re
            re = re.expand(Bsz, S)
        else:
            raw = layer.lambda_re_proj(u_t)
            if layer.lambda_re_norm is not None:
                raw = _rms_norm(raw, layer.lambda_re_norm.weight, -1)
            re = lambda_re_map(raw, layer.lambda_re_map, layer.clip_eigs)
        if layer.real:
            lam = re
        else:
            if layer.lambda_im_mode == "lti":
                im = layer.Lambda_im
                im = torch.cat([im, -im]) if expand else im
                im = im.expand(Bsz, S)
            else:
                im = layer.lambda_im_proj(u_t)
                if layer.lambda_im_norm is not None:
                    im = _rms_norm(im, layer.lambda_im_norm.weight, -1)
            lam = torch.complex(re, im)
        # Δ_t
        if layer.step_mode == "input_dependent":
            delta = F.softplus(layer.step_proj(torch.cat([u_t, dt[:, None]], dim=-1)))
        else:
            scale = torch.exp(layer.log_step)
            scale = torch.cat([scale, scale]) if expand else scale
            delta = dt[:, None] * scale  # (B, S)
        # B_t (B, S, H), C_t (B, H, dirs S)
        if layer.bc_mode == "input_dependent" and layer.rank >= 0:
            Bt = _complex(layer.b_proj(u_t).reshape(Bsz, S, H, c), c)
            Ct = _complex(layer.c_proj(u_t).reshape(Bsz, H, dirs * S, c), c)
            if layer.b_norm is not None:
                Bt = _rms_norm(Bt, layer.b_norm.weight, 1)  # each column over the states
                Ct = _rms_norm(Ct, layer.c_norm.weight, 2)  # each row over the states
        else:
            B0 = static(layer.B, 0)  # (S, H): [B; conj B] when expanded
            C0 = _complex(layer.C, c)  # (H, dirs n): per direction [C, conj C] when expanded
            if expand:
                C0 = torch.cat([p for d in C0.split(n, dim=1) for p in (d, d.conj())], dim=1)
            Bt, Ct = B0.expand(Bsz, S, H), C0.expand(Bsz, H, dirs * S)
            if layer.bc_mode == "input_dependent":  # diag(s_t) B, C diag(s'_t)
                sb = _complex(layer.b_proj(u_t).reshape(Bsz, S, c), c)
                sc = _complex(layer.c_proj(u_t).reshape(Bsz, dirs * S, c), c)
                if layer.b_norm is not None:
                    sb = _rms_norm(sb, layer.b_norm.weight, 1)
                    sc = _rms_norm(sc, layer.c_norm.weight, 1)
                Bt, Ct = sb[:, :, None] * Bt, Ct * sc[:, None, :]
        # discretisation, written out (not the module's ``discretize``)
        if layer.discretization == "zoh":
            a = torch.exp(lam * delta)
            gain = (a - 1) / lam
        else:
            a = (1 + lam * delta / 2) / (1 - lam * delta / 2)
            gain = delta / (1 - lam * delta / 2)
        bu = torch.einsum("bsh,bh->bs", Bt, u_t.to(Bt.dtype))
        a_steps.append(a)
        b_steps.append(gain * bu)
        C_steps.append(Ct)
    # the recurrence, forwards (and backwards), then the readout
    states = []
    for order in [range(L), range(L - 1, -1, -1)][:dirs]:
        h, out = torch.zeros_like(b_steps[0]), [None] * L
        for t in order:
            h = a_steps[t] * h + b_steps[t]
            out[t] = h
        states.append(out)
    ys = []
    for t in range(L):
        x = torch.cat([s[t] for s in states], dim=-1)  # (B, dirs S)
        y = torch.einsum("bhs,bs->bh", C_steps[t], x)
        y = y.real if torch.is_complex(y) else y
        ys.append(layer.out_scale * y + layer.D * u[:, t])
    return torch.stack(ys, dim=1)


def _run(fn, layer, u0, steps0, weight):
    """fn(layer, u, steps) -> outputs and the gradients of <weight, outputs> with respect to
    the parameters, u and the steps."""
    layer.zero_grad(set_to_none=True)
    u, steps = u0.clone().requires_grad_(), steps0.clone().requires_grad_()
    y = fn(layer, u, steps)
    (y * weight).sum().backward()
    grads = {name: p.grad for name, p in layer.named_parameters()}
    grads.update(u=u.grad, steps=steps.grad)
    return y.detach(), grads


def _compare(got, want, rtol, atol):
    (y, g), (y_ref, g_ref) = got, want
    torch.testing.assert_close(y, y_ref.to(y.dtype), rtol=rtol, atol=atol)
    assert g.keys() == g_ref.keys()
    for name in g:
        assert g[name] is not None and g_ref[name] is not None, name
        torch.testing.assert_close(
            g[name], g_ref[name].to(g[name].dtype), rtol=rtol, atol=atol, msg=name
        )


def _fast(layer, u, steps):
    return layer(u, steps)


@pytest.mark.parametrize("name", list(OPTIONS))
def test_fast_path_equals_the_reference_float64(name):
    """Whole sequence (one chunk), and 3 checkpointed chunks of 7, 7 and 5 steps, whose
    states carry over: the reference's outputs and gradients to float64 rounding."""
    layer = _layer(OPTIONS[name])
    batch, L = 3, 19
    u, steps = _inputs(batch, L)
    weight = torch.randn(batch, L, H, generator=torch.Generator().manual_seed(2), dtype=F64)
    want = _run(reference, layer, u, steps, weight)
    for chunk in (None, 7):
        layer.chunk_steps = chunk
        _compare(_run(_fast, layer, u, steps, weight), want, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("name", ["s5", "tides-uea", "tides-bidir", "mambas", "tides-conj"])
def test_fast_path_float32_within_float32_tolerance(name):
    """float32 fast path against the float64 reference, L = 300 (the scan's whole chunks
    and remainder, several chunks of 64 steps)."""
    layer64 = _layer(OPTIONS[name])
    layer32 = copy.deepcopy(layer64).float()
    batch, L = 2, 300
    u, steps = _inputs(batch, L)
    steps = steps * 0.2  # Re Λ Δ of a few tenths: states of O(1) over 300 steps
    weight = torch.randn(batch, L, H, generator=torch.Generator().manual_seed(2), dtype=F64)
    want = _run(reference, layer64, u, steps, weight)
    for chunk in (None, 64):
        layer32.chunk_steps = chunk
        got = _run(_fast, layer32, u.float(), steps.float(), weight.float())
        _compare(got, want, rtol=2e-4, atol=2e-4)


def test_a_zero_step_carries_the_state_on_the_fast_path():
    """Δ = 0 gives Λ̄ = 1 and B̄ = 0 exactly: the padded tail's states equal the state at
    the last real step, bit for bit."""
    layer = _layer(OPTIONS["tides-uea"])
    u, steps = _inputs(2, 20)
    u_t, steps_t = u.transpose(0, 1), steps.transpose(0, 1)
    with torch.no_grad():
        a, b = layer._elements(u_t, steps_t)
        x = linear_scan(a, b)
    zero = steps_t == 0
    assert torch.equal(a[zero], torch.ones_like(a[zero]))
    assert torch.equal(b[zero], torch.zeros_like(b[zero]))
    tail = x[10:, 0]  # row 0: Δ = 0 from step 10 on
    assert torch.equal(tail, x[9:10, 0].expand_as(tail))


def test_parameters_get_gradients_when_the_input_does_not_need_one():
    """Chunked, with u not requiring a gradient (the non-reentrant checkpoint): the same
    parameter gradients as the whole sequence."""
    layer = _layer(OPTIONS["tides-uea"])
    u, steps = _inputs(2, 23)
    grads = []
    for chunk in (None, 5):
        layer.chunk_steps = chunk
        layer.zero_grad(set_to_none=True)
        layer(u, steps).square().sum().backward()
        grads.append([p.grad.clone() for p in layer.parameters()])
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-11, atol=1e-12)


def test_block_recomputes_its_rest_with_the_same_dropout():
    """A block whose layer runs in chunks recomputes GELU, dropout and GLU in the backward
    pass: in training mode (dropout 0.3, the same seed) the outputs and gradients equal
    those of the block kept whole."""
    torch.manual_seed(0)
    config = TIDESConfig(d_model=H, dropout=0.3, ff_mult=1.0, ssm_size=P, ssm_blocks=BLOCKS,
                         lambda_re_mode=ID, bc_mode=ID, rank=3)  # fmt: skip
    block = TIDESBlock(config).double().train()
    x0, steps = _inputs(3, 21)
    results = []
    for chunk in (None, 6):
        block.ssm.chunk_steps = chunk
        assert block.ssm.chunked(3, 21) == (chunk is not None)
        block.zero_grad(set_to_none=True)
        x = x0.clone().requires_grad_()
        torch.manual_seed(5)
        y = block(x, steps)
        y.square().sum().backward()
        results.append((y.detach(), [p.grad for p in block.parameters()] + [x.grad]))
    (y1, g1), (y2, g2) = results
    torch.testing.assert_close(y1, y2, rtol=1e-12, atol=1e-12)  # the same dropout masks
    for a, b in zip(g1, g2, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-11, atol=1e-12)


# --- the parts -----------------------------------------------------------------------------


@pytest.mark.parametrize("L", [1, 2, 3, 7, 8, 9, 37, 128, 301])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("kind", ["complex", "real"])
@pytest.mark.parametrize("with_h0", [False, True])
def test_linear_scan_values_and_gradients(L, reverse, kind, with_h0):
    """Every chunking of the scan (L < 2T step by step; whole chunks, with and without a
    remainder), both directions, an initial state: values and gradients of the loop's."""
    gen = torch.Generator().manual_seed(L)
    dtype = torch.complex128 if kind == "complex" else F64
    radius = torch.rand(3, L, 4, generator=gen, dtype=F64)  # |a| <= 1, some a = 1 below
    if kind == "complex":
        a0 = torch.polar(radius, torch.randn(3, L, 4, generator=gen, dtype=F64))
    else:
        a0 = radius * torch.sign(torch.randn(3, L, 4, generator=gen, dtype=F64))
    a0[:, :: max(L // 3, 1)] = 1.0  # Δ = 0 steps
    b0 = torch.randn(3, L, 4, generator=gen, dtype=dtype)
    h00 = torch.randn(3, 4, generator=gen, dtype=dtype) if with_h0 else None
    weight = torch.randn(3, L, 4, generator=gen, dtype=dtype)
    results = []
    for fast in (True, False):
        a, b = a0.clone().requires_grad_(), b0.clone().requires_grad_()
        h0 = h00.clone().requires_grad_() if with_h0 else None
        if fast:  # time first
            h = linear_scan(a.transpose(0, 1), b.transpose(0, 1), h0, reverse).transpose(0, 1)
        else:
            h = recurrent_scan(a, b, reverse=reverse, h0=h0)
        (h * weight.conj()).real.sum().backward()
        grads = [a.grad, b.grad] + ([h0.grad] if with_h0 else [])
        results.append((h.detach(), grads))
    (h, g), (h_ref, g_ref) = results
    torch.testing.assert_close(h, h_ref, rtol=1e-12, atol=1e-12)
    for x, y in zip(g, g_ref, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", ["static", "input-dependent", "real"])
def test_zoh_elements_values_and_gradients(shape):
    """(exp(ΛΔ), expm1(ΛΔ)/Λ · Bu) against ``discretize`` with autograd: Λ static (S,) or
    per step, real Λ; Δ = 0 at some steps gives exactly (1, 0)."""
    gen = torch.Generator().manual_seed(3)
    S = 6
    lead = (4, 3) if shape != "static" else ()
    re0 = -torch.rand(*lead, S, generator=gen, dtype=F64) - 0.1
    re0[..., 0] = -30.0  # a strongly decaying mode
    im0 = None if shape == "real" else 3 * torch.randn(S, generator=gen, dtype=F64)
    delta0 = torch.rand(4, 3, S, generator=gen, dtype=F64)
    delta0[0] = 0.0
    delta0[1, 0, :2] = 1e-9  # |ΛΔ| small: expm1, not exp - 1
    bu_dtype = F64 if shape == "real" else torch.complex128
    bu0 = torch.randn(4, 3, S, generator=gen, dtype=bu_dtype)
    ga = torch.randn(4, 3, S, generator=gen, dtype=bu_dtype)
    gb = torch.randn(4, 3, S, generator=gen, dtype=bu_dtype)
    results = []
    for fast in (True, False):
        re, delta, bu = (t.clone().requires_grad_() for t in (re0, delta0, bu0))
        im = None if im0 is None else im0.clone().requires_grad_()
        if fast:
            a, b = zoh_elements(re, im, delta, bu)
        else:
            lam = re if im is None else torch.complex(*torch.broadcast_tensors(re, im))
            a, gain = discretize(lam, delta, "zoh")
            b = gain * bu
        ((a * ga.conj()).real.sum() + (b * gb.conj()).real.sum()).backward()
        grads = [re.grad, delta.grad, bu.grad] + ([] if im is None else [im.grad])
        results.append((a.detach(), b.detach(), grads))
    (a, b, g), (a_ref, b_ref, g_ref) = results
    torch.testing.assert_close(a, a_ref, rtol=1e-13, atol=1e-15)
    torch.testing.assert_close(b, b_ref, rtol=1e-13, atol=1e-15)
    for x, y in zip(g, g_ref, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-14)
    assert torch.equal(a[0], torch.ones_like(a[0])) and torch.equal(b[0], torch.zeros_like(b[0]))
