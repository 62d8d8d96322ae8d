"""TIDES, S5 and MambaS: time-aware diagonal state-space classifiers (the TIDES paper's family).

The scans and the discretisation are in ``tides_scan.py``.

Sources
-------
* TIDES reference repository, https://github.com/TaylanSoydan/TIDES at commit 4b51adc (MIT):
  ``tides/tides.py`` (``TIDESSSM``, ``TIDESBlock``, ``TIDES``, ``TIDESClassifier``,
  ``step_scale_from_indices``), ``tides/tides_collate.py`` (the per-step Δ of irregular
  data), ``fading_flash/tides_toy_paper_figures.py`` (the S5 / MambaS / TIDES toy models),
  ``uea/main.py`` (the UEA settings). Facts were taken from it (parameterisations,
  initialisations, hyperparameters, cited by line below); the code is written here.
* Smith, Warrington & Linderman (2023), "Simplified State Space Layers for Sequence
  Modeling" (S5): the block-diagonal HiPPO-LegS (DPLR) initialisation, conjugate symmetry.

Notation: B batch, C input channels, L length, K outputs, H = ``d_model``,
P = ``ssm_size`` (HiPPO size), n = P/2 with ``conj_sym`` else P (the parameterised modes),
S the states per direction (n, or P when ``conj_sym`` and anything is input-dependent),
r = ``rank``, c = 2 for complex numbers stored as (re, im), 1 with ``real_lambda``.

Classifier (x: (B, C, L) float32, steps: (B, L) the physical step Δ_t of each step)
----------------------------------------------------------------------------------
    u = GluEncoder(x)   [x = x + GLU(x)] * encoder_depth at width C, then Linear(C, H)
    for each of n_layers (``TIDESBlock``, tides.py:886-970):
        z = BatchNorm1d(H, affine=False)(u)   over B and L
        z = Dropout(GELU(TIDESSSM(z, steps)))
        u = u + Dropout(ExpandedGLU(z))       w3(w1 z * sigmoid(w2 z)), inner int(H ff_mult)
    logits = Linear(H, K)(mean over L of u)   (B, K); ``per_step``: Linear(H, K)(u) (B, L, K)

TIDESSSM, per step t and state s (tides.py:428-879):
    Λ_t = map(RMSNorm(GluEncoder_re(z_t))) + i RMSNorm(GluEncoder_im(z_t))   or static Λ
    Δ_t = Δt_t * exp(log_step)             (MambaS: softplus(Linear(H + 1, S)([z_t, Δt_t])))
    Λ̄_t = exp(Λ_t Δ_t),  B̄_t = (Λ̄_t - 1)/Λ_t B_t                 (ZOH; bilinear optional)
    h_t = Λ̄_t h_{t-1} + B̄_t z_t;  y_t = Re(C_t h_t) (2 Re with conj_sym LTI) + D z_t
  B_t, C_t static (``lti``) or from the input (``input_dependent``):
    rank > 0:  B_t = ComplexRMSNorm(Linear(r, S H c)(Linear(H, r)(z_t))), per input column
               over the S states; C_t alike (H, S) per output row; rank 0: Linear(H, S H c);
    rank < 0:  B_t = diag(ComplexRMSNorm(Linear(H, S c)(z_t))) B (one complex scale per
               state times the static B), C_t alike.
  Bidirectional: a second, reverse scan of the same (Λ̄_t, B̄_t z_t), h'_t = Λ̄_t h'_{t+1} +
  B̄_t z_t, read by its own C (the two directions' states concatenated, C (H, 2S)).

Facts taken from the reference (tides/tides.py unless named)
-------------------------------------------------------------
* HiPPO-LegS DPLR (125-144): A_nk = -sqrt(2n+1) sqrt(2k+1) (n > k), -(n+1) (n = k);
  S = A + p p^T with p_n = sqrt(n + 1/2); Re Λ = mean(diag S) (= -1/2), Im Λ and V from
  eigh(-i S). Blocks (484-504): each of ``ssm_blocks`` blocks has P / ssm_blocks modes, V
  and V^H block-diagonal, Λ tiled; ``conj_sym`` keeps the first half of each block's modes.
* B = V^H B_raw, B_raw ~ N(0, 1/P) (P, H) (152-169, 521); C = C_raw V with C_raw complex,
  re and im ~ N(0, 1/P) (H, P) (172-190, 525); a second C for the backward direction
  (526-530); D ~ N(0, 1) (H,) (533); log_step ~ U[log dt_min, log dt_max] (n,) (147, 536).
* Re Λ maps (507-515, 653-679): ``standard`` x, ``exp`` -exp(x), ``stable`` -1/(x² + 0.5),
  ``softplus`` -softplus(x), initialised at the map's inverse of HiPPO's Re Λ; ``clip_eigs``
  clamps Re Λ <= -1e-4 after the map.
* Projectors: Λ's are GluEncoder(H, S, lambda_encoder_depth) (546-572), B/C's LowRankHead
  (402-421, 575-621); their last layer's weight is zero (``proj_init="zeros"``; "random":
  N(0, 0.01²)) and its bias the HiPPO values (the map's inverse for Re Λ; for rank < 0 the
  scale 1 + 0i), so that the raw projections start constant in time. RMSNorm and
  ComplexRMSNorm (341-364: x / sqrt(mean |x|² + 1e-6) * weight, weight (S,) ones) on the
  projections when ``proj_norm`` (636-649): Re/Im Λ over the states, before the map; B per
  input column over the states, C per output row over the states (779-781).
* Conjugate symmetry (435-440, 808-832, 871-877): with every part LTI the layer keeps n =
  P/2 modes and outputs 2 Re(C h); once anything is input-dependent, the input-dependent
  parts have all P states and the static parts are expanded to their conjugates
  ([Λ, Λ*], [log_step, log_step], [B; B*], [C, C*] per direction), output Re(C h).
* Δ (801-806): the step of each time step scales exp(log_step); the reference's step_scale
  is Δt / T_max on Physiome (tides_collate.py:66-70: [t_0, t_1 - t_0, ...], padding 0) and
  the gap between kept indices on the UEA drop experiment (1150-1165: gaps, the first 1).
* UEA settings (uea/main.py:358-390, ``train_trial``, the hypersearch's entry point; fixed
  in uea/hypersearch.py:7-13): H 64, P 64, ssm_blocks 8, 2 layers, Re Λ and B/C
  input-dependent, Im Λ LTI, rank 8, dropout 0.05, standard map, encoder_depth 1,
  lambda_encoder_depth 0, ff_mult 1, dt 1e-3 to 1e-1, ZOH, no clipping, not bidirectional,
  RMSNorm on; conj_sym False (TIDESClassifier's default, 1102). These are the defaults here.
* Toy models (fading_flash/tides_toy_paper_figures.py:136-244): real Λ = -linspace(0.5, 3, P)
  (151), B ~ N(0, 1/H) (153), C ~ N(0, 1/P) (154), log_step ~ U[log 0.1, log 1] (158);
  TIDES' B/C input dependence is diagonal modulation, Linear(H, P) with zero weight and bias
  1 (168-173), its Λ projector Linear(H, P) with zero weight and bias Re Λ (163-167), no
  norms; MambaS: Λ LTI, B/C modulated, Δ = softplus(Linear(H + 1, P)([z_t, Δt])) with zero
  weight and bias 0.5413 (softplus(0.5413) = 1.0) (174-178, 193-196), so Δt is an input
  feature, not the step; sizes S5 H 15, TIDES H 7, MambaS H 7, TIDES (Λ only) H 11, P 3
  (227-244: 144 parameters each).

Deviations
----------
* The reference's unused parameters are not created: the static Re Λ when Re Λ is
  input-dependent, the static Im Λ likewise, the static B and C when B/C are
  input-dependent with rank >= 0 (the reference keeps them, untrained: its count is higher
  by n, n and 2 n H (bidirectional 3 n H) per layer), and log_step for MambaS (a zero buffer
  in the toy). Every parameter here is trained.
* Random draws come from torch's generator (the reference draws B and C from numpy's), so
  ``torch.manual_seed`` fixes the whole model.
* ``real_lambda``: Λ, B, C and the state are real, initialised as the toy models (above);
  Im Λ does not exist. The toy's SSM maps H -> 1 with D (1, H) = 0 and no encoder GLU, norm,
  feed-forward or head; here the toy's mechanisms sit in the same classifier as above.
* Not implemented: the reference's ``liquid`` option, its causal ``conv_kernel_size``
  convolution and its ``proj_init_method="default"`` (the Fading Flash and UEA settings
  use none of them).
* Implementation, same function: the parallel mode never forms the input-dependent B_t, C_t
  (rank >= 0; the reference forms all (L, S, H) of them per sample). B_t = reshape(W z_t +
  b) is affine in the rank-r code z_t, so B_t u_t = b u_t + W (u_t ⊗ z_t), Re(C_t h_t)
  likewise, and the RMS of each column of B_t (row of C_t) is a quadratic form in z_t
  through the (r, r) Gram matrices of W: per step O(H r) memory instead of O(S H), and
  EigenWorms' forward pass ~3.5x faster on CPU. Agrees with the reference to 1e-16 in
  float64 and ~1e-7 (relative) in float32. The recurrent and step modes form B_t, C_t (the
  reference's arithmetic); the tests hold the two modes equal. The work is split into
  chunks of time steps (``CHUNK_ELEMENTS``, checkpointed when there are several) to bound
  memory; the batch is not vmapped. 2 Re(C h) (conj_sym, LTI) scales the C h term only, as
  in the reference.
* Δ = 0 (padding) carries the state (Λ̄ = 1, B̄ = 0) for TIDES and S5; MambaS's step does
  not depend on Δt that way (its Δ is a function of [z_t, Δt_t]).

MACs (``count_macs``; see ssmbench.complexity)
------------------------------------------------
``convention="paper"``: what ptflops' module hooks see when every projection is called as a
module, as in the reference (encoder, projectors, GLUs, BatchNorm, head): the layer adds the
count of the B/C heads' last Linear, which the factored form applies to its weights instead
(so the parallel and the recurrent mode count the same). ``"full"`` adds the layer's tensor
work per step:
Δ, the map, discretisation (exponentials not counted), B_t z_t, B̄ scaling, the scan, C_t h_t,
the norms (2 per element) and D z_t; one product of two complex numbers counts 4 MACs, of a
complex and a real number 2.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from .frame import SequenceClassifier, optional_dropout
from .tides_scan import DISCRETIZATIONS, discretize, parallel_scan, recurrent_scan

__all__ = [
    "MODEL_ENTRIES",
    "MambaSClassifier",
    "S5Classifier",
    "TIDESBlock",
    "TIDESClassifier",
    "TIDESSSM",
    "hippo_dplr",
    "lambda_re_map",
]

#: the values of the string hyperparameters (``CHOICES``; the constructor checks them too)
MODES = ("lti", "input_dependent")
RE_MAPS = ("standard", "exp", "stable", "softplus")
STEP_MODES = ("physical", "input_dependent")
PROJ_INITS = ("zeros", "random")

_EPS = 1e-6  # the reference's RMSNorm eps
_CLIP = -1e-4  # clip_eigs: Re Λ <= -1e-4
_MAMBAS_STEP_BIAS = 0.5413  # softplus(0.5413) = 1.0000
_TOY_DECAYS = (0.5, 3.0)  # real Λ: -linspace(0.5, 3.0, P)

#: params.yaml ``models:`` entries: the reference's UEA settings and the Fading Flash sizes
_UEA = {
    "d_model": 64,
    "ssm_size": 64,
    "ssm_blocks": 8,
    "n_layers": 2,
    "dropout": 0.05,
    "encoder_depth": 1,
    "ff_mult": 1.0,
    "bidirectional": False,
    "lambda_re_map": "standard",
    "clip_eigs": False,
    "conj_sym": False,
    "discretization": "zoh",
}
_FADING_FLASH = {
    "ssm_size": 3,
    "ssm_blocks": 1,
    "n_layers": 1,
    "dropout": 0.0,
    "encoder_depth": 0,
    "real_lambda": True,
}
MODEL_ENTRIES: dict[str, dict] = {
    "TIDES": {
        "family": "tides",
        **_UEA,
        "lambda_re_mode": "input_dependent",
        "lambda_im_mode": "lti",
        "bc_mode": "input_dependent",
        "rank": 8,
        "lambda_encoder_depth": 0,
        "proj_norm": True,
        "dt_min": 0.001,
        "dt_max": 0.1,
    },
    "S5": {"family": "s5", **_UEA, "dt_min": 0.001, "dt_max": 0.1},
    "MambaS": {"family": "mambas", **_UEA, "proj_norm": False},
    "S5-FF": {"family": "s5", "d_model": 15, **_FADING_FLASH, "dt_min": 0.1, "dt_max": 1.0},
    "TIDES-FF": {
        "family": "tides",
        "d_model": 7,
        **_FADING_FLASH,
        "lambda_re_mode": "input_dependent",
        "bc_mode": "input_dependent",
        "rank": -1,
        "proj_norm": False,
        "dt_min": 0.1,
        "dt_max": 1.0,
    },
    "TIDES-Lambda-FF": {
        "family": "tides",
        "d_model": 11,
        **_FADING_FLASH,
        "lambda_re_mode": "input_dependent",
        "bc_mode": "lti",
        "proj_norm": False,
        "dt_min": 0.1,
        "dt_max": 1.0,
    },
    "MambaS-FF": {"family": "mambas", "d_model": 7, **_FADING_FLASH, "proj_norm": False},
}


def _check_choice(name: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return value


# --- initialisation ---------------------------------------------------------------------------


def hippo_dplr(N: int) -> tuple[np.ndarray, np.ndarray]:
    """HiPPO-LegS in its normal (diagonal) part: Λ (N,) complex and the unitary V (N, N) with
    A + p p^T = V diag(Λ) V^H (up to Re Λ, replaced by the mean of the diagonal, -1/2)."""
    q = np.sqrt(1 + 2 * np.arange(N))
    A = -(np.tril(q[:, None] * q[None, :]) - np.diag(np.arange(N)))  # HiPPO-LegS (N, N)
    p = np.sqrt(np.arange(N) + 0.5)
    S = A + p[:, None] * p[None, :]  # normal: -1/2 I + skew-symmetric
    imag, V = np.linalg.eigh(S * -1j)
    return np.mean(np.diagonal(S)) + 1j * imag, V


def _block_diag(*blocks: np.ndarray) -> np.ndarray:
    rows, cols = sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)
    out = np.zeros((rows, cols), dtype=np.result_type(*blocks))
    r = c = 0
    for b in blocks:
        out[r : r + b.shape[0], c : c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    return out


def lambda_re_map(raw: torch.Tensor, name: str, clip: bool = False) -> torch.Tensor:
    """Re Λ from its raw parameter (or projection) under the map ``name``."""
    if name == "exp":
        re = -torch.exp(raw)
    elif name == "stable":
        re = -1.0 / (raw**2 + 0.5)
    elif name == "softplus":
        re = -F.softplus(raw)
    elif name == "standard":
        re = raw
    else:
        _check_choice("lambda_re_map", name, RE_MAPS)
    return torch.clamp(re, max=_CLIP) if clip else re


def _lambda_re_inverse(re: np.ndarray, name: str) -> np.ndarray:
    """The raw value whose map is ``re`` (< 0); ``stable`` saturates at -2 as the reference."""
    if name == "exp":
        return np.log(-re)
    if name == "stable":
        return np.sqrt(np.maximum(0.0, -1.0 / re - 0.5))
    if name == "softplus":
        return np.log(np.expm1(-re))
    return re


def _as_parameter(values: np.ndarray | torch.Tensor) -> nn.Parameter:
    return nn.Parameter(torch.as_tensor(np.asarray(values), dtype=torch.float32).clone())


def _real_view(z: np.ndarray, c: int) -> np.ndarray:
    """A complex array as (..., 2) (re, im), or a real one as (..., 1)."""
    return np.stack([z.real, z.imag], axis=-1) if c == 2 else np.real(z)[..., None]


# --- small modules ----------------------------------------------------------------------------


class GLU(nn.Module):
    """w1(x) * sigmoid(w2(x)), both Linear(d, d) (tides.py:311-320)."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.w1, self.w2 = nn.Linear(d, d), nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w1(x) * torch.sigmoid(self.w2(x))


class ExpandedGLU(nn.Module):
    """proj(w1(x) * sigmoid(w2(x))), d -> int(d ff_mult) -> d (tides.py:323-334)."""

    def __init__(self, d: int, ff_mult: float = 1.0) -> None:
        super().__init__()
        inner = int(d * ff_mult)
        if inner < 1:
            raise ValueError(f"ff_mult {ff_mult} leaves no feed-forward width (d = {d})")
        self.w1, self.w2 = nn.Linear(d, inner), nn.Linear(d, inner)
        self.proj = nn.Linear(inner, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(self.w1(x) * torch.sigmoid(self.w2(x)))


class GluEncoder(nn.Module):
    """``depth`` residual GLUs at width d_in, then Linear(d_in, d_out) (tides.py:367-395)."""

    def __init__(self, d_in: int, d_out: int, depth: int = 0) -> None:
        super().__init__()
        self.glu_layers = nn.ModuleList([GLU(d_in) for _ in range(depth)])
        self.linear = nn.Linear(d_in, d_out)

    @property
    def last(self) -> nn.Linear:
        return self.linear

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for glu in self.glu_layers:
            x = x + glu(x)
        return self.linear(x)


class LowRankHead(nn.Module):
    """Linear(d_in, r) -> Linear(r, d_out) for r > 0, Linear(d_in, d_out) for r <= 0
    (tides.py:402-421)."""

    def __init__(self, d_in: int, d_out: int, rank: int) -> None:
        super().__init__()
        self.down = nn.Linear(d_in, rank) if rank > 0 else None
        self.up = nn.Linear(rank if rank > 0 else d_in, d_out)

    @property
    def last(self) -> nn.Linear:
        return self.up

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.up(self.down(x) if self.down is not None else x)


class FieldRMSNorm(nn.Module):
    """RMSNorm of real or complex numbers stored as (..., c): z / sqrt(mean |z|² + 1e-6) * w,
    the mean over ``size`` entries of one axis of the numbers (tides.py:341-364)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))

    def forward(self, z: torch.Tensor, dim: int) -> torch.Tensor:
        # z (..., size, ..., c); dim < -1 counts from the end of the numbers' real view
        power = z.square().sum(-1, keepdim=True)  # |z|²
        rms = torch.sqrt(power.mean(dim=dim, keepdim=True) + _EPS)
        weight = self.weight.reshape(-1, *([1] * (-dim - 1)))  # along ``dim``
        return z / rms * weight


def _init_last(head: GluEncoder | LowRankHead, bias: np.ndarray, proj_init: str) -> None:
    """The projector's last layer: weight 0 (or N(0, 0.01²)), bias the HiPPO values."""
    with torch.no_grad():
        if proj_init == "zeros":
            head.last.weight.zero_()
        else:
            head.last.weight.normal_(0.0, 0.01)
        head.last.bias.copy_(torch.as_tensor(np.asarray(bias).reshape(-1), dtype=torch.float32))


# --- the layer --------------------------------------------------------------------------------


class TIDESSSM(nn.Module):
    """(B, L, H) inputs and (B, L) steps -> (B, L, H); see the module docstring."""

    #: the projected B_t / C_t work (rank >= 0) holds this many numbers at a time at most
    CHUNK_ELEMENTS = 2**24

    def __init__(
        self,
        d_model: int,
        ssm_size: int,
        ssm_blocks: int = 1,
        lambda_re_mode: str = "lti",
        lambda_im_mode: str = "lti",
        bc_mode: str = "lti",
        step_mode: str = "physical",
        lambda_re_map: str = "standard",
        clip_eigs: bool = False,
        conj_sym: bool = False,
        real_lambda: bool = False,
        bidirectional: bool = False,
        discretization: str = "zoh",
        dt_min: float = 1e-3,
        dt_max: float = 1e-1,
        rank: int = 8,
        lambda_encoder_depth: int = 0,
        proj_norm: bool = True,
        proj_init: str = "zeros",
    ) -> None:
        super().__init__()
        for name, value, allowed in (
            ("lambda_re_mode", lambda_re_mode, MODES),
            ("lambda_im_mode", lambda_im_mode, MODES),
            ("bc_mode", bc_mode, MODES),
            ("step_mode", step_mode, STEP_MODES),
            ("lambda_re_map", lambda_re_map, RE_MAPS),
            ("discretization", discretization, DISCRETIZATIONS),
            ("proj_init", proj_init, PROJ_INITS),
        ):
            _check_choice(name, value, allowed)
        if ssm_size < 1 or ssm_blocks < 1 or ssm_size % ssm_blocks:
            raise ValueError(f"ssm_size {ssm_size} is not a multiple of ssm_blocks {ssm_blocks}")
        block = ssm_size // ssm_blocks
        if conj_sym and block % 2:
            raise ValueError(f"conj_sym needs an even block size, got {block}")
        if real_lambda and (conj_sym or lambda_im_mode != "lti"):
            raise ValueError("real_lambda has no Im Λ: no conj_sym, lambda_im_mode 'lti'")
        if step_mode == "physical" and not 0 < dt_min <= dt_max:
            raise ValueError(f"need 0 < dt_min <= dt_max, got {dt_min}, {dt_max}")
        if lambda_encoder_depth < 0:
            raise ValueError(f"lambda_encoder_depth must be >= 0, got {lambda_encoder_depth}")
        H = d_model
        self.d_model, self.ssm_size = H, ssm_size
        self.lambda_re_mode, self.lambda_im_mode, self.bc_mode = (
            lambda_re_mode,
            lambda_im_mode,
            bc_mode,
        )
        self.step_mode, self.lambda_re_map, self.clip_eigs = step_mode, lambda_re_map, clip_eigs
        self.real, self.bidirectional, self.discretization = (
            real_lambda,
            bidirectional,
            discretization,
        )
        self.rank = rank
        self.c = 1 if real_lambda else 2
        self.dirs = 2 if bidirectional else 1
        self.n_modes = ssm_size // 2 if conj_sym else ssm_size  # n: the parameterised modes
        any_input_dependent = "input_dependent" in (lambda_re_mode, lambda_im_mode, bc_mode) or (
            step_mode == "input_dependent"
        )
        # conj_sym with anything input-dependent: every state is explicit, static parts are
        # expanded to [v, conj v]; with everything LTI the conjugates stay implicit (2 Re)
        self.expand_conj = conj_sym and any_input_dependent
        self.S = 2 * self.n_modes if self.expand_conj else self.n_modes
        self.out_scale = 2.0 if conj_sym and not any_input_dependent else 1.0
        #: run the layer one time step at a time (``recurrent_scan``) instead of the scan
        self.recurrent = False
        #: time steps per chunk of the projected B_t / C_t work (None: from CHUNK_ELEMENTS)
        self.chunk_steps: int | None = None

        n, S, c = self.n_modes, self.S, self.c
        # --- static Λ, B, C (HiPPO, or the toy models' real initialisation)
        if real_lambda:
            lam = np.tile(-np.linspace(*_TOY_DECAYS, block), ssm_blocks).astype(complex)  # (n,)
            B0 = (torch.randn(n, H, dtype=torch.float64) / math.sqrt(H)).numpy()
            C0 = [(torch.randn(H, n, dtype=torch.float64) / math.sqrt(n)).numpy()]
            if bidirectional:
                C0.append((torch.randn(H, n, dtype=torch.float64) / math.sqrt(n)).numpy())
        else:
            lam_block, V = hippo_dplr(block)
            keep = block // 2 if conj_sym else block
            lam = np.tile(lam_block[:keep], ssm_blocks)  # (n,)
            V_blocks = _block_diag(*[V[:, :keep]] * ssm_blocks)  # (P, n)
            V_inv = _block_diag(*[V.conj().T[:keep]] * ssm_blocks)  # (n, P)
            std = 1.0 / math.sqrt(ssm_size)
            B0 = V_inv @ (torch.randn(ssm_size, H, dtype=torch.float64) * std).numpy()  # (n, H)

            def draw_c() -> np.ndarray:
                re = torch.randn(H, ssm_size, dtype=torch.float64) * std
                im = torch.randn(H, ssm_size, dtype=torch.float64) * std
                return (re.numpy() + 1j * im.numpy()) @ V_blocks  # (H, n)

            C0 = [draw_c() for _ in range(self.dirs)]
        self.D = nn.Parameter(torch.randn(H))
        if step_mode == "physical":
            self.log_step = nn.Parameter(
                torch.empty(n).uniform_(math.log(dt_min), math.log(dt_max))
            )
        # the static values as every state sees them (expanded when ``expand_conj``)
        lam_full = np.concatenate([lam, lam.conj()]) if self.expand_conj else lam  # (S,)
        B_full = np.concatenate([B0, B0.conj()]) if self.expand_conj else B0  # (S, H)
        C_full = np.concatenate(
            [np.concatenate([Cd, Cd.conj()], axis=1) if self.expand_conj else Cd for Cd in C0],
            axis=1,
        )  # (H, dirs S)

        # --- Λ: static parameters or projectors
        if lambda_re_mode == "lti":
            self.Lambda_re = _as_parameter(_lambda_re_inverse(lam.real, lambda_re_map))
        else:
            self.lambda_re_proj = GluEncoder(H, S, lambda_encoder_depth)
            _init_last(
                self.lambda_re_proj, _lambda_re_inverse(lam_full.real, lambda_re_map), proj_init
            )
        if not real_lambda and lambda_im_mode == "lti":
            self.Lambda_im = _as_parameter(lam.imag)
        elif not real_lambda:
            self.lambda_im_proj = GluEncoder(H, S, lambda_encoder_depth)
            _init_last(self.lambda_im_proj, lam_full.imag, proj_init)
        # --- B, C: static (LTI, or modulated per state) or projected
        modulated = bc_mode == "input_dependent" and rank < 0
        if bc_mode == "lti" or modulated:
            self.B = _as_parameter(_real_view(B0, c))  # (n, H, c)
            self.C = _as_parameter(_real_view(np.concatenate(C0, axis=1), c))  # (H, dirs n, c)
        if bc_mode == "input_dependent":
            if modulated:  # one scale per state, 1 + 0i at the start
                b_out, c_out = S * c, self.dirs * S * c
                b_bias = _real_view(np.ones(S, dtype=complex), c)
                c_bias = _real_view(np.ones(self.dirs * S, dtype=complex), c)
            else:  # the whole matrix, the HiPPO values at the start
                b_out, c_out = S * H * c, H * self.dirs * S * c
                b_bias, c_bias = _real_view(B_full, c), _real_view(C_full, c)
            self.b_proj = LowRankHead(H, b_out, max(rank, 0))
            self.c_proj = LowRankHead(H, c_out, max(rank, 0))
            _init_last(self.b_proj, b_bias, proj_init)
            _init_last(self.c_proj, c_bias, proj_init)
        if step_mode == "input_dependent":  # MambaS: Δ = softplus(W [z_t, Δt_t] + b)
            self.step_proj = nn.Linear(H + 1, S)
            with torch.no_grad():
                self.step_proj.weight.zero_()
                self.step_proj.bias.fill_(_MAMBAS_STEP_BIAS)
        # --- RMSNorm on the projections
        norm = proj_norm
        self.lambda_re_norm = FieldRMSNorm(S) if norm and lambda_re_mode != "lti" else None
        self.lambda_im_norm = (
            FieldRMSNorm(S) if norm and not real_lambda and lambda_im_mode != "lti" else None
        )
        self.b_norm = FieldRMSNorm(S) if norm and bc_mode != "lti" else None
        self.c_norm = FieldRMSNorm(self.dirs * S) if norm and bc_mode != "lti" else None

    # --- numbers stored as (..., c) -----------------------------------------------------------

    def _field(self, z: torch.Tensor) -> torch.Tensor:
        """(..., c) real view -> complex (..., ) (real with ``real_lambda``)."""
        return torch.view_as_complex(z.contiguous()) if self.c == 2 else z.squeeze(-1)

    def _view(self, z: torch.Tensor) -> torch.Tensor:
        """complex (or real) (...) -> (..., c) real view."""
        return torch.view_as_real(z) if self.c == 2 else z.unsqueeze(-1)

    def _conj_sign(self, like: torch.Tensor) -> torch.Tensor:
        return torch.tensor([1.0, -1.0][: self.c], dtype=like.dtype, device=like.device)

    def _static_B(self) -> torch.Tensor:  # (S, H, c)
        if not self.expand_conj:
            return self.B
        return torch.cat([self.B, self.B * self._conj_sign(self.B)], dim=0)

    def _static_C(self) -> torch.Tensor:  # (H, dirs S, c), per direction [C, conj C]
        if not self.expand_conj:
            return self.C
        parts = self.C.chunk(self.dirs, dim=1)
        return torch.cat([p for d in parts for p in (d, d * self._conj_sign(d))], dim=1)

    # --- per-step quantities ------------------------------------------------------------------

    def _lambda(self, u: torch.Tensor) -> torch.Tensor:
        """Λ: (S,) static, or (B, L, S) input-dependent; complex (real with real_lambda)."""
        if self.lambda_re_mode == "lti":
            re = lambda_re_map(self.Lambda_re, self.lambda_re_map, self.clip_eigs)  # (n,)
            re = torch.cat([re, re]) if self.expand_conj else re
        else:
            raw = self.lambda_re_proj(u)  # (B, L, S)
            if self.lambda_re_norm is not None:
                raw = self.lambda_re_norm(raw.unsqueeze(-1), dim=-2).squeeze(-1)
            re = lambda_re_map(raw, self.lambda_re_map, self.clip_eigs)
        if self.real:
            return re
        if self.lambda_im_mode == "lti":
            im = self.Lambda_im  # (n,)
            im = torch.cat([im, -im]) if self.expand_conj else im
        else:
            im = self.lambda_im_proj(u)  # (B, L, S)
            if self.lambda_im_norm is not None:
                im = self.lambda_im_norm(im.unsqueeze(-1), dim=-2).squeeze(-1)
        return torch.complex(*torch.broadcast_tensors(re, im))

    def _delta(self, u: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        """Δ (B, L, S): the physical step times each state's learnt scale (MambaS: a
        projection of [z_t, Δt_t])."""
        if self.step_mode == "input_dependent":
            return F.softplus(self.step_proj(torch.cat([u, steps.unsqueeze(-1)], dim=-1)))
        scale = torch.exp(self.log_step)  # (n,)
        scale = torch.cat([scale, scale]) if self.expand_conj else scale
        return steps.unsqueeze(-1) * scale  # (B, L, S)

    def _scales(self, head: LowRankHead, norm: FieldRMSNorm | None, u: torch.Tensor):
        """Per-state modulation (rank < 0): (B, L, m) complex (real), m = S or dirs S."""
        z = head(u).unflatten(-1, (-1, self.c))  # (B, L, m, c)
        return self._field(norm(z, dim=-2) if norm is not None else z)

    # --- projected B_t, C_t (rank >= 0) -----------------------------------------------------
    # B_t = reshape(W z_t + b), z_t = down(u_t) (u_t itself for rank 0), is affine in z_t: so
    # B_t u_t, Re(C_t x_t) and the RMS of B_t's columns and C_t's rows (quadratic forms in
    # z_t, through the small Gram matrices of W) follow from W and b without forming each
    # step's (S, H) matrices ("factored"). The recurrent and step modes form them
    # ("materialised", the reference's arithmetic); the tests hold the two equal.

    @staticmethod
    def _code(head: LowRankHead, u: torch.Tensor) -> torch.Tensor:
        return head.down(u) if head.down is not None else u  # (B, T, r)

    @staticmethod
    def _row_power(W: torch.Tensor, bias: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """sum_m (W[h, m] . z + bias[h, m])² for every h: W (H, m, r), bias (H, m), z (B, T, r)
        -> (B, T, H)."""
        gram = torch.einsum("hmk,hml->hkl", W, W)  # (H, r, r)
        cross = torch.einsum("hmk,hm->hk", W, bias)  # (H, r)
        quad = torch.einsum("btk,hkl,btl->bth", z, gram, z)
        # a sum of squares: only rounding can take it below 0
        return torch.clamp(quad + 2 * z @ cross.T + bias.square().sum(-1), min=0)

    def _drive_factored(self, u: torch.Tensor) -> torch.Tensor:
        """B_t u_t, B_t projected: u (B, T, H) -> (B, T, S)."""
        S, H, c = self.S, self.d_model, self.c
        z = self._code(self.b_proj, u)  # (B, T, r)
        r = z.size(-1)
        W = self.b_proj.up.weight.view(S, H, c, r)
        bias = self.b_proj.up.bias.view(S, H, c)
        if self.b_norm is not None:  # each input column h over the S states
            power = self._row_power(
                W.transpose(0, 1).reshape(H, S * c, r), bias.transpose(0, 1).reshape(H, S * c), z
            )
            u = u / torch.sqrt(power / S + _EPS)  # (B, T, H): the column's 1/RMS on its input
        # sum_h bias[s, h] u_h + sum_{h, k} W[s, h, k] u_h z_k
        out = u @ bias.permute(1, 0, 2).reshape(H, S * c)
        out = out + (u.unsqueeze(-1) * z.unsqueeze(-2)).flatten(-2) @ W.permute(1, 3, 0, 2).reshape(
            H * r, S * c
        )
        out = out.unflatten(-1, (S, c))  # (B, T, S, c)
        if self.b_norm is not None:
            out = out * self.b_norm.weight.unsqueeze(-1)
        return self._field(out)

    def _readout_factored(self, u: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Re(C_t x_t), C_t projected: u (B, T, H), x (B, T, dirs S) -> (B, T, H)."""
        H, dS, c = self.d_model, self.dirs * self.S, self.c
        z = self._code(self.c_proj, u)  # (B, T, r)
        r = z.size(-1)
        W = self.c_proj.up.weight.view(H, dS, c, r)
        bias = self.c_proj.up.bias.view(H, dS, c)
        if self.c_norm is not None:
            x = x * self.c_norm.weight
        # Re(C x) = sum over (s, c) of C[h, s, c] x̂[s, c], x̂ = (Re x, -Im x)
        xs = (self._view(x) * self._conj_sign(W)).flatten(-2)  # (B, T, dS c)
        y = xs @ bias.reshape(H, dS * c).T  # (B, T, H)
        q = (xs @ W.permute(1, 2, 0, 3).reshape(dS * c, H * r)).unflatten(-1, (H, r))
        y = y + (q * z.unsqueeze(-2)).sum(-1)
        if self.c_norm is not None:  # each output row h over the states
            power = self._row_power(W.reshape(H, dS * c, r), bias.reshape(H, dS * c), z)
            y = y / torch.sqrt(power / dS + _EPS)
        return y

    def _drive_materialised(self, u: torch.Tensor) -> torch.Tensor:
        """B_t u_t from the formed B_t (B, T, S, H): the reference's arithmetic."""
        Bt = self.b_proj(u).unflatten(-1, (self.S, self.d_model, self.c))  # (B, T, S, H, c)
        if self.b_norm is not None:
            Bt = self.b_norm(Bt, dim=-3)  # each input column over the S states
        return self._field(torch.einsum("btshc,bth->btsc", Bt, u))

    def _readout_materialised(self, u: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Re(C_t x_t) from the formed C_t (B, T, H, dirs S)."""
        Ct = self.c_proj(u).unflatten(-1, (self.d_model, self.dirs * self.S, self.c))
        if self.c_norm is not None:
            Ct = self.c_norm(Ct, dim=-2)  # each output row over the states
        # Re(C x) = C_re x_re - C_im x_im
        return torch.einsum("bthsc,btsc->bth", Ct * self._conj_sign(Ct), self._view(x))

    def _projected_bc(self) -> bool:
        return self.bc_mode == "input_dependent" and self.rank >= 0

    def _drive(self, u: torch.Tensor, materialise: bool = False) -> torch.Tensor:
        """B_t u_t: (B, L, H) -> (B, L, S) complex (real)."""
        if self._projected_bc():
            fn = self._drive_materialised if materialise else self._drive_factored
            return self._chunked(fn, u)
        bu = self._field(torch.einsum("blh,shc->blsc", u, self._static_B()))
        if self.bc_mode == "input_dependent":  # diag(s_t) B u_t
            bu = self._scales(self.b_proj, self.b_norm, u) * bu
        return bu

    def _readout(self, u: torch.Tensor, x: torch.Tensor, materialise: bool = False):
        """Re(C_t x_t): x (B, L, dirs S) states -> (B, L, H)."""
        if self._projected_bc():
            fn = self._readout_materialised if materialise else self._readout_factored
            return self._chunked(fn, u, x)
        if self.bc_mode == "input_dependent":  # C diag(s_t) x_t
            x = self._scales(self.c_proj, self.c_norm, u) * x
        C = self._static_C()
        return torch.einsum("blsc,hsc->blh", self._view(x), C * self._conj_sign(C))

    def _chunked(self, fn, *tensors: torch.Tensor) -> torch.Tensor:
        """``fn`` over chunks of time steps (dim 1), so that its per-step intermediates of at
        most CHUNK_ELEMENTS numbers exist at once; recomputed in the backward pass."""
        B, L = tensors[0].shape[:2]
        r = self.rank if self.rank > 0 else self.d_model
        per_step = B * max(self.d_model * r, self.dirs * self.S * self.c)
        T = self.chunk_steps or max(1, self.CHUNK_ELEMENTS // per_step)
        if T >= L:
            return fn(*tensors)
        parts = []
        for start in range(0, L, T):
            piece = [t[:, start : start + T] for t in tensors]
            if torch.is_grad_enabled():
                parts.append(checkpoint(fn, *piece, use_reentrant=False))
            else:
                parts.append(fn(*piece))
        return torch.cat(parts, dim=1)

    def _elements(self, u: torch.Tensor, steps: torch.Tensor, materialise: bool = False):
        """The recurrence's (Λ̄_t, B̄_t u_t), each (B, L, S)."""
        lam_bar, gain = discretize(self._lambda(u), self._delta(u, steps), self.discretization)
        return lam_bar, gain * self._drive(u, materialise)

    # --- forward ------------------------------------------------------------------------------

    def forward(self, u: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        """u (B, L, H), steps (B, L) -> (B, L, H). ``self.recurrent``: step by step."""
        if self.recurrent:
            return self._forward_recurrent(u, steps)
        a, b = self._elements(u, steps)  # (B, L, S) each
        x = parallel_scan(a, b)
        if self.bidirectional:
            x = torch.cat([x, parallel_scan(a, b, reverse=True)], dim=-1)  # (B, L, 2S)
        return self._output(u, x)

    def _output(self, u: torch.Tensor, x: torch.Tensor, materialise: bool = False):
        y = self._readout(u, x, materialise)
        if self.out_scale != 1.0:
            y = y * self.out_scale
        return y + self.D * u

    def _forward_recurrent(self, u: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        """Each step's quantities from that step's input alone, then the recurrence."""
        L = u.size(1)
        per_step = [self._elements(u[:, t : t + 1], steps[:, t : t + 1], True) for t in range(L)]
        a = torch.cat([e[0] for e in per_step], dim=1)  # (B, L, S)
        b = torch.cat([e[1] for e in per_step], dim=1)
        x = recurrent_scan(a, b)
        if self.bidirectional:
            x = torch.cat([x, recurrent_scan(a, b, reverse=True)], dim=-1)
        outputs = [self._output(u[:, t : t + 1], x[:, t : t + 1], True) for t in range(L)]
        return torch.cat(outputs, dim=1)

    def step(
        self, u_t: torch.Tensor, dt_t: torch.Tensor, state: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One time step: u_t (B, H), dt_t (B,), state (B, S) (None: zeros) -> (y_t, state)."""
        if self.bidirectional:
            raise ValueError("a bidirectional layer has no step mode (it reads the future)")
        a, b = self._elements(u_t.unsqueeze(1), dt_t.unsqueeze(1), True)  # (B, 1, S)
        h = b[:, 0] if state is None else a[:, 0] * state + b[:, 0]
        return self._output(u_t.unsqueeze(1), h.unsqueeze(1), True)[:, 0], h

    def count_macs(self, inputs: tuple, output: torch.Tensor, convention: str) -> int:
        """The layer's own work (see the module docstring); ptflops counts its Linears."""
        Bsz, L, H = inputs[0].shape
        S, dS, c = self.S, self.dirs * self.S, self.c
        per = 0
        if self._projected_bc() and not self.recurrent:
            # the B and C heads' last Linear, which the factored form applies to its weights
            # (ptflops' count of calling it, as the reference and the recurrent mode do)
            up_b, up_c = self.b_proj.up, self.c_proj.up
            per += (up_b.in_features + 1) * up_b.out_features
            per += (up_c.in_features + 1) * up_c.out_features
        if convention != "full":
            return Bsz * L * per
        mul = 4 if c == 2 else 1  # one product of two numbers of the field
        per += S  # Δ (a step times a scale, or a softplus)
        per += S + (2 * S if self.lambda_re_norm is not None else 0)  # Re Λ map (+ norm)
        per += 2 * S if self.lambda_im_norm is not None else 0
        per += (c + mul) * S  # ΛΔ and the gain's division (exp / expm1 not counted)
        per += c * S * H + mul * S  # B u and the gain
        per += mul * dS  # the scan: a_t h_{t-1} + b_t per direction
        per += c * H * dS  # Re(C x)
        if self._projected_bc():  # the norms, 2 per element of B_t and C_t
            per += (2 * c * S * H if self.b_norm is not None else 0) + (
                2 * c * H * dS if self.c_norm is not None else 0
            )
        elif self.bc_mode == "input_dependent":  # the modulation and its norms
            per += mul * (S + dS) + (2 * c * (S + dS) if self.b_norm is not None else 0)
        per += 2 * H  # D u and the sum
        return Bsz * L * per


# --- blocks and classifiers ------------------------------------------------------------------


class TIDESBlock(nn.Module):
    """BatchNorm (no affine) -> TIDESSSM -> GELU -> dropout -> GLU -> dropout -> residual
    (tides.py:886-970)."""

    def __init__(self, d_model: int, dropout: float, ff_mult: float, **ssm) -> None:
        super().__init__()
        self.norm = nn.BatchNorm1d(d_model, affine=False)
        self.ssm = TIDESSSM(d_model, **ssm)
        self.glu = ExpandedGLU(d_model, ff_mult)
        self.dropout = optional_dropout(dropout)

    def forward(self, x: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        z = self.norm(x.transpose(1, 2)).transpose(1, 2)  # over B and L, per channel
        z = self.dropout(F.gelu(self.ssm(z, steps)))
        return x + self.dropout(self.glu(z))


class _TimeAwareSSMClassifier(SequenceClassifier):
    """The frame the three families share: GLU encoder, TIDES blocks, Linear head."""

    #: the inputs the training side gives forward: values (B, C, L) and steps (B, L)
    INPUTS = ("values", "steps")
    #: integer hyperparameters that may be 0 or negative (registry.validate_model_params)
    INT_MINIMUM = {"encoder_depth": 0, "lambda_encoder_depth": 0, "rank": None}

    def _build(
        self,
        d_model: int,
        n_layers: int,
        encoder_depth: int,
        ff_mult: float,
        dropout: float,
        **ssm,
    ) -> None:
        if encoder_depth < 0 or n_layers < 1:
            raise ValueError(f"need encoder_depth >= 0, n_layers >= 1: {encoder_depth}, {n_layers}")
        self.encoder = GluEncoder(self.n_channels, d_model, encoder_depth)
        self.blocks = nn.ModuleList(
            [TIDESBlock(d_model, float(dropout), float(ff_mult), **ssm) for _ in range(n_layers)]
        )
        self.head = nn.Linear(d_model, self.n_classes)  # the reference's head (tides.py:1135)

    def set_recurrent(self, recurrent: bool = True) -> _TimeAwareSSMClassifier:
        """Every layer step by step (True) or by the parallel scan (False, the default)."""
        for block in self.blocks:
            block.ssm.recurrent = recurrent
        return self

    def forward(self, x: torch.Tensor, steps: torch.Tensor | None = None) -> torch.Tensor:
        """x (B, C, L), steps (B, L) physical step sizes (None: all 1) -> (B, K) or (B, L, K)."""
        batch, _, length = x.shape
        if steps is None:
            steps = x.new_ones(batch, length)  # regular data
        elif tuple(steps.shape) != (batch, length):
            raise ValueError(f"steps must be (B, L) = {(batch, length)}, got {tuple(steps.shape)}")
        steps = steps.to(x.dtype)
        u = self.encoder(x.transpose(1, 2))  # (B, L, H)
        for block in self.blocks:
            u = block(u, steps)
        return self.readout(u)  # (B, K), or (B, L, K) per step


class TIDESClassifier(_TimeAwareSSMClassifier):
    """TIDES: Re Λ, Im Λ and B/C each LTI or input-dependent; defaults: the reference's UEA
    settings."""

    TEST_PARAMS = {"d_model": 8, "ssm_size": 8, "ssm_blocks": 2, "rank": 2, "encoder_depth": 0}
    CHOICES = {
        "lambda_re_mode": MODES,
        "lambda_im_mode": MODES,
        "bc_mode": MODES,
        "lambda_re_map": RE_MAPS,
        "discretization": DISCRETIZATIONS,
        "proj_init": PROJ_INITS,
    }

    def __init__(
        self,
        n_channels: int,
        n_classes: int,
        length: int | None = None,
        d_model: int = 64,
        ssm_size: int = 64,
        ssm_blocks: int = 8,
        n_layers: int = 2,
        dropout: float = 0.05,
        encoder_depth: int = 1,
        lambda_encoder_depth: int = 0,
        ff_mult: float = 1.0,
        bidirectional: bool = False,
        rank: int = 8,
        lambda_re_mode: str = "input_dependent",
        lambda_im_mode: str = "lti",
        bc_mode: str = "input_dependent",
        lambda_re_map: str = "standard",
        clip_eigs: bool = False,
        conj_sym: bool = False,
        real_lambda: bool = False,
        discretization: str = "zoh",
        dt_min: float = 0.001,
        dt_max: float = 0.1,
        proj_norm: bool = True,
        proj_init: str = "zeros",
        per_step: bool = False,
    ) -> None:
        super().__init__(n_channels, n_classes, length, per_step)
        self._build(
            d_model,
            n_layers,
            encoder_depth,
            ff_mult,
            dropout,
            ssm_size=ssm_size,
            ssm_blocks=ssm_blocks,
            lambda_re_mode=lambda_re_mode,
            lambda_im_mode=lambda_im_mode,
            bc_mode=bc_mode,
            lambda_re_map=lambda_re_map,
            clip_eigs=clip_eigs,
            conj_sym=conj_sym,
            real_lambda=real_lambda,
            bidirectional=bidirectional,
            discretization=discretization,
            dt_min=dt_min,
            dt_max=dt_max,
            rank=rank,
            lambda_encoder_depth=lambda_encoder_depth,
            proj_norm=proj_norm,
            proj_init=proj_init,
        )


class S5Classifier(_TimeAwareSSMClassifier):
    """S5: TIDES with Λ, B and C all LTI (the same modules: a TIDESClassifier with the three
    modes ``lti`` has the same parameters and output)."""

    TEST_PARAMS = {"d_model": 8, "ssm_size": 8, "ssm_blocks": 2, "encoder_depth": 0}
    CHOICES = {"lambda_re_map": RE_MAPS, "discretization": DISCRETIZATIONS}

    def __init__(
        self,
        n_channels: int,
        n_classes: int,
        length: int | None = None,
        d_model: int = 64,
        ssm_size: int = 64,
        ssm_blocks: int = 8,
        n_layers: int = 2,
        dropout: float = 0.05,
        encoder_depth: int = 1,
        ff_mult: float = 1.0,
        bidirectional: bool = False,
        lambda_re_map: str = "standard",
        clip_eigs: bool = False,
        conj_sym: bool = False,
        real_lambda: bool = False,
        discretization: str = "zoh",
        dt_min: float = 0.001,
        dt_max: float = 0.1,
        per_step: bool = False,
    ) -> None:
        super().__init__(n_channels, n_classes, length, per_step)
        self._build(
            d_model,
            n_layers,
            encoder_depth,
            ff_mult,
            dropout,
            ssm_size=ssm_size,
            ssm_blocks=ssm_blocks,
            lambda_re_map=lambda_re_map,
            clip_eigs=clip_eigs,
            conj_sym=conj_sym,
            real_lambda=real_lambda,
            bidirectional=bidirectional,
            discretization=discretization,
            dt_min=dt_min,
            dt_max=dt_max,
        )


class MambaSClassifier(_TimeAwareSSMClassifier):
    """MambaS (the reference's "Mamba surrogate"): LTI Λ, B/C modulated per state by the
    input, Δ = softplus(W [z_t, Δt_t] + b) (W = 0, b = 0.5413 at the start): the step is
    learnt from the input and Δt, not the physical step."""

    TEST_PARAMS = {"d_model": 8, "ssm_size": 8, "ssm_blocks": 2, "encoder_depth": 0}
    CHOICES = {
        "lambda_re_map": RE_MAPS,
        "discretization": DISCRETIZATIONS,
        "proj_init": PROJ_INITS,
    }

    def __init__(
        self,
        n_channels: int,
        n_classes: int,
        length: int | None = None,
        d_model: int = 64,
        ssm_size: int = 64,
        ssm_blocks: int = 8,
        n_layers: int = 2,
        dropout: float = 0.05,
        encoder_depth: int = 1,
        ff_mult: float = 1.0,
        bidirectional: bool = False,
        lambda_re_map: str = "standard",
        clip_eigs: bool = False,
        conj_sym: bool = False,
        real_lambda: bool = False,
        discretization: str = "zoh",
        proj_norm: bool = False,
        proj_init: str = "zeros",
        per_step: bool = False,
    ) -> None:
        super().__init__(n_channels, n_classes, length, per_step)
        self._build(
            d_model,
            n_layers,
            encoder_depth,
            ff_mult,
            dropout,
            ssm_size=ssm_size,
            ssm_blocks=ssm_blocks,
            bc_mode="input_dependent",
            step_mode="input_dependent",
            rank=-1,
            lambda_re_map=lambda_re_map,
            clip_eigs=clip_eigs,
            conj_sym=conj_sym,
            real_lambda=real_lambda,
            bidirectional=bidirectional,
            discretization=discretization,
            proj_norm=proj_norm,
            proj_init=proj_init,
        )
