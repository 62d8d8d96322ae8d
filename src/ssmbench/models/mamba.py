"""Mamba1 (selective SSM, S6) and Mamba2 (SSD): the mixers, their MAC counts and the classifiers.

The scans the mixers run (pure PyTorch, Mamba1's numba kernel on the CPU in
``mamba_cpu_scan.py``, or mamba_ssm's fused kernels) are in ``mamba_scan.py``; each mixer
names the one its last forward pass ran in ``scan_path`` (``scan_paths.py``).

Sources
-------
* Mamba1: Gu & Dao (2023), "Mamba: Linear-Time Sequence Modeling with Selective State
  Spaces", arXiv:2312.00752. Reference repository https://github.com/state-spaces/mamba:
  ``mamba_ssm/modules/mamba_simple.py`` (class ``Mamba``: projections, initialisations) and
  ``mamba_ssm/ops/selective_scan_interface.py`` (``selective_scan_ref``: the recurrence).
* Mamba2: Dao & Gu (2024), "Transformers are SSMs: Generalized Models and Efficient
  Algorithms Through Structured State Space Duality", arXiv:2405.21060. Same repository:
  ``mamba_ssm/modules/mamba2.py`` (class ``Mamba2``), ``mamba_ssm/modules/ssd_minimal.py``
  (the chunked SSD algorithm, the paper's Listing 1), ``mamba_ssm/ops/triton/ssd_combined.py``
  (``mamba_chunk_scan_combined``, the fused kernel used on CUDA) and
  ``mamba_ssm/ops/triton/layernorm_gated.py`` (``rms_norm_ref``: the gated RMSNorm).
* Sizes: the MS4N paper ("A Simple State Space Model Excels at Multivariate Time Series
  Classification"), Table 4 (params and MMac per MONSTER domain, Mamba1 and Mamba2 columns)
  and the UEA averages quoted in its section 5.2. The facts and figures above were taken from
  these sources; the code is written here, not copied.

Notation: B batch, C input channels, L length, K classes, d = ``d_model``,
E = ``expand`` * d (inner width), N = ``d_state``, R = ``dt_rank``, k = ``d_conv``,
P = ``headdim``, h = E / P heads, g = ``ngroups``.

Classifier (both families; x: (B, C, L) float32 -> logits (B, K))
------------------------------------------------------------------
    x = Linear(C, d) at every step                                   (B, L, d)
    for each of n_layers:  y = Dropout(GELU(Mixer(x)))                (B, L, d)
                           x = y          (x = x + y with residual=True)
    x = AdaptiveAvgPool1d(1) over L                                  (B, d)
    logits = Linear(d, d) -> GELU -> Linear(d, K)                    (B, K)
``per_step=True`` skips the pooling and applies the head at every step: (B, L, K).

``block="logncde"``: the Log-NCDE benchmark's Mamba (Benjamin-Walker/log-neural-cdes,
``torch_experiments/train.py``: ``GLU``, ``MambaBlock``, ``Mamba``; the code behind its
published UEA-6 "mamba" accuracies), around the same mixer:
    x = Linear(C, d) at every step                                   (B, L, d)
    for each of n_layers:  y = Dropout(GELU(Mixer(LayerNorm(x))))    (B, L, d)
                           y = Dropout(GLU(y))   GLU: a * sigmoid(b), [a, b] = Linear(d, 2d)(y)
                           x = x + y
    logits = Linear(d, K)(mean over L of x)                          (B, K)
  with its dropout 0.1 (params.yaml). ``softmax_output=True``: the model returns
  softmax(logits), as the reference's ``Mamba.forward`` does before its
  ``cross_entropy(y_hat, ...)``, which applies a second log-softmax: the protocol's
  cross-entropy on these outputs is the reference's loss, and the argmax (accuracy) is the
  same.
``time_channel=True`` (the TIDES drop-rate ablation's Mamba baselines) prepends the time
t / (L − 1) as an input channel, from the step sizes the model is then given
(``frame.with_time_channel``); off, the model reads X alone.

Mamba1 mixer (``mamba_simple.Mamba``), x (B, L, d):
    x_in, z = split(in_proj(x))        Linear(d, 2E, no bias)        (B, E, L) each
    u = SiLU(causal depthwise Conv1d(E, k, bias)(x_in))              (B, E, L)
    dt_r, Bt, Ct = split(x_proj(u))    Linear(E, R + 2N, no bias)    (B, R|N|N, L)
    delta = softplus(dt_proj(dt_r))    Linear(R, E, bias)            (B, E, L)
    A = -exp(A_log)                                                  (E, N)
    h_t = exp(delta_t A) h_{t-1} + delta_t Bt_t u_t  (state (B, E, N))
    y_t = <Ct_t, h_t> + D u_t;  y = y * SiLU(z)                      (B, E, L)
    out = out_proj(y)                  Linear(E, d, no bias)         (B, L, d)
  Init as the reference: A_log = log(1..N) per channel, D = 1, dt_proj.weight ~
  U(+-R^-0.5), dt_proj.bias = softplus^-1(dt), dt = exp(U[log 1e-3, log 1e-1]) clamped >= 1e-4,
  R = ceil(d / 16) ("auto"); other layers keep torch's default init.
  Parameters: E (195 + k + 2R + 3N) (in_proj 2dE, conv kE + E, x_proj E(R+2N), dt_proj RE + E,
  A_log EN, D E, out_proj Ed).

Mamba2 mixer (``mamba2.Mamba2``), x (B, L, d):
    z, xBC, dt = split(in_proj(x))     Linear(d, 2E + 2gN + h, no bias)
    xBC = SiLU(causal depthwise Conv1d(E + 2gN, k, bias)(xBC));  x, Bt, Ct = split(xBC)
    delta = softplus(dt + dt_bias)                                    (B, L, h)
    per head: H_t = exp(delta_t A_h) H_{t-1} + delta_t x_t Bt_t^T  (state (B, h, P, N))
              y_t = H_t Ct_t + D_h x_t                                (B, L, h, P)
    y = RMSNorm_group(y * SiLU(z)) * weight   (norm_before_gate=False, eps 1e-5)
    out = out_proj(y)                  Linear(E, d, no bias)
  Init as the reference: A = U(1, 16) per head, A_log = log A; D = 1 per head; dt_bias as
  Mamba1's dt bias (per head); gated-norm weight 1; other layers torch's default init.
  Parameters: d(2E + 2gN + h) + (k+1)(E + 2gN) + 3h + E + Ed.

Width found from Table 4 (hyperparameters of params.yaml's ``Mamba1`` and ``Mamba2``)
-------------------------------------------------------------------------------------
Table 4's parameter counts are linear in C and K with slopes 64 and 65 in both columns
(and MS4N's, 23,040 + 64C + 65K): the input map is Linear(C, 64) and the last layer
Linear(64, K). The remainders, 55,296 (Mamba1) and 39,472 (Mamba2), are exactly
input bias 64 + head Linear(64, 64) 4,160 + one mixer with d = 64, expand 2, d_conv 4:
* Mamba1, d_state 64, dt_rank 4 (= ceil(64/16)): 128 (195 + 4 + 8 + 192) = 51,072.
  Params = 55,296 + 64C + 65K. (The reference default d_state 16 gives 32,640 per layer.
  Searching expand 1-4, d_state 4-128, d_conv 2-4, dt_rank 4-64 and 0-256 extra
  normalisation parameters, every exact fit has expand 2, d_state 64, dt_rank 4, and the
  only one without normalisation parameters has d_conv 4.)
* Mamba2, d_state 64, ngroups 1, headdim 8 (16 heads): 64·400 + 5·256 + 3·16 + 128 + 8,192
  = 35,248. Params = 39,472 + 64C + 65K. (The reference defaults headdim 64 (2 heads) and
  d_state 128 give 34,310 and 43,142 with d_state 64 / 128. Searching expand 1-4, d_state
  8-256, headdim 4-128, ngroups 1-8, d_conv 2-4, with or without the gated norm, D per head
  or per channel, every exact fit has expand 2, ngroups·d_state = 64, 16 heads, d_conv 4,
  the gated norm and D per head.)
Both reproduce Table 4's Param column in all six MONSTER domains to the unit, and agree
with the UEA averages of section 5.2 (62,176 and 46,352 = MS4N's 29,920 + 32,256 and
+ 16,432, the same differences as on MONSTER).

MMac counting (``count_macs``; see ssmbench.complexity)
-------------------------------------------------------
The paper ran ptflops' module hooks over the mamba_ssm modules on CUDA, where the fused
kernels take the weights as arguments: Mamba1 multiplies by ``in_proj.weight`` with ``@``
and hands conv, x_proj, dt_proj and out_proj weights to ``mamba_inner_fn``, so no Mamba1
sub-module is ever called; Mamba2 calls ``in_proj`` as a module and hands conv, norm and
out_proj weights to ``mamba_split_conv1d_scan_combined``. Fitting the published MMac per
domain (per step a·C + b, plus the head once) gives a = 64 and b = 192 for Mamba1,
b = 192 + 25,600 for Mamba2 (25,600 = in_proj, 64 · 400): Linear(C, 64) with its bias
(64C + 64, ptflops 0.7 counts the bias at every step) and two parameter-free 64-wide
element-wise modules (64 + 64). Here those are the GELU after the mixer and the
AdaptiveAvgPool1d, both counted by ptflops at one MAC per element (which two modules the
authors had cannot be told from the figures; Table 4 has no parameters for a norm).
Reproduction (``domain_averages``, paper convention; published in brackets):

    domain     Mamba1 MMac       Mamba2 MMac
    Audio      2.4860 (2.49)   250.616 (250.47)
    Satellite  0.0655 (0.07)     2.424 (2.42)
    HAR        0.2519 (0.25)     2.914 (2.91)
    EEG        0.2829 (0.28)     6.836 (6.84)
    Counts     0.0133 (0.01)     0.628 (0.63)
    Other      0.1503 (0.15)     7.574 (7.57)

Every figure rounds to the published one except Mamba2/Audio (+0.06 %): no per-step
constant fits both that and EEG/Other (Audio alone would need b = 112-113, EEG 122-161),
so the paper's Audio run of Mamba2 presumably saw slightly different lengths (about 40
fewer steps over the 7 datasets).

* ``convention="paper"``: the mixers count nothing of their own (their projections are
  applied with ``F.linear`` / ``F.conv1d`` on the module weights, as the fused kernels do, so
  ptflops' hooks do not fire); Mamba2's in_proj is a module call and is counted.
* ``convention="full"``: the mixers add their real work (``mamba1_mixer_macs``,
  ``mamba2_mixer_macs``): projections and convolution, activations, the scan (Mamba1:
  4·E·N + E per step for exp(delta A) h, delta u B, the update and <C, h>; exponentials not
  counted, as in ssmbench.complexity's S4D convention) and the chunked SSD of Mamba2
  (intra-chunk quadratic form with chunk T = min(chunk_size, L), chunk states, state
  passing, output), the gate and norm.

Choices and deviations
----------------------
* Classifier wrapper: the MS4N paper does not describe it; the structure above is the one
  that reproduces Table 4 (parameters to the unit, MMac above): MS4's frame
  (input projection, global average pooling, MLP head Linear(d,d)-GELU-Linear(d,K)) with
  one Mamba mixer and a GELU in place of the S4D layer and GLU; no residual, no
  normalisation outside the mixer (any norm would add parameters Table 4 does not have).
  ``residual=True`` (default False) adds a skip connection around each mixer for deeper
  stacks. This is not mamba_ssm's ``MixerModel`` (pre-norm residual blocks + final norm).
* Pooling is ``nn.AdaptiveAvgPool1d(1)`` (a plain mean, counted by ptflops as 64 MACs per
  step, which is what the published MMac contains).
* Mamba1 ``d_state`` 64 (reference default 16) and Mamba2 ``headdim`` 8 (reference default
  64), ``d_state`` 64 (reference default 128): dictated by Table 4, see above.
* No MixerModel ``_init_weights`` (its out_proj rescaling by sqrt(n_layer) and zero
  Linear biases): not part of the ``Mamba``/``Mamba2`` modules themselves; every
  Linear/Conv1d keeps torch's default init except dt_proj (reference init above).
* Dropout is element-wise ``nn.Dropout`` after the GELU (default 0: identity).
* ``block="ms4n"`` on raw, unnormalised values diverges: the selective scan is cubic in its
  input's scale (Δ, B_t and u all grow with it, and C_t reads the state), and nothing
  between the blocks brings the scale back. On MotorImagery under the UEA-6 protocol (raw
  EEG values, per-channel std 13-29, |x| up to 446), Mamba1-logncde built that way reaches
  a training loss of 3.6e24 in its first epoch. The Log-NCDE reference's block
  normalises before the mixer (LayerNorm) and keeps a residual stream, so its Mamba trains
  on the raw values: ``Mamba1-logncde`` uses ``block="logncde"``.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import scan_paths
from .frame import (
    ClassifierHead,
    CountedMeanOverSteps,
    SequenceClassifier,
    optional_dropout,
    with_time_channel,
)
from .mamba_scan import (
    fused_chunk_scan,
    fused_selective_scan,
    scan_method_for,
    selective_scan,
    ssd_scan,
)

__all__ = [
    "Mamba1Classifier",
    "Mamba1Mixer",
    "Mamba2Classifier",
    "Mamba2Mixer",
    "mamba1_mixer_macs",
    "mamba2_mixer_macs",
]

_DT_MIN, _DT_MAX, _DT_INIT_FLOOR = 1e-3, 1e-1, 1e-4
#: the blocks around the mixers: the MS4N study's (Table 4) or the Log-NCDE benchmark's
BLOCKS = ("ms4n", "logncde")


# --- MAC counts ("full" convention) ----------------------------------------------------------


def mamba1_mixer_macs(
    batch: int, length: int, d_model: int, d_inner: int, d_state: int, dt_rank: int, d_conv: int
) -> int:
    """Real MACs of one Mamba1 mixer forward pass (element-wise ops count 1 per element, as
    ptflops counts activations and biases; exponentials are not counted)."""
    d, E, N, R, k = d_model, d_inner, d_state, dt_rank, d_conv
    per_step = (
        d * 2 * E  # in_proj
        + E * k
        + E
        + E  # depthwise conv + bias, SiLU
        + E * (R + 2 * N)  # x_proj
        + R * E
        + E
        + E  # dt_proj, delta bias, softplus
        + 4 * E * N
        + E  # delta*A, (delta u)*B, h update, <C, h>; delta*u
        + E
        + 2 * E  # D skip; SiLU(z) and gate
        + E * d  # out_proj
    )
    return batch * length * per_step


def mamba2_mixer_macs(
    batch: int,
    length: int,
    d_model: int,
    d_inner: int,
    d_state: int,
    nheads: int,
    ngroups: int,
    d_conv: int,
    chunk_size: int,
    include_in_proj: bool = False,
) -> int:
    """Real MACs of one Mamba2 mixer forward pass with the chunked SSD algorithm (chunk
    T = min(chunk_size, L), c chunks, padded length c·T). ``include_in_proj=False`` leaves out
    in_proj, which ptflops' Linear hook counts."""
    d, E, N, h, g, k = d_model, d_inner, d_state, nheads, ngroups, d_conv
    L = length
    T = min(chunk_size, L)
    c = -(-L // T)
    Lp = c * T
    conv_dim = E + 2 * g * N
    per_step = conv_dim * k + conv_dim + conv_dim + 2 * h  # conv + bias, SiLU; dt bias, softplus
    per_step += E + 5 * E + E * d  # D skip; x*SiLU(z), sum of squares, rstd, weight; out_proj
    ssd = (
        Lp * h  # a = dt * A
        + Lp * E  # x * dt
        + c * T * T * g * N  # C_t . B_s
        + c * T * T * h  # decay * CB
        + c * T * T * E  # y_diag
        + Lp * E
        + Lp * E * N  # chunk states: decay * xdt, outer product with B
        + c * E * N  # state passing
        + Lp * E * N
        + Lp * E  # y_off: C . H, decay
        + Lp * E  # y_diag + y_off
    )
    total = L * per_step + ssd
    if include_in_proj:
        total += L * d * (2 * E + 2 * g * N + h)
    return batch * total


# --- mixers ----------------------------------------------------------------------------------


def _inverse_softplus_dt(n: int) -> torch.Tensor:
    """dt ~ exp(U[log dt_min, log dt_max]) clamped >= dt_init_floor, mapped through the
    inverse of softplus (the reference's dt bias init)."""
    dt = torch.exp(
        torch.rand(n) * (math.log(_DT_MAX) - math.log(_DT_MIN)) + math.log(_DT_MIN)
    ).clamp(min=_DT_INIT_FLOOR)
    return dt + torch.log(-torch.expm1(-dt))


def _causal_depthwise_conv(x: torch.Tensor, conv: nn.Conv1d) -> torch.Tensor:
    """Causal depthwise convolution (B, D, L) -> (B, D, L) with ``conv``'s weights, applied
    functionally (left padding k - 1, as the reference's padding = k - 1 then [:L])."""
    k = conv.kernel_size[0]
    L = x.size(-1)
    return F.conv1d(x, conv.weight, conv.bias, padding=k - 1, groups=conv.groups)[..., :L]


class Mamba1Mixer(nn.Module):
    """The Mamba (S6) mixer of ``mamba_simple.Mamba``: (B, L, d) -> (B, L, d)."""

    #: use mamba_ssm's fused selective scan when importable and the input is on CUDA
    use_fused = True
    #: the scan's method without mamba_ssm (``mamba_scan.SCAN_METHODS``; auto: fused on the
    #: CPU, parallel elsewhere)
    scan_method = "auto"
    #: the scan the last forward pass ran (``scan_paths``; None: none has run)
    scan_path: str | None = None

    def __init__(
        self,
        d_model: int,
        d_state: int = 16,
        d_conv: int = 4,
        expand: int = 2,
        dt_rank: int | None = None,
        chunk_size: int = 64,
    ) -> None:
        super().__init__()
        d, E, N = d_model, expand * d_model, d_state
        R = math.ceil(d_model / 16) if dt_rank is None else dt_rank
        self.d_model, self.d_inner, self.d_state = d, E, N
        self.d_conv, self.dt_rank, self.chunk_size = d_conv, R, chunk_size
        self.in_proj = nn.Linear(d, 2 * E, bias=False)
        self.conv1d = nn.Conv1d(E, E, d_conv, groups=E, padding=d_conv - 1, bias=True)
        self.x_proj = nn.Linear(E, R + 2 * N, bias=False)
        self.dt_proj = nn.Linear(R, E, bias=True)
        with torch.no_grad():
            std = R**-0.5
            self.dt_proj.weight.uniform_(-std, std)
            self.dt_proj.bias.copy_(_inverse_softplus_dt(E))
        A = torch.arange(1, N + 1, dtype=torch.float32).repeat(E, 1)  # (E, N): S4D-real
        self.A_log = nn.Parameter(torch.log(A))
        self.D = nn.Parameter(torch.ones(E))
        self.out_proj = nn.Linear(E, d, bias=False)
        for p in (self.A_log, self.D):
            p._no_weight_decay = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        E, N, R = self.d_inner, self.d_state, self.dt_rank
        # Projections are applied with F.linear on the module weights, as the reference's
        # fused path does (so ptflops' module hooks do not see them: see count_macs).
        xz = F.linear(x, self.in_proj.weight, self.in_proj.bias).transpose(1, 2)  # (B, 2E, L)
        u, z = xz.split([E, E], dim=1)  # (B, E, L) each
        u = F.silu(_causal_depthwise_conv(u, self.conv1d))  # (B, E, L)
        x_dbl = F.linear(u.transpose(1, 2), self.x_proj.weight)  # (B, L, R + 2N)
        dt, Bt, Ct = x_dbl.split([R, N, N], dim=-1)
        delta = F.linear(dt, self.dt_proj.weight).transpose(1, 2)  # (B, E, L), bias in scan
        Bt = Bt.transpose(1, 2).contiguous()  # (B, N, L)
        Ct = Ct.transpose(1, 2).contiguous()  # (B, N, L)
        A = -torch.exp(self.A_log.float())  # (E, N)
        fused = fused_selective_scan() if (self.use_fused and x.is_cuda) else None
        if fused is not None:
            self.scan_path = scan_paths.FUSED_SELECTIVE
            y = fused(
                u.contiguous(),
                delta.contiguous(),
                A,
                Bt,
                Ct,
                self.D.float(),
                z=z.contiguous(),
                delta_bias=self.dt_proj.bias.float(),
                delta_softplus=True,
            )
        else:
            bias = self.dt_proj.bias
            method = scan_method_for(self.scan_method, u, delta, A, Bt, Ct, self.D, z, bias)
            self.scan_path = {
                "fused": scan_paths.FUSED_CPU_SELECTIVE,
                "stepwise": scan_paths.STEPWISE_SELECTIVE,
                "parallel": scan_paths.PARALLEL_SELECTIVE,
            }[method]
            y = selective_scan(
                u,
                delta,
                A,
                Bt,
                Ct,
                self.D,
                z=z,
                delta_bias=self.dt_proj.bias,
                delta_softplus=True,
                chunk_size=self.chunk_size,
                method=method,
            )
        return F.linear(y.transpose(1, 2), self.out_proj.weight, self.out_proj.bias)

    def count_macs(self, inputs: tuple, output: torch.Tensor, convention: str) -> int:
        """MACs ptflops' hooks miss (complexity.mmac protocol): nothing under "paper" (the
        fused kernel hid the whole mixer from the paper's ptflops), everything under "full"."""
        if convention == "paper":
            return 0
        B, L, _ = inputs[0].shape
        return mamba1_mixer_macs(
            B, L, self.d_model, self.d_inner, self.d_state, self.dt_rank, self.d_conv
        )


class Mamba2Mixer(nn.Module):
    """The Mamba2 (SSD) mixer of ``mamba2.Mamba2``: (B, L, d) -> (B, L, d)."""

    #: use mamba_ssm's fused chunk scan when importable and the input is on CUDA
    use_fused = True
    #: the scan the last forward pass ran (``scan_paths``; None: none has run)
    scan_path: str | None = None

    def __init__(
        self,
        d_model: int,
        d_state: int = 128,
        d_conv: int = 4,
        expand: int = 2,
        headdim: int = 64,
        ngroups: int = 1,
        chunk_size: int = 64,
    ) -> None:
        super().__init__()
        d, E, N = d_model, expand * d_model, d_state
        if E % headdim:
            raise ValueError(f"expand * d_model = {E} is not a multiple of headdim {headdim}")
        h = E // headdim
        if h % ngroups:
            raise ValueError(f"nheads = {h} is not a multiple of ngroups {ngroups}")
        self.d_model, self.d_inner, self.d_state, self.d_conv = d, E, N, d_conv
        self.headdim, self.nheads, self.ngroups, self.chunk_size = headdim, h, ngroups, chunk_size
        self.eps = 1e-5
        # order of in_proj outputs: [z, x, B, C, dt]
        self.in_proj = nn.Linear(d, 2 * E + 2 * ngroups * N + h, bias=False)
        conv_dim = E + 2 * ngroups * N
        self.conv1d = nn.Conv1d(
            conv_dim, conv_dim, d_conv, groups=conv_dim, padding=d_conv - 1, bias=True
        )
        self.dt_bias = nn.Parameter(_inverse_softplus_dt(h))  # (h)
        self.A_log = nn.Parameter(torch.log(torch.empty(h).uniform_(1.0, 16.0)))  # (h)
        self.D = nn.Parameter(torch.ones(h))  # (h)
        self.norm_weight = nn.Parameter(torch.ones(E))  # gated RMSNorm weight
        self.out_proj = nn.Linear(E, d, bias=False)
        for p in (self.dt_bias, self.A_log, self.D):
            p._no_weight_decay = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        Bsz, L, _ = x.shape
        E, N, h, g, P = self.d_inner, self.d_state, self.nheads, self.ngroups, self.headdim
        zxbcdt = self.in_proj(x)  # (B, L, 2E + 2gN + h): a module call, as in the reference
        z, xBC, dt = zxbcdt.split([E, E + 2 * g * N, h], dim=-1)
        xBC = F.silu(_causal_depthwise_conv(xBC.transpose(1, 2), self.conv1d)).transpose(1, 2)
        xs, Bt, Ct = xBC.split([E, g * N, g * N], dim=-1)
        xs = xs.reshape(Bsz, L, h, P)
        Bt = Bt.reshape(Bsz, L, g, N)
        Ct = Ct.reshape(Bsz, L, g, N)
        A = -torch.exp(self.A_log.float())  # (h)
        fused = fused_chunk_scan() if (self.use_fused and x.is_cuda) else None
        if fused is not None:
            self.scan_path = scan_paths.FUSED_CHUNK
            y = fused(
                xs.contiguous(),
                dt.contiguous(),
                A,
                Bt.contiguous(),
                Ct.contiguous(),
                self.chunk_size,
                D=self.D,
                z=None,
                dt_bias=self.dt_bias,
                dt_softplus=True,
            )
        else:
            self.scan_path = scan_paths.PARALLEL_SSD
            delta = F.softplus(dt + self.dt_bias)  # (B, L, h)
            y = ssd_scan(xs, delta, A, Bt, Ct, self.D, chunk_size=self.chunk_size)
        y = y.reshape(Bsz, L, E)
        # gated RMSNorm, norm_before_gate=False, one group per ngroups (rms_norm_ref)
        y = y * F.silu(z)
        yg = y.reshape(Bsz, L, g, E // g)
        yg = yg * torch.rsqrt(yg.square().mean(dim=-1, keepdim=True) + self.eps)
        y = yg.reshape(Bsz, L, E) * self.norm_weight
        return F.linear(y, self.out_proj.weight, self.out_proj.bias)

    def count_macs(self, inputs: tuple, output: torch.Tensor, convention: str) -> int:
        """MACs ptflops' hooks miss: nothing under "paper" (in_proj, a module call, is counted by
        its Linear hook; the fused kernel hid the rest), the rest of the mixer under "full"."""
        if convention == "paper":
            return 0
        B, L, _ = inputs[0].shape
        return mamba2_mixer_macs(
            B,
            L,
            self.d_model,
            self.d_inner,
            self.d_state,
            self.nheads,
            self.ngroups,
            self.d_conv,
            self.chunk_size,
        )


# --- classifiers -----------------------------------------------------------------------------


class _MambaClassifier(SequenceClassifier):
    """Input Linear(C, d), n_layers x (mixer, GELU, dropout), average pool, MLP head.

    The pool is the ptflops-counted ``nn.AdaptiveAvgPool1d`` (part of the published MMac)."""

    #: the MS4N paper's group of the family (its Figures 3 and 7; report.style colours)
    GROUP = "SSM"

    #: small hyperparameters for the contract tests (tests/test_model_contract.py)
    TEST_PARAMS = {"d_model": 8, "d_state": 8}

    def _build(
        self,
        mixers: list[nn.Module],
        d_model: int,
        dropout: float,
        residual: bool,
        block: str = "ms4n",
        softmax_output: bool = False,
    ) -> None:
        """The layers around the mixers, built after them (the order of the initial draws)."""
        if block not in BLOCKS:
            raise ValueError(f"block must be one of {BLOCKS}, got {block!r}")
        if block == "logncde" and residual:
            raise ValueError("block 'logncde' has its own residual; residual is an ms4n option")
        self.block, self.residual, self.softmax_output = block, residual, softmax_output
        if self.time_channel:  # t / (L − 1) from the step sizes: a time-aware input
            self.INPUTS = ("values", "steps")
        self.input_proj = nn.Linear(self.n_channels + int(self.time_channel), d_model)
        self.mixers = nn.ModuleList(mixers)
        self.activation = nn.GELU()
        self.dropout = optional_dropout(dropout)
        if block == "logncde":
            self.norms = nn.ModuleList(nn.LayerNorm(d_model) for _ in mixers)
            self.glus = nn.ModuleList(nn.Linear(d_model, 2 * d_model) for _ in mixers)
            self.head = nn.Linear(d_model, self.n_classes)  # the reference's linear_decoder
        else:
            self.global_pool = CountedMeanOverSteps()
            self.head = ClassifierHead(d_model, d_model, self.n_classes)

    def forward(self, x: torch.Tensor, steps: torch.Tensor | None = None) -> torch.Tensor:
        """x (B, C, L) -> (B, K) or (B, L, K); ``steps`` (B, L): the step sizes, read only
        with ``time_channel`` (the time t / (L − 1) as an extra input channel)."""
        if self.time_channel:
            x = with_time_channel(x, steps, self.length or x.shape[-1])  # (B, C + 1, L)
        x = self.input_proj(x.transpose(-1, -2))  # (B, C, L) -> (B, L, d)
        if self.block == "logncde":
            for norm, mixer, glu in zip(self.norms, self.mixers, self.glus, strict=True):
                y = self.dropout(self.activation(mixer(norm(x))))  # (B, L, d)
                a, b = glu(y).chunk(2, dim=-1)  # (B, L, d) each
                x = x + self.dropout(a * torch.sigmoid(b))
        else:
            for mixer in self.mixers:
                y = self.dropout(self.activation(mixer(x)))  # (B, L, d)
                x = x + y if self.residual else y
        out = self.readout(x)  # (B, K), or (B, L, K) per step
        return torch.softmax(out, dim=-1) if self.softmax_output else out


class Mamba1Classifier(_MambaClassifier):
    """Mamba1 classifier (defaults: the MS4N paper's Table 4 configuration)."""

    def __init__(
        self,
        n_channels: int,
        n_classes: int,
        length: int | None = None,
        d_model: int = 64,
        d_state: int = 64,
        d_conv: int = 4,
        expand: int = 2,
        dt_rank: int | None = None,
        n_layers: int = 1,
        chunk_size: int = 64,
        dropout: float = 0.0,
        residual: bool = False,
        time_channel: bool = False,
        block: str = "ms4n",
        softmax_output: bool = False,
        per_step: bool = False,
    ) -> None:
        super().__init__(n_channels, n_classes, length, per_step)
        self.time_channel = time_channel
        mixers = [
            Mamba1Mixer(d_model, d_state, d_conv, expand, dt_rank, chunk_size)
            for _ in range(n_layers)
        ]
        self._build(mixers, d_model, dropout, residual, block, softmax_output)


class Mamba2Classifier(_MambaClassifier):
    """Mamba2 classifier (defaults: the MS4N paper's Table 4 configuration)."""

    def __init__(
        self,
        n_channels: int,
        n_classes: int,
        length: int | None = None,
        d_model: int = 64,
        d_state: int = 64,
        d_conv: int = 4,
        expand: int = 2,
        headdim: int = 8,
        ngroups: int = 1,
        n_layers: int = 1,
        chunk_size: int = 64,
        dropout: float = 0.0,
        residual: bool = False,
        time_channel: bool = False,
        per_step: bool = False,
    ) -> None:
        super().__init__(n_channels, n_classes, length, per_step)
        self.time_channel = time_channel
        mixers = [
            Mamba2Mixer(d_model, d_state, d_conv, expand, headdim, ngroups, chunk_size)
            for _ in range(n_layers)
        ]
        self._build(mixers, d_model, dropout, residual)
