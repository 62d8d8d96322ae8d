"""TIDES, S5 and MambaS: time-aware diagonal state-space classifiers (the TIDES paper's family).

The layer is in ``tides_ssm.py`` and its parts in ``tides_parts.py``, the factored B/C
products in ``tides_products.py``, the scans and the discretisation in ``tides_scan.py``,
the classifiers' options (one ``TIDESConfig``, with their defaults) in
``tides_config.py``; this module holds the blocks and the classifiers.

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

Streaming (inference, not bidirectional): ``initial_state(B)`` and ``step(x_t, state, dt_t,
mask_t) -> (logits, state)`` run the classifier one time step at a time with
``TIDESSSM.step`` (the scan's discretisation) and BatchNorm's running statistics; the state
is each block's h (B, S), the running sum for the mean pooling, the step count and Σ Δt
(for ``time_channel``, which needs the model's length). Held to the parallel scan within
1e-4 (float32) at L = 10,000 (tests/test_streaming_tides.py).

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
* The paper's best configuration per UEA-6 set (appendix table; uea/configs/tides/<set>.yaml
  at 5516472, EthanolConcentration's at 2afe8d3) is params.yaml ``TIDES``'s
  ``dataset_params`` and ``dataset_settings`` (its lr, weight decay, batch size, epochs,
  patience 30 on the validation loss, no gradient clipping). Each of the six keeps Re Λ
  negative: the ``exp`` or ``stable`` map, or ``standard`` with ``clip_eigs``.
* Why that matters (MotorImagery, L = 3,000, raw values): with the defaults above (the
  ``standard`` map, no clipping) Re Λ is free to change sign. Training at lr 1e-3 moved the
  largest Re Λ from -1.0 at initialisation to -0.44 after 3 steps and +1.41 after 16; a
  positive Re Λ grows the state as exp(Re Λ Σ Δ) over 3,000 steps, past float32's range
  (e^88) once Re Λ Σ Δ does, and the run stopped with a NaN loss in epoch 4. With the
  paper's MotorImagery configuration (``clip_eigs``: Re Λ <= -1e-4) Re Λ stays negative
  and the loss stays near ln 2 (0.65-1.2 over its first 17 steps, the largest Re Λ at
  most -0.50). The reference's
  parameterisation is the same (its train_trial defaults do not clip either; it was not
  run here); its search space holds ``clip_eigs`` and the maps, and its published
  configurations keep Re Λ negative.
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
  b) is affine in the rank-r code z_t, so B_t u_t = (ẑ_t ⊗ u_t) W' with ẑ_t = [z_t, 1] and
  W' holding W and b, Re(C_t h_t) likewise, and the RMS of each column of B_t (row of C_t)
  is a quadratic form in ẑ_t through the (r + 1, r + 1) Gram matrices of [W, b]: per step
  O(H r) memory instead of O(S H), the products over blocks of 512 steps on CPU so that
  their (r + 1) H intermediates stay in the cache (``tides_products.py``). The recurrence runs
  time first: on the CPU the zero-order hold and the recurrence are one numba kernel
  (``tides_cpu_scan.py``: Λ̄ and B̄u never formed, a closed-form backward from the kept
  states); elsewhere (and as its reference) a chunked scan with a closed-form adjoint
  backward, Λ̄ and B̄u in real arithmetic with a closed-form backward (``tides_scan.py``),
  held to each other by tests/test_tides_cpu_scan.py. A sequence whose widest
  intermediate exceeds ``WHOLE_ELEMENTS`` numbers runs in chunks of time steps
  (``CHUNK_ELEMENTS``), each from the state the previous one ended in, checkpointed; its
  block then recomputes the pointwise rest (GELU, dropout, GLU) in the backward pass too.
  The batch is not vmapped. Held to a step-by-step reference written from the parameters
  (tests/test_tides_fast_scan.py: every option, Δ = 0 steps and padded tails, outputs and
  gradients) to float64 rounding, and within 2e-4 in float32. The recurrent and step modes
  form B_t, C_t (the reference's arithmetic). Measured (``benchmarks/bench_tides_step.py``,
  1 torch thread, docs/benchmarks.md): a training step of the
  TIDES entry takes 3.2, 2.8 and 4.6 s at (B, C, L) = (256, 9, 256), (64, 3, 1,000) and
  (32, 64, 3,000) (3.7, 3.3 and 5.3 s with the PyTorch scan), 2.9–3.1x S5's at the same
  width and state size, 14x MS4N's at (64, 3, 1,000); the six (B L) x (H r) x (S c) matrix
  products per layer of the projected B_t, C_t alone take 1.3–1.5x S5's whole step there
  and 6.6x MS4N's (the scan, fused, about 0.2 s of the 2.8). At EigenWorms' shape (32, 6,
  17,984) a step peaks at 2.9 GiB RSS. 2 Re(C h) (conj_sym, LTI) scales the C h term only,
  as in the reference.
* Δ = 0 (padding) carries the state (Λ̄ = 1, B̄ = 0) for TIDES and S5; MambaS's step does
  not depend on Δt that way (its Δ is a function of [z_t, Δt_t]).
* TIDES ``mask_channels`` (off in every configuration here): the observation mask M as C
  more input channels, for data whose missing values are zeros (the reference feeds
  Physiome-ODE's values alone, zeros where unobserved, ``tides_forecasting.py``).
* S5 ``block_glu: plain``: the S5 reference's (and the Log-NCDE benchmark's) block GLU,
  w1 z * σ(w2 z) without the TIDES reference's output projection (``S5-logncde``).
* S5 and MambaS ``time_channel``: the Log-NCDE benchmark's S5 configurations add a time
  channel on some UEA sets (``time: True``: linspace(0, 1, L)), and the drop-rate
  reference gives its Mamba models the time linspace(0, L, L) / L of the full grid; ours
  prepends t / (L − 1) from the step sizes (``frame.with_time_channel``: on regular data
  the same up to one step, on a drop-rate variant, whose L is the longest kept series, a
  constant factor apart).

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

import inspect

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from .frame import SequenceClassifier, optional_dropout, with_time_channel
from .tides_config import FamilyOptions, TIDESConfig
from .tides_parts import GLU, RE_MAPS, ExpandedGLU, GluEncoder, hippo_dplr, lambda_re_map
from .tides_ssm import TIDESSSM

__all__ = [
    "RE_MAPS",
    "MambaSClassifier",
    "S5Classifier",
    "TIDESBlock",
    "TIDESClassifier",
    "TIDESConfig",
    "TIDESSSM",
    "hippo_dplr",
    "lambda_re_map",
]


class TIDESBlock(nn.Module):
    """BatchNorm (no affine) -> TIDESSSM -> GELU -> dropout -> GLU -> dropout -> residual
    (tides.py:886-970)."""

    def __init__(self, config: TIDESConfig) -> None:
        super().__init__()
        d_model = config.d_model
        self.norm = nn.BatchNorm1d(d_model, affine=False)
        self.ssm = TIDESSSM(d_model, **config.layer_options())
        # "expanded": the TIDES reference's GLU with a projection; "plain": S5's w1 * σ(w2)
        if config.block_glu == "expanded":
            self.glu = ExpandedGLU(d_model, float(config.ff_mult))
        else:
            self.glu = GLU(d_model)
        self.dropout = optional_dropout(float(config.dropout))

    def forward(self, x: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        z = self.norm(x.transpose(1, 2)).transpose(1, 2)  # over B and L, per channel
        y = self.ssm(z, steps)
        if torch.is_grad_enabled() and not self.ssm.recurrent and self.ssm.chunked(*x.shape[:2]):
            # an input the layer splits into chunks: the pointwise rest of the block is
            # recomputed in the backward pass too (its ~7 (B, L, H) intermediates are not
            # kept; the dropout masks are redrawn from the saved RNG state, the same)
            return checkpoint(self._rest, x, y, use_reentrant=False)
        return self._rest(x, y)

    def _rest(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + self.dropout(self.glu(self.dropout(F.gelu(y))))


class _TimeAwareSSMClassifier(SequenceClassifier):
    """The frame the three families share: GLU encoder, TIDES blocks, Linear head.

    A family declares ``OPTIONS`` (``tides_config.FamilyOptions``: which options of
    ``TIDESConfig`` params.yaml may set for it, which it fixes). Its constructor takes
    ``(n_channels, n_classes, length=None, *, per_step=False)`` and either those options
    by keyword or ``config=`` a ``TIDESConfig``; the model keeps the config it was built
    from (``config``). The class's signature lists the options with the family's
    defaults, as ``hyperparams_of`` and the registry read them, and its ``CHOICES``
    are the options' (both set for each subclass)."""

    #: the inputs the training side gives forward: values (B, C, L) and steps (B, L)
    INPUTS = ("values", "steps")
    #: integer hyperparameters that may be 0 or negative (registry.validate_model_params)
    INT_MINIMUM = {"encoder_depth": 0, "lambda_encoder_depth": 0, "rank": None}
    #: the family's options (set by each family)
    OPTIONS: FamilyOptions
    #: the family's own settings of strings: their allowed values (from OPTIONS)
    CHOICES: dict[str, tuple[str, ...]] = {}

    def __init_subclass__(cls, **kwargs) -> None:
        # before SequenceClassifier's, which reads the signature (SUPPORTS_PER_STEP)
        cls.CHOICES = cls.OPTIONS.choices()
        P = inspect.Parameter
        cls.__signature__ = inspect.Signature(
            [
                P("n_channels", P.POSITIONAL_OR_KEYWORD, annotation=int),
                P("n_classes", P.POSITIONAL_OR_KEYWORD, annotation=int),
                P("length", P.POSITIONAL_OR_KEYWORD, default=None, annotation=int | None),
                *cls.OPTIONS.parameters(),
                P("per_step", P.KEYWORD_ONLY, default=False, annotation=bool),
            ]
        )
        super().__init_subclass__(**kwargs)

    def __init__(
        self,
        n_channels: int,
        n_classes: int,
        length: int | None = None,
        *,
        per_step: bool = False,
        config: TIDESConfig | None = None,
        **options,
    ) -> None:
        config = self.OPTIONS.config(type(self).__name__, config, options)
        super().__init__(n_channels, n_classes, length, per_step)
        if config.encoder_depth < 0 or config.n_layers < 1:
            raise ValueError(
                f"need encoder_depth >= 0, n_layers >= 1: {config.encoder_depth}, {config.n_layers}"
            )
        self.config = config
        self.time_channel = config.time_channel  # t / (L − 1) as an input channel
        self.mask_channels = config.mask_channels  # the observation mask as C more channels
        if config.mask_channels:
            self.INPUTS = (*self.INPUTS, "mask")
        n_in = self.n_channels * (1 + int(config.mask_channels)) + int(config.time_channel)
        self.encoder = GluEncoder(n_in, config.d_model, config.encoder_depth)
        self.blocks = nn.ModuleList([TIDESBlock(config) for _ in range(config.n_layers)])
        # the reference's head (tides.py:1135)
        self.head = nn.Linear(config.d_model, self.n_classes)

    def set_recurrent(self, recurrent: bool = True) -> _TimeAwareSSMClassifier:
        """Every layer step by step (True) or by the parallel scan (False, the default)."""
        for block in self.blocks:
            block.ssm.recurrent = recurrent
        return self

    def forward(
        self, x: torch.Tensor, steps: torch.Tensor | None = None, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """x (B, C, L), steps (B, L) physical step sizes (None: all 1), mask (B, C, L) which
        values were observed (read with ``mask_channels``; None: all) -> (B, K) or (B, L, K)."""
        batch, _, length = x.shape
        if steps is None:
            steps = x.new_ones(batch, length)  # regular data
        elif tuple(steps.shape) != (batch, length):
            raise ValueError(f"steps must be (B, L) = {(batch, length)}, got {tuple(steps.shape)}")
        steps = steps.to(x.dtype)
        if self.mask_channels:
            observed = torch.ones_like(x) if mask is None else mask.to(x.dtype)
            x = torch.cat([x, observed], dim=1)  # (B, 2C, L)
        if self.time_channel:
            x = with_time_channel(x, steps, self.length or length)  # (B, C + 1, L)
        u = self.encoder(x.transpose(1, 2))  # (B, L, H)
        for block in self.blocks:
            u = block(u, steps)
        return self.readout(u)  # (B, K), or (B, L, K) per step

    # --- streaming (inference): one time step at a time, an O(layers · S) state per row
    def _check_streamable(self) -> None:
        if self.training:  # BatchNorm would use the batch's statistics, dropout be active
            raise RuntimeError(
                "step is for inference: call .eval() first (BatchNorm and dropout in "
                "training mode make a stream differ from forward)"
            )
        if any(block.ssm.bidirectional for block in self.blocks):
            raise ValueError("a bidirectional layer has no step mode (it reads the future)")
        if self.time_channel and not self.length:
            raise ValueError(
                "time_channel needs the model's length (t / (L − 1)) to stream: build it with "
                "length=L"
            )

    def initial_state(self, batch: int, device=None) -> dict:
        """The state of a stream of ``batch`` rows before its first step: each block's SSM
        state h (B, S) (complex; real with ``real_lambda``) at zero, the running sum of the
        features for the mean pooling, the number of steps and the elapsed time Σ Δt (B,)
        (read by ``time_channel``). Its size does not depend on the stream's length."""
        self._check_streamable()
        ref = self.head.weight
        device = device or ref.device
        complex_dtype = ref.dtype.to_complex()
        states = [
            torch.zeros(batch, b.ssm.S, dtype=ref.dtype if b.ssm.real else complex_dtype,
                        device=device)
            for b in self.blocks
        ]  # fmt: skip
        return {
            "ssm": states,
            "sum": None,  # running sum of the last block's features (B, H)
            "steps": 0,
            "time": torch.zeros(batch, dtype=ref.dtype, device=device),
        }

    def step(
        self,
        x_t: torch.Tensor,
        state: dict,
        dt_t: torch.Tensor | None = None,
        mask_t: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, dict]:
        """One time step of ``forward`` in evaluation mode: values x_t (B, C), the physical
        step dt_t (B,) (None: 1, as ``steps=None``), mask_t (B, C) (read with
        ``mask_channels``; None: all observed) -> (out, state). ``out``: with ``per_step``
        this step's output (B, K); else the head on the running mean of the features so
        far (B, K), which after the last step equals ``forward`` on the whole series."""
        self._check_streamable()
        batch = x_t.shape[0]
        if dt_t is None:
            dt_t = x_t.new_ones(batch)
        elif tuple(dt_t.shape) != (batch,):
            raise ValueError(f"dt_t must be (B,) = {(batch,)}, got {tuple(dt_t.shape)}")
        dt_t = dt_t.to(x_t.dtype)
        if self.mask_channels:
            observed = torch.ones_like(x_t) if mask_t is None else mask_t.to(x_t.dtype)
            x_t = torch.cat([x_t, observed], dim=1)  # (B, 2C)
        time = state["time"] + dt_t  # forward's cumsum of the steps, one term at a time
        if self.time_channel:  # with_time_channel: t / (L − 1), prepended
            x_t = torch.cat([(time / max(int(self.length) - 1, 1)).unsqueeze(1), x_t], dim=1)
        u = self.encoder(x_t)  # (B, H): the encoder is pointwise over time
        new_ssm = []
        for block, h in zip(self.blocks, state["ssm"], strict=True):
            # TIDESBlock.forward at one step; BatchNorm in eval mode is per channel and step
            z = block.norm(u)
            y, h = block.ssm.step(z, dt_t, h)  # the parallel scan's discretisation
            z = block.dropout(F.gelu(y))
            u = u + block.dropout(block.glu(z))
            new_ssm.append(h)
        total = u if state["sum"] is None else state["sum"] + u
        state = {"ssm": new_ssm, "sum": total, "steps": state["steps"] + 1, "time": time}
        if self.per_step:
            return self.head(u), state
        return self.head(total / state["steps"]), state


class TIDESClassifier(_TimeAwareSSMClassifier):
    """TIDES: Re Λ, Im Λ and B/C each LTI or input-dependent; defaults: the reference's UEA
    settings (``TIDESConfig``)."""

    TEST_PARAMS = {"d_model": 8, "ssm_size": 8, "ssm_blocks": 2, "rank": 2, "encoder_depth": 0}
    OPTIONS = FamilyOptions(
        names=(
            "d_model",
            "ssm_size",
            "ssm_blocks",
            "n_layers",
            "dropout",
            "encoder_depth",
            "lambda_encoder_depth",
            "ff_mult",
            "bidirectional",
            "rank",
            "lambda_re_mode",
            "lambda_im_mode",
            "bc_mode",
            "lambda_re_map",
            "clip_eigs",
            "conj_sym",
            "real_lambda",
            "discretization",
            "dt_min",
            "dt_max",
            "proj_norm",
            "proj_init",
            "mask_channels",
        )
    )


class S5Classifier(_TimeAwareSSMClassifier):
    """S5: TIDES with Λ, B and C all LTI (the same modules: a TIDESClassifier with the three
    modes ``lti`` has the same parameters and output)."""

    TEST_PARAMS = {"d_model": 8, "ssm_size": 8, "ssm_blocks": 2, "encoder_depth": 0}
    OPTIONS = FamilyOptions(
        names=(
            "d_model",
            "ssm_size",
            "ssm_blocks",
            "n_layers",
            "dropout",
            "encoder_depth",
            "ff_mult",
            "bidirectional",
            "lambda_re_map",
            "clip_eigs",
            "conj_sym",
            "real_lambda",
            "discretization",
            "dt_min",
            "dt_max",
            "time_channel",
            "block_glu",
        ),
        fixed={"lambda_re_mode": "lti", "lambda_im_mode": "lti", "bc_mode": "lti"},
    )


class MambaSClassifier(_TimeAwareSSMClassifier):
    """MambaS (the reference's "Mamba surrogate"): LTI Λ, B/C modulated per state by the
    input, Δ = softplus(W [z_t, Δt_t] + b) (W = 0, b = 0.5413 at the start): the step is
    learnt from the input and Δt, not the physical step. No RMSNorm on the projections by
    default (the toy model has none)."""

    TEST_PARAMS = {"d_model": 8, "ssm_size": 8, "ssm_blocks": 2, "encoder_depth": 0}
    OPTIONS = FamilyOptions(
        names=(
            "d_model",
            "ssm_size",
            "ssm_blocks",
            "n_layers",
            "dropout",
            "encoder_depth",
            "ff_mult",
            "bidirectional",
            "lambda_re_map",
            "clip_eigs",
            "conj_sym",
            "real_lambda",
            "discretization",
            "proj_norm",
            "proj_init",
            "time_channel",
        ),
        fixed={
            "lambda_re_mode": "lti",
            "lambda_im_mode": "lti",
            "bc_mode": "input_dependent",
            "step_mode": "input_dependent",
            "rank": -1,
        },
        defaults={"proj_norm": False},
    )
