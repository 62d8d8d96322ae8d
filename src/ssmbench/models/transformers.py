"""Attention baselines: vanilla Transformer encoder, Informer, iTransformer classifiers.

Sources
-------
* Vaswani et al. (2017), "Attention Is All You Need" (the encoder layer: multi-head
  self-attention and a position-wise feed-forward network, each with a residual
  connection and post-LayerNorm; sinusoidal positional encoding).
* Zhou et al. (2021), "Informer: Beyond Efficient Transformer for Long Sequence Time-Series
  Forecasting" (ProbSparse self-attention; self-attention distilling). Reference
  repository https://github.com/zhouhaoyi/Informer2020: ``models/attn.py``
  (``ProbAttention``: sampled query-key scores, sparsity measure, top-u queries, mean of V
  for the lazy queries), ``models/encoder.py`` (``ConvLayer``: the distilling block),
  ``main_informer.py`` (defaults ``factor`` = 5, ``n_heads`` = 8, ``d_ff`` = 2048,
  ``activation`` = gelu).
* Liu et al. (2024), "iTransformer: Inverted Transformers Are Effective for Time Series
  Forecasting". Reference repository https://github.com/thuml/iTransformer
  (``model/iTransformer.py``: each variate's whole series is one token, embedded by
  ``Linear(L, d_model)``; the encoder attends across variates).
* The time-series classification versions of all three as in the Time-Series-Library,
  https://github.com/thuml/Time-Series-Library: ``models/Transformer.py``,
  ``models/Informer.py``, ``models/iTransformer.py`` (``task_name='classification'``),
  ``layers/Embed.py`` (``TokenEmbedding``: Conv1d(C, d_model, 3, circular padding, no
  bias, Kaiming-normal init; ``PositionalEmbedding``: sinusoidal table),
  ``layers/Transformer_EncDec.py`` (``EncoderLayer``: the FFN as two 1x1 convolutions
  d_model -> d_ff -> d_model; ``Encoder`` with a final LayerNorm),
  ``layers/SelfAttention_Family.py`` (``AttentionLayer``: Q, K, V, output projections
  Linear(d_model, d_model) with bias; ``FullAttention``; ``ProbAttention``).
* The MS4N paper ("A Simple State Space Model Excels at Multivariate Time Series
  Classification", arXiv:2605.27406), Table 4, for the sizes: its per-domain parameter
  counts and MMac pin the widths below (see "Size"). The authors' runner
  (https://github.com/h-saadatmand/MS4N, ``MS4N_Run.py``, ``model/MS4N.py``) shows their
  classifier head, Linear(d, d) -> GELU -> Dropout -> Linear(d, K) after global average
  pooling, which is the head these figures imply for all three models.

This module was written from the facts of those files (shapes, defaults, initialisation,
the ProbSparse algorithm), not copied from them.

Architectures (x: (B, C, L) float32 -> logits (B, K)); d = d_model, F = d_ff, h = n_heads
---------------------------------------------------------------------------------------
Transformer (``TransformerClassifier``) and Informer (``InformerClassifier``)::

    z = Conv1d(C, d, 3, circular, no bias)(x)           (B, d, L)  token embedding
    z = z^T + PE[:L]                                    (B, L, d)  sinusoidal positions
    z = dropout(z)
    for each of e_layers encoder layers:
        a = out_proj(attention(q_proj z, k_proj z, v_proj z))   (B, L, d), h heads of d/h
        z = LayerNorm(z + dropout(a))
        f = Linear(F, d)(dropout(GELU(Linear(d, F)(z))))        (B, L, d)
        z = LayerNorm(z + dropout(f))
        [Informer, distil=True, not after the last layer:
         z = MaxPool(3, 2)(ELU(BatchNorm(Conv1d(d, d, 3, circular)(z))))  (B, ~L/2, d)]
    z = LayerNorm(z)                                    (B, L, d)
    z = mean over L                                     (B, d)
    logits = Linear(d, d) -> GELU -> dropout -> Linear(d, K)     (B, K)

``attention`` is full softmax attention (Transformer; ``F.scaled_dot_product_attention``,
which never materialises the L x L matrix on CUDA) or ProbSparse attention (Informer):
with U = min(factor * ceil(ln L), L) sampled keys per query and u = min(factor *
ceil(ln L), L) active queries, the sparsity measure M(q) = max_j q.k_j - sum_j q.k_j / L
over the sampled keys picks the top-u queries; they attend to all L keys, every other
query outputs the mean of V.

iTransformer (``ITransformerClassifier``)::

    z = Linear(L, d)(x)                                 (B, C, d)  one token per variate
    z = dropout(z)
    e_layers encoder layers as above, full attention over the C tokens    (B, C, d)
    z = LayerNorm(z); z = mean over C                   (B, d)
    logits = Linear(d, d) -> GELU -> dropout -> Linear(d, K)     (B, K)

Size (MS4N Table 4)
-------------------
With d = 64, 8 heads, one encoder layer, the defaults below give

* Transformer and Informer: 285,440 + 192 C + 65 K parameters (token embedding 3 * 64 * C,
  attention 16,640, FFN with F = 2048 264,256, three LayerNorms 384, head 4,160 + 65 K;
  ProbSparse attention has no parameters);
* iTransformer: 87,360 + 64 L + 65 K (embedding 64 L + 64, attention 16,640, FFN with
  F = 512 66,112, LayerNorms 384, head 4,160 + 65 K).

Ours vs Table 4, per MONSTER domain (``complexity.domain_averages``, "paper" MMac):

    params %diff   Audio   EEG     HAR     Satellite  Other   Counts
    Transformer    +0.08   +0.001  +0.001  +0.001     +0.001  +0.14
    Informer       +0.27   +0.27   +0.27   +0.27      +0.27   +0.27
    iTransformer   -3.24    0.000   0.000   0.000      0.000   0.000
    MMac %diff
    Transformer    -2.14   +0.04   +0.03   +0.05      +0.05   +0.26
    Informer       +0.60   +0.44   +0.43   +0.46      +0.46   +0.44
    iTransformer   -3.01   -0.30   -0.03   -0.10      -0.39   +1.85

The formulas reproduce the published parameter counts to the unit for the iTransformer
(five domains) and to 3 parameters for the Transformer (four domains). The Informer's
published counts are 780 below ours in all six domains (and its MMac ~1,270 MACs per
step below, after the ProbSparse products): some small part of the authors' Informer is
smaller, which the figures do not identify. The Audio rows do not fit the catalog's
Audio shapes exactly: the iTransformer's published Audio count (linear in L) needs the
seven Audio lengths to sum to 2,594 more than the catalog's 67,848; the Transformer's
Audio and Counts rows are 222 and 388 parameters below the formula that fits the other
four domains exactly.

Counting (``count_macs``, see ``ssmbench.complexity``)
-----------------------------------------------------
ptflops' module hooks count the Linear/Conv1d/LayerNorm work; they do not see the
attention products (tensor ops) nor the FFN's functional GELU. Conventions:

* ``"paper"``: what reproduces Table 4 (inferred from the figures): the Transformer's
  published MMac grow linearly in L (no L^2 term; the Time-Series-Library computes full
  attention with ``torch.einsum``, which ptflops never counts), and the FFN's GELU is not
  in them (the library keeps ``F.gelu`` in an attribute bound before ptflops patches
  ``torch.nn.functional``). The Informer's exceed the Transformer's by about the three
  ``torch.matmul`` products of ProbSparse attention, which ptflops' default functional
  counting does count (e.g. EEG, L = 256, U = 30: 1.47 M of products, published
  difference 1.18 M). Hence: full attention 0, FFN activation 0, ProbSparse attention its
  three products, B * d * (L U + 2 u L).
* ``"full"``: the real work: full attention 2 B d Lq Lk (QK^T and AV) + B h Lq Lk
  (softmax); ProbSparse B d (Lq U + 2 u Lk) + B h u Lk + B d Lk (mean of V); the FFN's
  GELU B L F.

Choices and deviations
----------------------
* Widths are Table 4's (d_model 64, 1 encoder layer, d_ff 2048; iTransformer d_ff 512),
  not the Time-Series-Library's run.py defaults (d_model 512, 2 encoder layers, d_ff 2048,
  ProbSparse factor 1); the Informer's factor is Informer2020's 5, which the published
  MMac support. ``dropout`` defaults to the library's 0.1 (the MS4N authors' runner,
  ``MS4N_Run.py``, passes 0.01 to its models).
* Classification head: mean over the tokens, then Linear(d, d) -> GELU -> dropout ->
  Linear(d, K) (the MS4N authors' head, which Table 4's 65 parameters per class and the
  4,160 constant imply), not the Time-Series-Library's ``Linear(L * d, K)`` over the
  flattened sequence (whose size grows with L: 30.7 M parameters on AudioMNIST, against
  Table 4's ~0.29 M). The library's GELU + dropout on the encoder output before the head
  is dropped (the head has its own GELU).
* The FFN's two 1x1 convolutions are ``nn.Linear`` layers on the channels-last view: the
  same parameters and arithmetic.
* The sinusoidal table is built for the ``length`` given at construction (a
  non-persistent buffer) instead of the library's fixed 5,000 rows, so L = 47,998
  (AudioMNIST) works; an input longer than ``length`` gets a table computed on the fly.
* No temporal (calendar) embedding: classification inputs have no time stamps (the
  library passes ``x_mark=None`` too). Its ``timeF`` linear layer (4 * d parameters,
  unused in classification) is not created.
* Informer: ``distil`` defaults to False: the Time-Series-Library builds the distilling
  convolutions only for forecasting, and with one encoder layer there is none anyway;
  ``distil=True`` adds Informer2020's ``ConvLayer`` between encoder layers (length-keeping
  circular Conv1d(d, d, 3), BatchNorm, ELU, MaxPool(3, stride 2, padding 1)). The number of
  sampled keys and active queries is at least 1 (the reference gives 0 for L = 1).
  In training the keys are sampled from the global torch generator (as the reference
  does, like dropout); in evaluation from a generator seeded with a number drawn when the
  layer is built, so an evaluated model gives the same output for the same input every
  time (the reference draws afresh each call, which makes validation and test scores
  noisy). The sparsity measurement is computed without
  gradient (it only selects queries), in chunks of queries so that the sampled keys never
  take more than ``_SAMPLE_BUDGET`` elements; the active queries' outputs are scattered into
  the mean-of-V context out of place.
* iTransformer: the input length must equal ``length`` (the embedding is Linear(L, d)).
  No instance normalisation of the series (the reference normalises only for
  forecasting); no time-stamp tokens.
* Dropout (``dropout``) is applied where the library applies it: after the embedding,
  on the attention weights (full attention, training only), after the attention and FFN
  sub-layers, inside the FFN, and in the head.
* The Transformer's full attention uses ``F.scaled_dot_product_attention`` (memory-
  efficient and flash kernels on CUDA): the same function as the library's einsum +
  softmax, with a different summation order.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .frame import ClassifierHead, SequenceClassifier

__all__ = [
    "AttentionLayer",
    "DistilConv",
    "EncoderLayer",
    "FullAttention",
    "GELUActivation",
    "ITransformerClassifier",
    "InformerClassifier",
    "ProbSparseAttention",
    "TokenEmbedding",
    "TransformerClassifier",
    "sinusoidal_table",
]

#: most elements the Informer's sampled-key tensor (B, h, chunk, U, d/h) may hold at once
_SAMPLE_BUDGET = 1 << 25


def sinusoidal_table(length: int, d_model: int, device=None, dtype=torch.float32) -> torch.Tensor:
    """Vaswani et al.'s positional encoding, (length, d_model): sin on even, cos on odd
    features, wavelengths 2*pi .. 10000 * 2*pi."""
    position = torch.arange(length, device=device, dtype=torch.float32).unsqueeze(1)
    half = (d_model + 1) // 2
    div = torch.exp(
        torch.arange(half, device=device, dtype=torch.float32)
        * (-2.0 * math.log(10000.0) / d_model)
    )
    angles = position * div  # (L, ceil(d/2))
    table = torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(1)
    return table[:, :d_model].to(dtype)  # (L, d): [sin, cos, sin, cos, ...]


class TokenEmbedding(nn.Module):
    """Conv1d(C, d, kernel 3, circular padding, no bias), Kaiming-normal init: (B, C, L)
    -> (B, L, d)."""

    def __init__(self, n_channels: int, d_model: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(
            n_channels, d_model, kernel_size=3, padding=1, padding_mode="circular", bias=False
        )
        nn.init.kaiming_normal_(self.conv.weight, mode="fan_in", nonlinearity="leaky_relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x).transpose(1, 2)  # (B, d, L) -> (B, L, d)


class GELUActivation(nn.Module):
    """GELU of the encoder FFN. A leaf module only so that the MAC count can name it: the
    "paper" convention counts it as zero (the reference's functional GELU is not seen by
    ptflops), "full" as one MAC per element."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x)

    def count_macs(self, inputs: tuple, output: torch.Tensor, convention: str) -> int:
        return 0 if convention == "paper" else output.numel()


class FullAttention(nn.Module):
    """Softmax attention of all queries over all keys. q, k, v: (B, h, L, E) -> (B, h, L, E).

    No child modules (ptflops stops at a module with its own counter)."""

    def __init__(self, dropout: float = 0.0) -> None:
        super().__init__()
        self.dropout = dropout

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        p = self.dropout if self.training else 0.0
        return F.scaled_dot_product_attention(q, k, v, dropout_p=p)

    def count_macs(self, inputs: tuple, output: torch.Tensor, convention: str) -> int:
        if convention == "paper":
            return 0  # the reference's einsum products are invisible to ptflops
        q, k, _ = inputs
        B, H, Lq, E = q.shape
        Lk = k.shape[2]
        return 2 * B * H * Lq * Lk * E + B * H * Lq * Lk  # QK^T, AV; softmax


class ProbSparseAttention(nn.Module):
    """Informer's ProbSparse self-attention (no mask: encoder). q, k, v: (B, h, L, E).

    For each query, U sampled keys give the sparsity measure M = max - sum / Lk; the u
    queries with the largest M attend to all keys; the others output mean(V)."""

    def __init__(self, factor: int = 5) -> None:
        super().__init__()
        self.factor = factor
        # Key sampling: in training from the global RNG (like dropout); in eval from a
        # generator seeded by a number drawn at construction, so a model gives the same
        # output for the same input every time (the reference samples afresh each call).
        self.eval_seed = int(torch.randint(0, 2**31 - 1, (1,)).item())

    def n_samples(self, length: int) -> int:
        """factor * ceil(ln L), at least 1 and at most L (keys sampled / active queries)."""
        n = self.factor * math.ceil(math.log(length)) if length > 1 else 1
        return max(1, min(n, length))

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        B, H, Lq, E = q.shape
        Lk = k.shape[2]
        U, u = self.n_samples(Lk), self.n_samples(Lq)
        with torch.no_grad():  # the measurement only selects queries
            generator = None
            if not self.training and q.device.type != "meta":
                generator = torch.Generator(device=q.device).manual_seed(self.eval_seed)
            index = torch.randint(Lk, (Lq, U), device=q.device, generator=generator)
            chunk = max(1, _SAMPLE_BUDGET // max(1, B * H * U * E))
            parts = []
            for s in range(0, Lq, chunk):
                k_sample = k[:, :, index[s : s + chunk], :]  # (B, h, c, U, E)
                qk = torch.einsum("bhce,bhcue->bhcu", q[:, :, s : s + chunk], k_sample)
                parts.append(qk.amax(dim=-1) - qk.sum(dim=-1) / Lk)  # (B, h, c)
            sparsity = torch.cat(parts, dim=-1) if len(parts) > 1 else parts[0]  # (B, h, Lq)
            top = sparsity.topk(u, dim=-1, sorted=False).indices  # (B, h, u)
        top_e = top.unsqueeze(-1).expand(B, H, u, E)
        q_top = torch.gather(q, 2, top_e)  # (B, h, u, E)
        scores = torch.matmul(q_top, k.transpose(-2, -1)) / math.sqrt(E)  # (B, h, u, Lk)
        out_top = torch.matmul(torch.softmax(scores, dim=-1), v)  # (B, h, u, E)
        context = v.mean(dim=2, keepdim=True).expand(B, H, Lq, E)  # lazy queries: mean(V)
        return context.scatter(2, top_e, out_top)  # (B, h, Lq, E)

    def count_macs(self, inputs: tuple, output: torch.Tensor, convention: str) -> int:
        q, k, _ = inputs
        B, H, Lq, E = q.shape
        Lk = k.shape[2]
        U, u = self.n_samples(Lk), self.n_samples(Lq)
        products = B * H * E * (Lq * U + 2 * u * Lk)  # sampled scores, top-u scores, AV
        if convention == "paper":
            return products  # ptflops' functional counting of the reference's 3 matmuls
        return products + B * H * u * Lk + B * H * Lk * E  # softmax, mean of V


class AttentionLayer(nn.Module):
    """Q, K, V projections Linear(d, d), ``n_heads`` heads of d / n_heads, the inner
    attention, output projection Linear(d, d). (B, L, d) -> (B, L, d)."""

    def __init__(self, attention: nn.Module, d_model: int, n_heads: int) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be a multiple of n_heads ({n_heads})")
        self.n_heads = n_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.attention = attention
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, L, d = x.shape

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(B, L, self.n_heads, d // self.n_heads).transpose(1, 2)  # (B, h, L, E)

        y = self.attention(heads(self.query(x)), heads(self.key(x)), heads(self.value(x)))
        return self.out(y.transpose(1, 2).reshape(B, L, d))


class EncoderLayer(nn.Module):
    """Post-norm encoder layer: z = LN(z + drop(attn(z))); z = LN(z + drop(FFN(z)))."""

    def __init__(self, attention: AttentionLayer, d_model: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.attention = attention
        self.ff_in = nn.Linear(d_model, d_ff)
        self.activation = GELUActivation()
        self.ff_out = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        z = self.norm1(z + self.dropout(self.attention(z)))  # (B, L, d)
        f = self.ff_out(self.dropout(self.activation(self.ff_in(z))))  # (B, L, F) -> (B, L, d)
        return self.norm2(z + self.dropout(f))


class DistilConv(nn.Module):
    """Informer's self-attention distilling between encoder layers: (B, L, d) ->
    (B, floor((L - 1) / 2) + 1, d)."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(d_model, d_model, 3, padding=1, padding_mode="circular")
        self.norm = nn.BatchNorm1d(d_model)
        self.activation = nn.ELU()
        self.pool = nn.MaxPool1d(kernel_size=3, stride=2, padding=1)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        y = self.activation(self.norm(self.conv(z.transpose(1, 2))))  # (B, d, L)
        return self.pool(y).transpose(1, 2)


class _EncoderClassifier(SequenceClassifier):
    """Shared parts: encoder layers, final LayerNorm; the frame's mean over the tokens and
    Linear(d, d) -> GELU -> dropout -> Linear(d, K) head."""

    #: the MS4N paper's group of the family (its Figures 3 and 7; report.style colours)
    GROUP = "Transformer"

    #: small hyperparameters for the contract tests (tests/test_model_contract.py)
    TEST_PARAMS = {"d_model": 16, "n_heads": 2, "d_ff": 32}

    def _build_encoder(self, attention, d_model, n_heads, e_layers, d_ff, dropout) -> None:
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be a multiple of n_heads ({n_heads})")
        self.layers = nn.ModuleList(
            [
                EncoderLayer(AttentionLayer(attention(), d_model, n_heads), d_model, d_ff, dropout)
                for _ in range(e_layers)
            ]
        )
        self.norm = nn.LayerNorm(d_model)

    def _encode(self, z: torch.Tensor) -> torch.Tensor:
        distil = getattr(self, "distil_layers", None)
        for i, layer in enumerate(self.layers):
            z = layer(z)
            if distil is not None and i < len(distil):
                z = distil[i](z)
        return self.norm(z)  # (B, tokens, d)


class _TemporalTransformer(_EncoderClassifier):
    """Token embedding + sinusoidal positions, encoder over the L time steps."""

    def __init__(
        self,
        n_channels: int,
        n_classes: int,
        length: int | None,
        attention,
        d_model: int,
        n_heads: int,
        e_layers: int,
        d_ff: int,
        dropout: float,
    ) -> None:
        super().__init__(n_channels, n_classes, length)
        self.d_model = d_model
        self.embedding = TokenEmbedding(n_channels, d_model)
        table = sinusoidal_table(length or 1, d_model)
        self.register_buffer("positions", table, persistent=False)  # (L, d)
        self.embed_dropout = nn.Dropout(dropout)
        self._build_encoder(attention, d_model, n_heads, e_layers, d_ff, dropout)
        self.head = ClassifierHead(d_model, d_model, n_classes, dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        L = x.shape[-1]
        if L <= self.positions.shape[0]:
            pos = self.positions[:L]
        else:
            pos = sinusoidal_table(L, self.d_model, device=x.device, dtype=x.dtype)
        z = self.embed_dropout(self.embedding(x) + pos)  # (B, L, d)
        z = self._encode(z)  # (B, L', d)
        return self.readout(z)  # (B, K)


class TransformerClassifier(_TemporalTransformer):
    """Vanilla Transformer encoder classifier (full attention over time steps)."""

    def __init__(
        self,
        n_channels: int,
        n_classes: int,
        length: int | None = None,
        d_model: int = 64,
        n_heads: int = 8,
        e_layers: int = 1,
        d_ff: int = 2048,
        dropout: float = 0.1,
    ) -> None:
        super().__init__(
            n_channels,
            n_classes,
            length,
            lambda: FullAttention(dropout),
            d_model,
            n_heads,
            e_layers,
            d_ff,
            dropout,
        )


class InformerClassifier(_TemporalTransformer):
    """Informer encoder classifier: ProbSparse attention, optional distilling."""

    def __init__(
        self,
        n_channels: int,
        n_classes: int,
        length: int | None = None,
        d_model: int = 64,
        n_heads: int = 8,
        e_layers: int = 1,
        d_ff: int = 2048,
        dropout: float = 0.1,
        factor: int = 5,
        distil: bool = False,
    ) -> None:
        super().__init__(
            n_channels,
            n_classes,
            length,
            lambda: ProbSparseAttention(factor),
            d_model,
            n_heads,
            e_layers,
            d_ff,
            dropout,
        )
        if distil and e_layers > 1:
            self.distil_layers = nn.ModuleList([DistilConv(d_model) for _ in range(e_layers - 1)])


class ITransformerClassifier(_EncoderClassifier):
    """iTransformer classifier: one token per variate (Linear(L, d)), attention across
    variates."""

    def __init__(
        self,
        n_channels: int,
        n_classes: int,
        length: int | None = None,
        d_model: int = 64,
        n_heads: int = 8,
        e_layers: int = 1,
        d_ff: int = 512,
        dropout: float = 0.1,
    ) -> None:
        super().__init__(n_channels, n_classes, length)
        if length is None:
            raise ValueError("iTransformer needs the series length (its embedding is Linear(L, d))")
        self.embedding = nn.Linear(length, d_model)
        self.embed_dropout = nn.Dropout(dropout)
        self._build_encoder(
            lambda: FullAttention(dropout), d_model, n_heads, e_layers, d_ff, dropout
        )
        self.head = ClassifierHead(d_model, d_model, n_classes, dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.length:
            raise ValueError(
                f"iTransformer was built for length {self.length}, got input of length "
                f"{x.shape[-1]}"
            )
        z = self.embed_dropout(self.embedding(x))  # (B, C, d): one token per variate
        z = self._encode(z)  # (B, C, d)
        return self.readout(z)  # (B, K)
