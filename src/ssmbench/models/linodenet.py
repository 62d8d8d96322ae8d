"""LinODEnet: a latent linear ODE with an observation filter (Scholz et al.), as a family.

Paper: R. Scholz, S. Born, N. Duong-Trung, M. N. Cruz-Bournazou, L. Schmidt-Thieme,
"Latent Linear ODEs with Neural Kalman Filtering for Irregular Time Series Forecasting"
(2022). The Physiome-ODE leaderboard (Klötergens et al., "Physiome-ODE: A Benchmark for
Irregularly Sampled Multivariate Time Series Forecasting Based on Biological ODEs", ICLR
2025) trains it as one of its forecasting baselines.

Sources (facts were taken from them, cited by file and line; the code is written here)
--------------------------------------------------------------------------------------
* The leaderboard's copy, https://github.com/kloetergensc/Physiome-ODE at commit 4829169
  (2025-08-01): ``experiments/training/models/linodenet/`` (``models/_linodenet.py``
  LinODEnet, ``models/filters/_filters.py`` LinearFilter, NonLinearFilter,
  SequentialFilter, ``models/system/_system.py`` LinODECell,
  ``models/encoders/resnet.py`` ResNet, ResNetBlock, ``utils/layers.py`` ReverseDense,
  ReZeroCell, ``models/embeddings/_embeddings.py`` ConcatEmbedding, ConcatProjection,
  ``initializations/functional.py``, ``utils/data_utils.py`` linodenet_collate) and its
  training script ``experiments/training/train_linodenet.py``. This is what ran.
* The authors' repository, https://github.com/randolf-scholz/linodenet at commit a2e49aa
  (2023-10-19), ``src/linodenet/``: the same model (LinODEnet, SequentialFilter of
  [LinearFilter, NonLinearFilter, NonLinearFilter], LinODECell with ``scalar`` 0, ResNet of
  ReverseDense blocks); its LinODECell defaults to a Gaussian kernel, which the leaderboard
  script overrides with ``skew-symmetric``.

Notation: B batch, C input channels, L steps, K outputs, H = ``hidden_size`` (the filtered
observation space), N = ``latent_size`` (the linear ODE), Δ_t the physical step size.

Model (per row; ``_linodenet.py:299-385``)
-----------------------------------------
    y_t = observations at step t, padded with "unobserved" to H channels, m_t their mask
    ẑ⁺_{-1} = z0                                        (learnt, N)
    for t = 0 .. L-1:
        ẑ⁻_t = exp(A Δ_t) ẑ⁺_{t-1}                      System: A = γ W (LinODECell)
        x̂⁻_t = decoder(ẑ⁻_t)[:H]                        Decoder, ConcatProjection
        x̂⁺_t = filter(y_t, m_t, x̂⁻_t)                   SequentialFilter
        ẑ⁺_t = encoder([x̂⁺_t, p])                       ConcatEmbedding (p learnt, N - H), Encoder
    prediction at step t: x̂⁺_t[:C]                       (the reference's ``yhat``)

Δ_0 is taken as 0 (the reference's ``DT = diff(T, prepend=T[..., 0])``, line 344): z0 is
the latent state at the row's first time. Our training side passes Δ_0 = t_0 (the time from
0); ``propagate_first_step=True`` uses it instead.

* System (``_system.py:55-181``): A = γ W, ``scalar`` γ = 0 at the start and learnt,
  ``weight`` W (N, N) from ``kernel_initialization`` (the leaderboard: "skew-symmetric",
  ``train_linodenet.py:21,117``), ``kernel_parametrization`` None = identity: W is free in
  training (no projection onto skew-symmetric matrices, no regularisation in the loss), only
  its initial value is skew-symmetric; exp(A Δ) by ``torch.linalg.matrix_exp``.
  Initialisations (``initializations/functional.py``): skew-symmetric (G − Gᵀ)/√2 (102-122),
  gaussian G (35-55), symmetric (G + Gᵀ)/√2 (80-99), diagonally dominant I + G' (58-77),
  G_ij ~ N(0, 1/N), G'_ij ~ N(0, 1/N²).
* Encoder and decoder (``resnet.py:142-230``, ``layers.py:20-151``): ResNet of
  ``num_blocks`` 5 blocks on N, x ← x + block(x), block = ReverseDense, ReverseDense,
  ReZeroCell (``num_layers`` 2, ``rezero`` True); ReverseDense(x) = Linear(ReLU(x)) with
  bias, weight kaiming_uniform (ReLU gain, fan_in: U(±√(6/N))), bias kaiming_uniform of
  bias[None] (its fan_in is N as well: U(±√(6/N))); ReZeroCell: a scalar, 0 at the start
  (so encoder and decoder start as the identity).
* Filter (``_filters.py:186-316, 319-436, 760-795``; ``SequentialFilter.HP |
  {"autoregressive": True}``, ``train_linodenet.py:116``): LinearFilter then two
  NonLinearFilters, each x ← f(x), all on H with the observation matrix the identity
  (autoregressive). With r = Π_m(x − y) (zero where unobserved):
      LinearFilter:     z = Π_m(r + ε_A A r);  x' = x − α (z + ε_B B z)
      NonLinearFilter:  z = B Π_m(A r);        x' = x − ε ψ(z),  ψ = ReverseDense × 2 (no bias)
  α = 1 ("last-value", not learnt: x'_i = y_i where observed at the start), ε_A = ε_B = ε = 0
  at the start, A, B (H, H) ~ N(0, 1/H), ψ's weights kaiming_uniform (ReLU).
  An unobserved step (m_t all False, every forecast step) has r = 0, so each filter returns
  its input: x̂⁺_t = x̂⁻_t exactly (ψ(0) = 0: ReLU and no bias), and the step is prediction
  only. The latent state still goes through decoder and encoder (ẑ⁺ = enc(dec(ẑ⁻)), the
  identity only at the start), as in the reference.
* Sizes: hidden_size H ≥ C (the reference pads the observations with NaN channels to H;
  with H < C it warns and uses H = C, ``_linodenet.py:249-255``) and H ≤ N
  (ConcatEmbedding asserts it). The Physiome-ODE defaults: H = N = 128
  (``train_linodenet.py:19-20``).
* The data (``utils/data_utils.py:41-87``): one merged, time-sorted line per row, the
  observed steps then the forecast steps with NaN values; the loss is the MSE over the
  observed targets at the forecast steps (``train_linodenet.py:86-87, 128-132``): our
  Physiome layout (``ssmbench.data.physiome.dataset``) and objective, with M for the NaNs.

Hyperparameters (ours -> the reference's configuration keys)
-----------------------------------------------------------
    hidden_size           LinODEnet ``hidden_size`` (``-hs``, 128)
    latent_size           LinODEnet ``latent_size`` (``-ls``, 128)
    n_blocks              Encoder / Decoder ``ResNet.HP["num_blocks"]`` (5)
    block_depth           ``ResNetBlock.HP["num_layers"]`` (2 ReverseDense per block)
    n_nonlinear_filters   NonLinearFilters in ``SequentialFilter.HP["layers"]`` (2)
    filter_depth          ``NonLinearFilter.HP["num_blocks"]`` (2 ReverseDense in ψ)
    filter_alpha          ``LinearFilter.HP["alpha"]`` ("last-value" = 1; "kalman" ½,
                          "first-value" 0)
    kernel_init           ``LinODECell`` ``kernel_initialization`` (``-ki``, "skew-symmetric")
    kernel_scalar         ``LinODECell.HP["scalar"]`` (γ at the start, 0.0)
    propagate_first_step  (ours) False: Δ_0 = 0 as the reference; True: Δ_0 from ``steps``

Parameter count (the leaderboard configuration, H = N = 128, any C ≤ 128, e.g. a
4-channel Physiome set): **510,607 here, 510,607 in the reference** (trainable; the
reference's ``train_linodenet.py:237`` counts ``requires_grad`` parameters; its LinearFilter
α is a frozen parameter, 510,608 with it). By hand from the reference's code:
filter 163,844 = LinearFilter 2 H² + 2 (A, B, ε_A, ε_B) + 2 × NonLinearFilter (4 H² + 1:
A, B, two bias-free ReverseDense, ε); encoder and decoder 2 × 165,125 = 2 × 5 blocks ×
(2 (H² + H) + 1); system N² + 1 = 16,385; z0 N = 128; the two padding vectors N − H = 0.
Checked by building the leaderboard copy's ``LinODEnet(**MODEL_CONFIG)`` with
``input_size=4`` (torch 2.13, Python 3.11): 510,607 trainable. C does not enter the count
(it only sets how many of the H channels are observed). The per-step head for Physiome
(K = C) has no parameters; with another K, or pooled (classification), a Linear(H, K) is
added (H K + K).

Deviations
----------
* Inputs: values X (B, C, L) with the mask M (B, C, L) instead of NaN for missing values
  (a value counts as observed where M is True and it is finite; no mask: every finite value);
  ``steps`` Δ (B, L) instead of timestamps (the reference's Δ_t = t_t − t_{t−1}, the same
  thing). Padding has Δ = 0 and no observation, which carries ẑ through the ODE unchanged
  (exp(0) = I); the reference pads timestamps with 0, a negative Δ after a row's last step.
  Both come after the row's last target, so neither reaches the loss (the model is causal).
* Outputs: ``per_step`` with K = C gives the reference's prediction x̂⁺[:C] (B, L, C); any
  other per-step K reads x̂⁺ (B, L, H) through Linear(H, K); classification (ours: the
  reference only forecasts) reads the mean over steps of x̂⁺ through Linear(H, K).
* C > hidden_size: as the reference, H = C; and N = max(latent_size, H) (the reference
  would stop at its assertion H ≤ N). So a wide input (e.g. 1345 channels) builds, at
  H = N = C: large and slow (matrices of C², a C × C matrix exponential).
* Parameters that are not trained are not parameters: α is a buffer (the reference: a frozen
  parameter), ConcatProjection's padding vector (a parameter the reference never uses in
  its forward pass) does not exist. The reference's top-level ``kernel`` attribute is the
  system's W itself (one tensor), as here.
* Computation, same function: one matrix exponential per distinct Δ of the batch (the
  reference computes one per row and step); identical Δ give identical exp(A Δ), so the
  result is the reference's up to the rounding of a batched ``matrix_exp`` and of matmul
  order. Where the distinct Δ of a batch would need more than ``BANK_ELEMENTS`` floats,
  each step computes its own (as the reference). Long sequences are run in checkpointed
  chunks of ``CHUNK_STEPS`` steps when training (memory; the result is the same): a
  reentrant checkpoint (one autograd node per chunk; the non-reentrant one keeps a node per
  operation, whose many small allocations fragmented glibc's heap to ~1.6 MB of RSS per
  step at B = 32), so gradients come from ``backward()``, not ``torch.autograd.grad``.
* Random draws (W, A, B, z0, p, kaiming) come from torch's generator in our module order,
  not the reference's, so a seed does not give the reference's initial weights.

Checked against the reference (outside the test suite, which cannot import it): the
leaderboard copy's LinODEnet built as ``train_linodenet.py:111-122`` (C = 4, H = N = 128;
and C = 3, H = 16, N = 24), its zero scalars moved off zero, its weights loaded into this
model; on a float64 batch of 5 irregular rows (30 steps, 30 % observed, the last 12 steps
forecast only) the per-step outputs agree exactly (max |difference| 0, with the shared and
with the per-step exponentials) and the gradients of a masked MSE to 1e-15 (relative); with
regular steps (one shared matrix per step) to 1e-15 and 1e-10 (matmul order).

Cost: the matrix exponentials' backward pass dominates on irregular data (a Physiome batch
of 32 rows has ~50 distinct Δ); on regular data (unit steps) each step multiplies by one
shared matrix, and the step-by-step loop itself dominates.

MACs (``count_macs``; see ssmbench.complexity)
------------------------------------------------
``"paper"``: what ptflops' module hooks see: the ReverseDense Linears and ReLUs of encoder,
decoder and filter, per step, and the head; the filters' matrix products and the ODE step
are tensor operations (as in the reference) and are not counted. ``"full"`` adds per row and
step: exp(A Δ) ẑ (N²), the LinearFilter's A and B (2 H²) and each NonLinearFilter's A and B
(2 H²), plus the element-wise work of the filters (≈ 6 H each); the matrix exponentials
themselves are not counted (as no family counts its exponentials). On the meta device (how
runs on series longer than ``complexity.AUTO_CPU_MAX_LENGTH`` count) the forward pass
evaluates one step on all L·B rows at once: ptflops counts a Linear per row, so the
figure is the loop's (tests hold meta and CPU equal) at a fraction of the meta device's
per-operation cost (≈ 20 ms per step and operation chain otherwise).

Training settings of the leaderboard (``experiments/training/train_linodenet.py``)
----------------------------------------------------------------------------------
AdamW (151) with lr 1e-3 (16), betas (0.9, 0.999) (17), weight decay 1e-3 (18), on every
parameter (151); batch 32 (15; the test loader also 32, ``utils.py:143-145``); at most 100
epochs (12); early stopping after 10 epochs without a lower validation MSE (13, 204-221),
the best checkpoint tested (229-232); no learning-rate schedule, no gradient clipping; loss
the MSE over the observed targets (86-87, 103, 128-132): the suites' ``model_overrides``
of LinODEnet in params.yaml.
"""

from __future__ import annotations

import copy
import math

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

from .frame import SequenceClassifier

__all__ = [
    "BANK_ELEMENTS",
    "CHUNK_STEPS",
    "FILTER_ALPHAS",
    "KERNEL_INITS",
    "LinODECell",
    "LinODEnetModel",
    "LinearFilter",
    "NonLinearFilter",
    "ResNet",
    "ReverseDense",
    "SequentialFilter",
    "kernel_initialization",
]

#: the reference's ``kernel_initialization`` names we offer (initializations/__init__.py)
KERNEL_INITS = ("skew-symmetric", "gaussian", "symmetric", "diagonally_dominant")
#: LinearFilter ``alpha`` by name (_filters.py:255-263)
FILTER_ALPHAS = {"last-value": 1.0, "first-value": 0.0, "kalman": 0.5}
#: at most this many floats for the batch's matrix exponentials (one per distinct Δ);
#: beyond it each step computes its own
BANK_ELEMENTS = 2**25
#: when training on more steps than this, the steps run in checkpointed chunks of it
CHUNK_STEPS = 128


def kernel_initialization(name: str, n: int) -> torch.Tensor:
    """The reference's initial kernel W (n, n) (initializations/functional.py), G_ij ~
    N(0, 1/n): "skew-symmetric" (G − Gᵀ)/√2, "gaussian" G, "symmetric" (G + Gᵀ)/√2,
    "diagonally_dominant" I + G' with G'_ij ~ N(0, 1/n²)."""
    if name == "diagonally_dominant":
        return torch.eye(n) + torch.randn(n, n) / n
    if name not in KERNEL_INITS:
        raise ValueError(f"kernel_init must be one of {KERNEL_INITS}, got {name!r}")
    g = torch.randn(n, n) / math.sqrt(n)
    if name == "skew-symmetric":
        return (g - g.T) / math.sqrt(2)
    if name == "symmetric":
        return (g + g.T) / math.sqrt(2)
    return g


class ReverseDense(nn.Module):
    """x -> Linear(ReLU(x)) (layers.py:100-151): weight kaiming_uniform (ReLU gain); the
    bias (if any) kaiming_uniform of bias[None], whose fan_in is the output size."""

    def __init__(self, n_in: int, n_out: int, bias: bool = True) -> None:
        super().__init__()
        self.activation = nn.ReLU()
        self.linear = nn.Linear(n_in, n_out, bias=bias)
        nn.init.kaiming_uniform_(self.linear.weight, nonlinearity="relu")
        if bias:
            with torch.no_grad():
                nn.init.kaiming_uniform_(self.linear.bias[None], nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(self.activation(x))


class ReZero(nn.Module):
    """x -> s x with a learnt scalar s, 0 at the start (ReZeroCell, layers.py:20-68)."""

    def __init__(self) -> None:
        super().__init__()
        self.scalar = nn.Parameter(torch.tensor(0.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scalar * x


class ResNet(nn.Module):
    """x <- x + block(x) for each of ``n_blocks`` blocks, block = ``depth`` ReverseDense
    (with bias) then ReZero (resnet.py:142-230)."""

    def __init__(self, size: int, n_blocks: int, depth: int) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(
            [
                nn.Sequential(*[ReverseDense(size, size) for _ in range(depth)], ReZero())
                for _ in range(n_blocks)
            ]
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = x + block(x)
        return x


class LinODECell(nn.Module):
    """ẋ = A x over a step Δ: x -> exp(A Δ) x, A = γ W (_system.py:18-181): γ a learnt
    scalar (``scalar``, 0 at the start), W a learnt matrix initialised by ``init``."""

    def __init__(self, size: int, init: str = "skew-symmetric", scalar: float = 0.0) -> None:
        super().__init__()
        self.scalar = nn.Parameter(torch.tensor(float(scalar)))
        self.weight = nn.Parameter(kernel_initialization(init, size))

    def kernel(self) -> torch.Tensor:
        """A = γ W (the reference's kernel, parametrisation the identity)."""
        return self.scalar * self.weight

    def forward(self, dt: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """dt (B,), x (B, n) -> exp(A dt_b) x_b (B, n), one matrix exponential per row."""
        expm = torch.linalg.matrix_exp(self.kernel() * dt[:, None, None])
        return (expm @ x.unsqueeze(-1)).squeeze(-1)


class _Propagators:
    """exp(A Δ_{b,t}) for every row b and step t of a batch: one matrix exponential per
    distinct Δ (a bank, indexed per step; a step whose rows share one Δ multiplies by one
    matrix), or, where the bank would exceed ``BANK_ELEMENTS`` floats (and on the meta
    device, where the distinct values are unknown, or with ``share=False``), one per row at
    each step."""

    def __init__(self, kernel: torch.Tensor, dt: torch.Tensor, share: bool = True) -> None:
        self.kernel, self.dt, self.bank = kernel, dt, None
        n = kernel.shape[-1]
        if not share or dt.device.type == "meta" or dt.numel() == 0:
            return
        values, inverse = torch.unique(dt, return_inverse=True)
        if values.numel() * n * n > BANK_ELEMENTS:
            return
        self.bank = torch.linalg.matrix_exp(kernel * values[:, None, None])  # (U, n, n)
        self.inverse = inverse  # (B, L) index into the bank
        cpu = inverse.cpu()
        self.uniform = (cpu == cpu[:1]).all(dim=0).tolist()  # one Δ for the whole step
        self.first = cpu[0].tolist()

    @property
    def source(self) -> torch.Tensor:
        """The tensor the propagators are computed from: the bank, or the kernel A."""
        return self.kernel if self.bank is None else self.bank

    def rebind(self, source: torch.Tensor) -> _Propagators:
        """The same propagators computed from ``source`` (a checkpointed chunk's input)."""
        other = copy.copy(self)
        if self.bank is None:
            other.kernel = source
        else:
            other.bank = source
        return other

    def apply(self, t: int, z: torch.Tensor) -> torch.Tensor:
        """exp(A Δ_{b,t}) z_b for every row: z (B, n) -> (B, n)."""
        if self.bank is None:
            expm = torch.linalg.matrix_exp(self.kernel * self.dt[:, t, None, None])
        elif self.uniform[t]:
            return z @ self.bank[self.first[t]].T
        else:
            expm = self.bank[self.inverse[:, t]]
        return (expm @ z.unsqueeze(-1)).squeeze(-1)


class LinearFilter(nn.Module):
    """x' = x − α (z + ε_B B z), z = Π_m(r + ε_A A r), r = Π_m(x − y) (_filters.py:186-316,
    autoregressive: the observation matrix is the identity). α fixed, ε_A = ε_B = 0 at the
    start, A, B ~ N(0, 1/n)."""

    def __init__(self, size: int, alpha: float = 1.0) -> None:
        super().__init__()
        self.register_buffer("alpha", torch.tensor(float(alpha)))
        self.epsilon_a = nn.Parameter(torch.tensor(0.0))
        self.epsilon_b = nn.Parameter(torch.tensor(0.0))
        self.A = nn.Parameter(torch.randn(size, size) / math.sqrt(size))
        self.B = nn.Parameter(torch.randn(size, size) / math.sqrt(size))

    def forward(self, y: torch.Tensor, m: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """y (B, n) observations (any value where not observed), m (B, n) bool, x (B, n)."""
        r = torch.where(m, x - y, torch.zeros_like(x))
        z = torch.where(m, r + self.epsilon_a * (r @ self.A.T), torch.zeros_like(x))
        z = z + self.epsilon_b * (z @ self.B.T)
        return x - self.alpha * z


class NonLinearFilter(nn.Module):
    """x' = x − ε ψ(B Π_m(A r)), r = Π_m(x − y), ψ = ``depth`` bias-free ReverseDense
    (_filters.py:319-436). ε = 0 at the start, A, B ~ N(0, 1/n)."""

    def __init__(self, size: int, depth: int = 2) -> None:
        super().__init__()
        self.layers = nn.Sequential(*[ReverseDense(size, size, bias=False) for _ in range(depth)])
        self.epsilon = nn.Parameter(torch.tensor(0.0))
        self.A = nn.Parameter(torch.randn(size, size) / math.sqrt(size))
        self.B = nn.Parameter(torch.randn(size, size) / math.sqrt(size))

    def forward(self, y: torch.Tensor, m: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        zero = torch.zeros_like(x)
        r = torch.where(m, x - y, zero)
        z = torch.where(m, r @ self.A.T, zero) @ self.B.T
        return x - self.epsilon * self.layers(z)


class SequentialFilter(nn.Module):
    """LinearFilter, then ``n_nonlinear`` NonLinearFilters, each x <- f(y, m, x)
    (_filters.py:760-795, ``layers: [LinearFilter, NonLinearFilter, NonLinearFilter]``)."""

    def __init__(self, size: int, n_nonlinear: int = 2, depth: int = 2, alpha: float = 1.0):
        super().__init__()
        self.layers = nn.ModuleList(
            [LinearFilter(size, alpha), *[NonLinearFilter(size, depth) for _ in range(n_nonlinear)]]
        )

    def forward(self, y: torch.Tensor, m: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(y, m, x)
        return x


class _LeadingChannels(nn.Module):
    """x (..., H) -> x[..., :k]: the reference's prediction (the first C filtered channels)."""

    def __init__(self, k: int) -> None:
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[..., : self.k]


class LinODEnetModel(SequenceClassifier):
    """LinODEnet (see the module docstring): x (B, C, L), steps Δ (B, L), mask M (B, C, L)
    -> (B, K), or per step (B, L, K) (with K = C: the reference's forecast x̂⁺[:C])."""

    INPUTS = ("values", "steps", "mask")
    TEST_PARAMS = {"hidden_size": 8, "latent_size": 8, "n_blocks": 1}
    CHOICES = {"kernel_init": KERNEL_INITS, "filter_alpha": tuple(FILTER_ALPHAS)}
    INT_MINIMUM = {"n_blocks": 0, "n_nonlinear_filters": 0}

    def __init__(
        self,
        n_channels: int,
        n_classes: int,
        length: int | None = None,
        hidden_size: int = 128,
        latent_size: int = 128,
        n_blocks: int = 5,
        block_depth: int = 2,
        n_nonlinear_filters: int = 2,
        filter_depth: int = 2,
        filter_alpha: str = "last-value",
        kernel_init: str = "skew-symmetric",
        kernel_scalar: float = 0.0,
        propagate_first_step: bool = False,
        per_step: bool = False,
    ) -> None:
        super().__init__(n_channels, n_classes, length, per_step)
        for name, value, minimum in [
            ("hidden_size", hidden_size, 1),
            ("latent_size", latent_size, 1),
            ("n_blocks", n_blocks, 0),
            ("block_depth", block_depth, 1),
            ("n_nonlinear_filters", n_nonlinear_filters, 0),
            ("filter_depth", filter_depth, 1),
        ]:
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ValueError(
                    f"LinODEnet: {name} must be an integer >= {minimum}, got {value!r}"
                )
        if hidden_size > latent_size:
            raise ValueError(
                f"LinODEnet: hidden_size ({hidden_size}) must not exceed latent_size "
                f"({latent_size}): the encoder pads the filtered state up to the latent size"
            )
        if kernel_init not in KERNEL_INITS:
            raise ValueError(
                f"LinODEnet: kernel_init must be one of {KERNEL_INITS}, got {kernel_init!r}"
            )
        if filter_alpha not in FILTER_ALPHAS:
            raise ValueError(
                f"LinODEnet: filter_alpha must be one of {tuple(FILTER_ALPHAS)}, "
                f"got {filter_alpha!r}"
            )
        if not math.isfinite(kernel_scalar):
            raise ValueError(f"LinODEnet: kernel_scalar must be finite, got {kernel_scalar!r}")
        # the reference's fallback for C > hidden_size, and ours for hidden > latent_size
        self.hidden_size = H = max(hidden_size, n_channels)
        self.latent_size = N = max(latent_size, H)
        self.propagate_first_step = propagate_first_step
        #: one matrix exponential per distinct Δ (False: per row and step, the reference's)
        self.share_propagators = True
        self.z0 = nn.Parameter(torch.randn(N))
        # ConcatEmbedding's padding [x̂, p] (none when H = N)
        self.embedding_padding = nn.Parameter(torch.randn(N - H)) if N > H else None
        self.encoder = ResNet(N, n_blocks, block_depth)
        self.system = LinODECell(N, kernel_init, kernel_scalar)
        self.decoder = ResNet(N, n_blocks, block_depth)
        self.filter = SequentialFilter(
            H, n_nonlinear_filters, filter_depth, FILTER_ALPHAS[filter_alpha]
        )
        if per_step and n_classes == n_channels:
            self.head: nn.Module = _LeadingChannels(n_channels)  # the reference's x̂⁺[:C]
        else:
            self.head = nn.Linear(H, n_classes)

    # ------------------------------------------------------------------ forward
    def _step(
        self, props: _Propagators, t: int, z: torch.Tensor, y: torch.Tensor, m: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One step: ẑ⁻ = exp(AΔ_t) ẑ⁺, x̂⁻ = dec(ẑ⁻)[:H], x̂⁺ = filter, ẑ⁺ = enc([x̂⁺, p])."""
        H = self.hidden_size
        z_pre = props.apply(t, z)
        x_pre = self.decoder(z_pre)[:, :H]
        x_post = self.filter(y, m, x_pre)
        if self.embedding_padding is not None:
            pad = self.embedding_padding.expand(x_post.shape[0], -1)
            z_post = self.encoder(torch.cat([x_post, pad], dim=-1))
        else:
            z_post = self.encoder(x_post)
        return z_post, x_post

    def _steps(self, props, start, z, y, m):
        """Steps start, start + 1, ... of y, m (k, B, H): (the last ẑ⁺, x̂⁺ (k, B, H))."""
        outputs = []
        for k in range(y.shape[0]):
            z, x_post = self._step(props, start + k, z, y[k], m[k])
            outputs.append(x_post)
        return z, torch.stack(outputs)

    def _checkpointed_steps(self, source, z, y, m, props, start):
        # a reentrant checkpoint: one autograd node per chunk (a graph of every operation of
        # every step, as the non-reentrant one keeps, fragments the heap of a long run); the
        # propagators' source is an input, so its gradient leaves the chunk once
        return self._steps(props.rebind(source), start, z, y, m)

    def forward(
        self, x: torch.Tensor, steps: torch.Tensor | None = None, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """x (B, C, L); steps (B, L) physical step sizes (None: all 1); mask (B, C, L) which
        values were observed (None: every finite value) -> (B, K) or (B, L, K)."""
        batch, channels, length = x.shape
        if channels != self.n_channels:
            raise ValueError(f"x has {channels} channels, the model {self.n_channels}")
        if steps is None:
            steps = x.new_ones(batch, length)
        elif tuple(steps.shape) != (batch, length):
            raise ValueError(f"steps must be (B, L) = {(batch, length)}, got {tuple(steps.shape)}")
        steps = steps.to(x.dtype)
        observed = torch.isfinite(x)
        if mask is not None:
            if tuple(mask.shape) != tuple(x.shape):
                raise ValueError(
                    f"mask must be (B, C, L) = {tuple(x.shape)}, got {tuple(mask.shape)}"
                )
            observed = observed & mask.to(torch.bool)
        if not self.propagate_first_step:  # Δ_0 = 0: z0 sits at the row's first time
            steps = torch.cat([torch.zeros_like(steps[:, :1]), steps[:, 1:]], dim=1)
        H = self.hidden_size
        # observations (L, B, H), padded with unobserved channels up to H
        y = x.new_zeros(length, batch, H)
        m = torch.zeros(length, batch, H, dtype=torch.bool, device=x.device)
        y[..., :channels] = torch.where(observed, x, torch.zeros_like(x)).permute(2, 0, 1)
        m[..., :channels] = observed.permute(2, 0, 1)
        kernel = self.system.kernel()
        if x.device.type == "meta":
            # shapes only (ptflops on the meta device): one step over all L·B rows calls
            # every module with the rows of the L steps at once, which ptflops counts as the
            # L calls of the loop (per row), at a fraction of the meta device's cost per op
            flat = _Propagators(kernel, steps.T.reshape(-1, 1), share=False)
            z = self.z0.expand(length * batch, -1)
            _, out = self._step(flat, 0, z, y.flatten(0, 1), m.flatten(0, 1))
            return self.readout(out.reshape(length, batch, H).transpose(0, 1))
        props = _Propagators(kernel, steps, self.share_propagators)
        z = self.z0.expand(batch, -1)
        chunked = torch.is_grad_enabled() and length > CHUNK_STEPS and z.requires_grad
        chunk = CHUNK_STEPS if chunked else max(length, 1)
        pieces = []
        for start in range(0, length, chunk):
            ys, ms = y[start : start + chunk], m[start : start + chunk]
            if chunked:
                z, out = checkpoint(
                    self._checkpointed_steps, props.source, z, ys, ms, props, start,
                    use_reentrant=True,
                )  # fmt: skip
            else:
                z, out = self._steps(props, start, z, ys, ms)
            pieces.append(out)
        features = torch.cat(pieces).transpose(0, 1)  # x̂⁺ (B, L, H)
        return self.readout(features)

    # ------------------------------------------------------------------ MACs
    def count_macs(self, inputs: tuple, output: torch.Tensor, convention: str) -> int:
        """The tensor work ptflops does not see (module docstring): 0 under "paper"."""
        if convention != "full":
            return 0
        batch, _, length = inputs[0].shape
        H, N = self.hidden_size, self.latent_size
        n_nonlinear = len(self.filter.layers) - 1
        per = N * N  # exp(AΔ) ẑ
        per += 2 * H * H + 6 * H  # LinearFilter: A, B, masks, differences, scalings
        per += n_nonlinear * (2 * H * H + 4 * H)  # NonLinearFilters: A, B, masks, ε ψ
        return batch * length * per
