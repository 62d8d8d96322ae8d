"""RFormer: the Rough Transformer, a Transformer encoder over signature patches.

Sources
-------
* Moreno-Pino, Arroyo, Waldon, Dong & Cartea (2024), "Rough Transformers: Lightweight and
  Continuous Time Series Modelling through Signature Patching", NeurIPS 2024
  (arXiv:2405.20799).
* Reference repository https://github.com/AlvaroArroyo/RFormer at commit 27d59ea, which has
  NO licence file: it was read for facts only (shapes, index rules, defaults, initialisation,
  cited by file:line below) and every line here is written anew. ``src/UEA/sig_utils.py``
  (the signature views), ``src/UEA/model_classification.py`` (the Transformer),
  ``src/UEA/main.py`` and ``src/UEA/utils.py`` (defaults, the time channel, the training),
  ``src/UEA/configs/*.yaml`` (the per-dataset UEA settings).
* The TIDES reference's use of it (https://github.com/TaylanSoydan/TIDES):
  ``uea/droprate.py`` at 5e2adb4 (the drop-rate ablation's RFormer column: 10 local windows,
  signature level 2, n_embd 20, 1 head, 2 layers, no dropout, scaled attention, lr 6.73e-3,
  weight decay 0.1, batch 5, the time linspace(0, 1, L) of the full grid prepended, windows
  placed by the kept steps' timestamps), ``uea/model_classification.py`` and
  ``uea/ablations/train_time_memory.py`` at 4b51adc (its copy of the Transformer; the
  timing ablation's RFormer; no copy of ``model_classification.py`` at 5e2adb4 was at hand,
  the 4b51adc one, with separate blocks, is taken for the drop-rate run).
* Signatures: pysiglib 4.0.0 (Apache-2.0, https://github.com/daniil-shmelev/pySigLib),
  ``pysiglib.torch_api.sig`` (batched truncated signatures) and ``sig_combine`` (Chen's
  product). Its layout is iisignature's (the reference's library): level 1, then level 2
  with (i, j) -> i d + j for ∫ dx_i dx_j (i first), then level 3, ...: levels 1-4 agree
  with iisignature 0.24 to 1e-15 (relative), and the views below with the reference's
  ``sig_utils.py`` run on iisignature (regular grids, and drop masks that keep the last
  step) to its float32 output's rounding; tests/test_rformer.py checks them against a
  direct computation.

Notation: B batch, C channels, L steps, K classes, n = ``n_windows``, N = ``sig_level``,
d = C + 1 the path's dimension with the time channel (C without), S = d + d² + … + d^N the
signature's length (univariate: C (2 + 4 + … + 2^N)), F the token's features (S per view),
D = F + ``pos_dim`` the Transformer's width, h = ``n_heads``, e = D // h.

Signature views (sig_utils.py; x (B, C, L), steps Δ (B, L))
-----------------------------------------------------------
    τ_j = Δ_0 + … + Δ_j,  s_j = τ_j − τ_0 (elapsed time),  s_end its last value
    path_j = [s_j / s_end, x_j]     (B, L, d) (``time_channel``: utils.py:148-150, the
                                     time first; droprate.py's linspace(0, 1, L))
    e_i = #{j : n s_j < i s_end} − 1, i = 1..n; then e_n −= 1   (sig_utils.py:63-65,
                                     100-103; ties rounded as the reference, ``window_ends``)
    global view, token i: Sig(path_0 … path_{e_i + 1})                    (50-72)
    local view,  token i: Sig(path_{e_{i-1}} … path_{e_i − 1}),  e_0 = 0  (90-119)
    tokens = [global | local] (B, n, F), in this order                   (138-165)

The global view is iisignature's streamed signature (``sig(path, N, 2)``, whose entry m is
the signature of the first m + 2 points) read at the e_i; the local windows are the slices
``path[e_{i-1}:e_i]`` (end exclusive, so the increment from point e_i − 1 to e_i is in no
window, and the last window ends at point L − 4 on a regular grid); both as the reference.
The windows are placed by time (x = linspace(0, L, L)[kept], step = max(x) / n: equal spans
of the kept steps' timestamps), which our e_i reproduce from the step sizes: on a regular
grid s_j = j, with dropped steps s_j is the kept step's index on the full grid.
``univariate`` (sig_utils.py:32-43, utils.py:28-33): the signature of each 2-D path
(time, x_c), the C of them concatenated in channel order (it needs the time channel).
No basepoint, no normalisation of the values or of the signatures (the reference has
none; its values are aeon's raw float64), no lead-lag.

Transformer (model_classification.py)
-------------------------------------
    z = [tokens, P]                    (B, n, D), P = Embedding(n, pos_dim) (209, 214-218)
    for each of n_layers blocks (post-LayerNorm, 172-193):
        q, k = split(Linear(D, 2 h D, no bias)(z))   h heads of width D each (89, 128-134)
        v = Linear(D, h e)(z)                         h heads of width e = D // h (86-90, 125)
        a = softmax(q kᵀ · scale + causal mask) v     scale e^-1/2 if ``scaled_attention``
                                                      else 1 (74-76, 137-141)
        z = LayerNorm(z + dropout(Linear(h e, D)(concat_heads(dropout(a)))))
        z = LayerNorm(z + dropout(Linear(4D, D)(ReLU(Linear(D, 4D)(z)))))   (151-169)
    logits = Linear(D, K)(mean over the n tokens of z)              (239, 250-252)

The attention is causal (``torch.tril``, 79-83): token i sees tokens 0..i. LayerNorm is
the OpenAI form, eps 1e-5 inside the square root (48-59): ``nn.LayerNorm``'s function.
Initialisation (30-45, 243-248): the Linear/Conv1d layers the reference's
``_initialize_weights`` sees (the Q/K projection, the head) N(0, 0.01²); its own
``Conv1D`` layers (V, the output projection, the MLP) N(0, 0.02²); biases 0; LayerNorm 1
and 0; the position table N(0, 1) (``nn.Embedding``'s default, not re-initialised).
``tied_layers`` (the RFormer repository, 211-212): ONE block applied n_layers times, its
parameters shared (``[base for _ in range(layer)]``); the TIDES repository's copy (4b51adc,
211-214) builds n_layers separate blocks, which its drop-rate and timing runs use.

Hyperparameters (ours -> the reference's)
-----------------------------------------
n_windows -> num_windows; sig_level -> sig_level; global_view -> global_backward (the
signature from the start, despite its name); local_view -> local_tight; univariate ->
univariate; time_channel -> add_time; pos_dim -> embedded_dim (``n_embd`` of the model:
the position table's width, added to the features' width); n_heads -> n_head; n_layers ->
num_layers; dropout -> attn_pdrop and resid_pdrop (one value: the reference's defaults and
every configuration give them equal; embd_pdrop builds a dropout its forward never uses);
scaled_attention -> scale_att; tied_layers -> the RFormer (True) or the TIDES (False) copy.
Defaults: the reference's ``main.py`` (100 windows, level 2, n_embd 10, 3 heads, 2 layers,
dropout 0.1, no scaling, shared block) with the time channel and the global view on (every
shipped configuration adds time; four of six take the global view).

Parameters
----------
A block: 2 h D² (Q, K) + 2 h e D + h e + D (V, output) + 8 D² + 5 D (MLP) + 4 D (norms);
the model: the block (or n_layers of them, untied) + n pos_dim + D K + K.

* The TIDES drop-rate configuration (``RFormer-drop``: C = 6, K = 5, time channel, local
  view, level 2 -> F = 7 + 49 = 56, pos_dim 20 -> D = 76, 1 head, 2 separate blocks, 10
  windows): 140,881 here; the reference's count is 140,911, the 30 more being its
  ``final = Linear(K, K)`` (model_classification.py:240), built and never called (it gets no
  gradient: not created here).
* The 94,368 the TIDES paper's timing ablation quotes (``train_time_memory.py:49``) is not
  that configuration: it is the TIDES copy at n_embd 32, 2 heads, 4 separate blocks, on one
  raw channel (no signatures: each of L = 1000 time points is a token, its position table
  1000 x 32), K = 5, random data (no dataset); its count grows by 32 per step of L (the
  position table), so 94,368 holds at L = 1000 only. The same sizes here (``sig_level=1``,
  no time channel, the local view of one channel: one feature per token, ``n_windows=1000``,
  ``pos_dim=32``, ``n_heads=2``, ``n_layers=4``, untied) give 94,338 = 94,368 − 30 (the
  unused ``final``); tests/test_rformer.py checks both counts.

Deviations
----------
* The features are computed inside ``forward`` from the values and the step sizes (the
  reference computes them once, before training, with iisignature on the CPU), in float64,
  without gradient (they are fixed features there too), then cast to the input's dtype.
  pysiglib has no CUDA kernels in its wheel: on a GPU the path goes to the CPU and back.
  On the meta device (ptflops' MMac) no signature is computed: the features are an empty
  tensor of their shape.
* The time channel is s_j / s_end of each series (0 at its first step, 1 at its last): on a
  regular grid the reference's linspace(0, 1, L) exactly (its offline UEA features,
  utils.py:148-150, and droprate.py); with dropped steps the reference divides by the full
  grid's L − 1 instead of the last kept step's index (the same unless the last step was
  dropped; at EigenWorms' L = 17,984 a ratio of 1 + O(1e-4)). The RFormer repository's
  online mode (main.py:128, 215, which its own random-drop option needs) prepends
  linspace(0, L, L), not normalised. A time offset would not matter (signatures see
  increments only).
* Window boundaries: computed in the reference's float64 arithmetic on the grid
  linspace(0, G, G) with G = s_end + 1 (``window_ends``), so that a step exactly on a
  boundary (n s_j = i s_end) falls where the reference's rounding puts it: e.g. on
  SelfRegulationSCP1's grid (L = 896, 100 windows) fl(fl(896 / 100) · 100) > 896 counts the
  last step in e_n, one more than exact arithmetic. On a regular grid this is the
  reference's G = L. With dropped steps the reference's G is the full grid's L, the same
  unless the last step was dropped; then e_i can be one step off the reference's at ties
  (when n divides the last kept index, at every boundary whose step was kept, and at e_n).
* Padding (a step Δ = 0 after the first, as the drop-rate variants pad shorter series:
  values 0, Δ 0): the last real value is held, so padding adds no increment and no window
  (the reference's drop mask is shared by a whole split, so it never pads). A repeated
  timestamp inside a series is treated alike: its value is not read.
* Not implemented (no shipped configuration sets them): the reference's ``global_forward``
  (the streamed signature of the time-reversed path), ``local_wide`` (windows widened by
  ``local_width`` steps), the log-sparse attention mask (``sparse``), a query/key
  convolution wider than one token (``q_len`` > 1), and its online/offline choice.
* The reference's unused parameters are not created (``final``; ``drop_em`` has none).
* One ``dropout`` for the reference's attn_pdrop and resid_pdrop (equal in all its runs).
* A token width whose block would exceed ``MAX_BLOCK_PARAMETERS`` (10⁹) is refused with a
  ValueError naming sig_level: at level 2 a path of d dimensions gives d + d² features a
  view (DuckDuckGeese, C = 1345: 1.8 M, a block of ~10¹³ parameters); the reference has no
  such check (it would run out of memory).
* Data, not the model: signatures are not scale-invariant, and the reference feeds aeon's
  raw values; the ``uea`` benchmark's prepared copy (and the ``uea_drop`` variants made
  from it) is z-scored per channel, the ``uea6`` benchmark undoes that.
* Training, not the model: the reference reports the test accuracy of the final epoch
  (``main.py:178-249``: ``train_one_seed`` returns the test accuracy after the last epoch; the
  drop-rate script keeps the best-validation-accuracy weights); our training spine tests
  the best-validation checkpoint. The reference's UEA split is sklearn's
  ``train_test_split`` (0.3, then 0.5 of it), seeds 42-45, fixed epochs, Adam, batch 20.

Cost: at the drop-rate configuration, B = 32, C = 6, L = 17,984, one forward and backward
pass takes ~0.11 s on one CPU thread (the signatures, computed without gradient, most of it).

MACs (``count_macs``; see ssmbench.complexity)
------------------------------------------------
``"paper"``: what ptflops' module hooks see (the Linear layers, LayerNorms, ReLU); the
RFormer paper quotes no MMac. ``"full"`` adds the attention products (q kᵀ: h n² D, the
weighted values: h n² e, the softmax: h n²) and the signatures: each path increment
counted as S MACs per view (one update of each term), (L − 1) increments per path (C paths
of dimension 2 with ``univariate``).
"""

from __future__ import annotations

import torch
import torch.nn as nn

from .frame import SequenceClassifier, optional_dropout

__all__ = [
    "MAX_BLOCK_PARAMETERS",
    "RFormerClassifier",
    "RFormerBlock",
    "SignatureViews",
    "signature_length",
    "window_ends",
]


#: pysiglib's threads (its ``n_jobs``): one, serial; the windows of a batch are small
#: (B = 32, EigenWorms: ~0.1 s in all), and a thread pool of its own would compete with
#: torch's for the same cores
SIG_THREADS = 1

#: the largest block (its ~(2 h + 8) D² parameters) built; a wider one is a ValueError
MAX_BLOCK_PARAMETERS = 10**9


def signature_length(dimension: int, level: int) -> int:
    """d + d² + … + d^N: the truncated signature's length without its scalar term."""
    return sum(dimension**k for k in range(1, level + 1))


def window_ends(s: torch.Tensor, n_windows: int) -> torch.Tensor:
    """The reference's window indices e_1..e_n (sig_utils.py:63-65, 101-103) for elapsed
    times s (B, L) (nondecreasing, s_0 = 0, padding holding the last), in its float64
    arithmetic: the grid x = linspace(0, G, G) read at the steps' indices s_j, G = s_end + 1
    (x_j = s_j * fl(G / (G - 1)), the last point x = G exactly, as numpy's linspace),
    step = G / n, e_i = #{j : x_j < step * i} - 1, then e_n -= 1. In exact arithmetic
    e_i = #{j : n s_j < i s_end} - 1; the float64 rounding decides the ties (a step exactly
    on a boundary) as the reference's does. (B, n) int64, not clamped (-1 or -2 on a
    series whose steps all have one time)."""
    s_end = s[:, -1:]  # (B, 1)
    grid = s_end + 1.0  # G: the length of the reference's grid, linspace(0, G, G)
    unit = grid / torch.where(s_end > 0, s_end, torch.ones_like(s_end))  # fl(G / (G - 1))
    x = torch.where(s == s_end, grid, s * unit)  # linspace sets its endpoint to G exactly
    window = torch.arange(1, n_windows + 1, device=s.device, dtype=s.dtype)
    bounds = (grid / n_windows) * window  # (B, n): fl(fl(G / n) * i)
    count = torch.searchsorted(x.contiguous(), bounds.contiguous(), side="left")  # x < bound
    count = torch.where(s_end > 0, count, torch.zeros_like(count))
    ends = count - 1
    ends[:, -1] -= 1  # the reference's ``indices[-1] -= 1``
    return ends


def _gather_windows(path: torch.Tensor, start: torch.Tensor, end: torch.Tensor) -> torch.Tensor:
    """Points start..end (inclusive) of each path, (B, L, d) and (B, n) -> (B n, W, d) (a
    new tensor), W the longest window, each window padded by repeating its last point
    (which leaves its signature unchanged); an empty window (end < start) is its start
    point alone."""
    last = path.shape[1] - 1
    start = start.clamp(0, last)
    span = (end.clamp(0, last) - start).clamp(min=0)  # (B, n)
    width = int(span.max()) + 1
    offsets = torch.arange(width, device=path.device)
    index = start.unsqueeze(-1) + torch.minimum(offsets, span.unsqueeze(-1))  # (B, n, W)
    batch = torch.arange(path.shape[0], device=path.device).view(-1, 1, 1).expand_as(index)
    return path[batch.reshape(-1, width), index.reshape(-1, width)]  # (B n, W, d)


def _owned(t: torch.Tensor) -> torch.Tensor:
    """t as pysiglib wants it: contiguous, owning its storage, no zero stride (else it
    copies it itself, with a warning)."""
    if t._base is not None or not t.is_contiguous() or 0 in t.stride():
        return t.clone(memory_format=torch.contiguous_format)
    return t


class SignatureViews(nn.Module):
    """(B, C, L) values and (B, L) step sizes -> (B, n, F) signature tokens: the global
    and/or the local view (see the module docstring). No parameters."""

    def __init__(
        self,
        n_channels: int,
        n_windows: int,
        sig_level: int,
        global_view: bool,
        local_view: bool,
        univariate: bool,
        time_channel: bool,
    ) -> None:
        super().__init__()
        self.n_windows = n_windows
        self.sig_level = sig_level
        self.global_view = global_view
        self.local_view = local_view
        self.univariate = univariate
        self.time_channel = time_channel
        self.n_channels = n_channels
        if univariate:  # C paths (time, x_c)
            self.path_dim, self.n_paths = 2, n_channels
        else:
            self.path_dim, self.n_paths = n_channels + int(time_channel), 1
        self.sig_length = signature_length(self.path_dim, sig_level)
        self.n_views = int(global_view) + int(local_view)
        self.n_features = self.n_views * self.n_paths * self.sig_length

    def _signatures(self, windows: torch.Tensor) -> torch.Tensor:
        """(M, W, d) float64 CPU windows -> (M, S) their signatures (pysiglib)."""
        from pysiglib.torch_api import sig

        return sig(_owned(windows), self.sig_level, n_jobs=SIG_THREADS)

    def _prefix_signatures(self, path: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Sig(path_0 … path_t) for each target t (B, n): the segments between the sorted
        targets, joined by Chen's product (pysiglib ``sig_combine``). (B, n, S)."""
        from pysiglib.torch_api import sig_combine

        ordered, order = torch.sort(targets, dim=1)
        starts = torch.cat([torch.zeros_like(ordered[:, :1]), ordered[:, :-1]], dim=1)
        pieces = self._signatures(_gather_windows(path, starts, ordered))  # (B n, S)
        pieces = pieces.view(*targets.shape, -1)
        joined = [_owned(pieces[:, 0])]
        for k in range(1, pieces.shape[1]):
            joined.append(
                sig_combine(
                    joined[-1],
                    _owned(pieces[:, k]),
                    self.path_dim,
                    self.sig_level,
                    n_jobs=SIG_THREADS,
                )
            )
        cumulative = torch.stack(joined, dim=1)  # in the sorted order
        out = torch.empty_like(cumulative)
        out.scatter_(1, order.unsqueeze(-1).expand_as(cumulative), cumulative)
        return out

    def forward(self, x: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        batch, channels, length = x.shape
        if x.device.type == "meta":  # shapes only (ptflops' MMac): no signature kernel there
            return x.new_empty(batch, self.n_windows, self.n_features)
        with torch.no_grad():
            device, dtype = x.device, x.dtype
            values = x.detach().to("cpu", torch.float64).transpose(1, 2)  # (B, L, C)
            delta = steps.detach().to("cpu", torch.float64)
            tau = torch.cumsum(delta, dim=1)
            s = tau - tau[:, :1]  # elapsed time, s_0 = 0
            # padding (Δ = 0 after the first step) holds the last real value
            real = torch.ones_like(delta, dtype=torch.bool)
            real[:, 1:] = delta[:, 1:] > 0
            position = torch.arange(length).expand(batch, length)
            held = torch.where(real, position, torch.zeros_like(position)).cummax(dim=1).values
            values = torch.gather(values, 1, held.unsqueeze(-1).expand(-1, -1, channels))
            s_end = s[:, -1:]
            parts = [values]
            if self.time_channel:
                t = torch.where(s_end > 0, s / s_end.clamp(min=1e-300), torch.zeros_like(s))
                parts.insert(0, t.unsqueeze(-1))
            path = torch.cat(parts, dim=-1)  # (B, L, d), the time first
            ends = window_ends(s, self.n_windows)  # (B, n)
            if self.univariate:  # (B C, L, 2): [time, x_c] per channel, in channel order
                path = torch.stack(
                    [path[..., :1].expand(-1, -1, channels), path[..., 1:]], dim=-1
                )  # (B, L, C, 2)
                path = path.permute(0, 2, 1, 3).reshape(batch * channels, length, 2)
                ends = ends.repeat_interleave(channels, dim=0)
            views = []
            if self.global_view:  # Sig(path_0 … path_{e_i + 1})
                views.append(self._prefix_signatures(path, (ends + 1).clamp(0, length - 1)))
            if self.local_view:  # Sig(path_{e_{i-1}} … path_{e_i − 1}), e_0 = 0
                starts = torch.cat([torch.zeros_like(ends[:, :1]), ends[:, :-1]], dim=1)
                local = self._signatures(_gather_windows(path, starts, ends - 1))
                views.append(local.view(*ends.shape, -1))
            tokens = []
            for view in views:  # (B [C], n, S) -> (B, n, C S): the channels' blocks in order
                if self.univariate:
                    view = view.reshape(batch, channels, self.n_windows, -1).transpose(1, 2)
                tokens.append(view.reshape(batch, self.n_windows, -1))
            return torch.cat(tokens, dim=-1).to(device, dtype)  # (B, n, F)

    def count_macs(self, inputs: tuple, output: torch.Tensor, convention: str) -> int:
        if convention == "paper":
            return 0
        batch, _, length = inputs[0].shape
        return batch * self.n_views * self.n_paths * max(length - 1, 0) * self.sig_length


class CausalSelfAttention(nn.Module):
    """The reference's attention (model_classification.py:62-145): h heads whose queries
    and keys are D wide and whose values are e = D // h wide, causal, optionally scaled by
    e^-1/2. (B, n, D) -> (B, n, D)."""

    def __init__(self, width: int, n_heads: int, dropout: float, scaled: bool) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = width // n_heads
        self.scale = self.head_dim**-0.5 if scaled else 1.0
        inner = n_heads * self.head_dim
        self.query_key = nn.Linear(width, 2 * n_heads * width, bias=False)
        self.value = nn.Linear(width, inner)
        self.out = nn.Linear(inner, width)
        self.attn_dropout = optional_dropout(dropout)
        self.resid_dropout = optional_dropout(dropout)
        nn.init.normal_(self.query_key.weight, 0.0, 0.01)  # an nn.Conv1d there
        for layer in (self.value, self.out):  # its Conv1D: randn * 0.02, zero bias
            nn.init.normal_(layer.weight, 0.0, 0.02)
            nn.init.zeros_(layer.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, n, width = x.shape
        h = self.n_heads
        v = self.value(x).view(batch, n, h, self.head_dim).transpose(1, 2)  # (B, h, n, e)
        q, k = self.query_key(x).split(h * width, dim=-1)
        q = q.view(batch, n, h, width).transpose(1, 2)  # (B, h, n, D)
        k = k.view(batch, n, h, width).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2)) * self.scale  # (B, h, n, n)
        causal = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        weights = self.attn_dropout(torch.softmax(scores, dim=-1))
        context = torch.matmul(weights, v).transpose(1, 2).reshape(batch, n, -1)
        return self.resid_dropout(self.out(context))

    def count_macs(self, inputs: tuple, output: torch.Tensor, convention: str) -> int:
        if convention == "paper":
            return 0  # tensor products: invisible to ptflops' module hooks
        batch, n, width = inputs[0].shape
        h = self.n_heads
        return batch * h * n * n * (width + self.head_dim + 1)  # q kᵀ, weights v, softmax


class RFormerBlock(nn.Module):
    """Attention -> add -> LayerNorm -> MLP (D, 4D, ReLU) -> add -> LayerNorm
    (model_classification.py:172-193)."""

    def __init__(self, width: int, n_heads: int, dropout: float, scaled: bool) -> None:
        super().__init__()
        self.attn = CausalSelfAttention(width, n_heads, dropout, scaled)
        self.norm1 = nn.LayerNorm(width, eps=1e-5)
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width),
            nn.ReLU(),
            nn.Linear(4 * width, width),
            optional_dropout(dropout),
        )
        self.norm2 = nn.LayerNorm(width, eps=1e-5)
        for layer in (self.mlp[0], self.mlp[2]):  # its Conv1D: randn * 0.02, zero bias
            nn.init.normal_(layer.weight, 0.0, 0.02)
            nn.init.zeros_(layer.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm1(x + self.attn(x))
        return self.norm2(x + self.mlp(x))


class RFormerClassifier(SequenceClassifier):
    """The Rough Transformer: n signature tokens (global and/or local views of the path)
    with a learned position table, a causal Transformer encoder, mean over the tokens,
    Linear(D, K). See the module docstring for the reference's names and every deviation.

    Hyperparameters (the reference's name in brackets): ``n_windows`` [num_windows] the
    number of tokens; ``sig_level`` [sig_level] the truncation level N; ``global_view``
    [global_backward] the signature from the start to each window's end; ``local_view``
    [local_tight] each window's own signature; ``univariate`` [univariate] the signatures
    of the 2-D paths (time, x_c) instead of the whole path's; ``time_channel`` [add_time]
    the normalised time as channel 0; ``pos_dim`` [embedded_dim, n_embd] the width of the
    learned position table concatenated to the features; ``n_heads`` [n_head];
    ``n_layers`` [num_layers]; ``dropout`` [attn_pdrop = resid_pdrop];
    ``scaled_attention`` [scale_att]; ``tied_layers``: one block applied n_layers times
    (the RFormer repository) or n_layers blocks (the TIDES repository's copy).
    """

    #: the inputs the training side gives forward: values (B, C, L) and steps (B, L)
    INPUTS = ("values", "steps")
    #: small sizes for the shared contract; one window, because the contract has L = 1.
    #: Its C = 1345 shapes are too large at level 2 (1,346 + 1,346² features a view).
    TEST_PARAMS = {
        "n_windows": 1,
        "sig_level": 2,
        "global_view": True,
        "local_view": True,
        "pos_dim": 4,
        "n_heads": 1,
        "n_layers": 1,
        "dropout": 0.1,
    }

    def __init__(
        self,
        n_channels: int,
        n_classes: int,
        length: int | None = None,
        n_windows: int = 100,
        sig_level: int = 2,
        global_view: bool = True,
        local_view: bool = False,
        univariate: bool = False,
        time_channel: bool = True,
        pos_dim: int = 10,
        n_heads: int = 3,
        n_layers: int = 2,
        dropout: float = 0.1,
        scaled_attention: bool = False,
        tied_layers: bool = True,
    ) -> None:
        super().__init__(n_channels, n_classes, length)
        for name, value in (("n_windows", n_windows), ("sig_level", sig_level),
                            ("pos_dim", pos_dim), ("n_heads", n_heads),
                            ("n_layers", n_layers)):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"RFormer: {name} must be a positive integer, got {value!r}")
        problem = None if length is None else self.length_problem({"n_windows": n_windows}, length)
        if problem:
            raise ValueError(f"RFormer: {problem}")
        if not (global_view or local_view):
            raise ValueError("RFormer: at least one of global_view and local_view must be on")
        if univariate and not time_channel:
            raise ValueError(
                "RFormer: univariate pairs each channel with the time: it needs time_channel"
            )
        self.n_windows = n_windows
        self.signatures = SignatureViews(
            n_channels, n_windows, sig_level, global_view, local_view, univariate, time_channel
        )
        width = self.signatures.n_features + pos_dim
        if n_heads > width:
            raise ValueError(
                f"RFormer: n_heads ({n_heads}) must be at most the token width ({width}): "
                f"each head's values are width // n_heads wide"
            )
        block_size = (2 * n_heads + 8) * width * width
        if block_size > MAX_BLOCK_PARAMETERS:
            raise ValueError(
                f"RFormer: tokens of {self.signatures.n_features} signature features (C = "
                f"{n_channels}, sig_level {sig_level}) make a block of ~{block_size:.2e} "
                f"parameters (the Q/K projection alone 2 h D², D = {width}); lower sig_level or "
                f"use univariate"
            )
        self.width = width
        self.positions = nn.Embedding(n_windows, pos_dim)  # N(0, 1), as the reference's
        dropout = float(dropout)
        if tied_layers:
            block = RFormerBlock(width, n_heads, dropout, scaled_attention)
            self.blocks = nn.ModuleList([block] * n_layers)
        else:
            self.blocks = nn.ModuleList(
                [RFormerBlock(width, n_heads, dropout, scaled_attention) for _ in range(n_layers)]
            )
        self.head = nn.Linear(width, n_classes)
        nn.init.normal_(self.head.weight, 0.0, 0.01)
        nn.init.zeros_(self.head.bias)

    @classmethod
    def length_problem(cls, hyper: dict, length: int) -> str | None:
        """Why ``hyper`` cannot read series of ``length`` steps, or None."""
        if hyper["n_windows"] > length:
            return (f"n_windows ({hyper['n_windows']}) must be at most the series length "
                    f"({length}): each window needs a time step")  # fmt: skip
        return None

    def features(self, x: torch.Tensor, steps: torch.Tensor | None = None) -> torch.Tensor:
        """The signature tokens (B, n, F) of x (B, C, L) with step sizes (B, L)."""
        batch, _, length = x.shape
        if length < self.n_windows:
            raise ValueError(
                f"RFormer: n_windows ({self.n_windows}) must be at most the series length "
                f"({length}): each window needs a time step"
            )
        if steps is None:
            steps = x.new_ones(batch, length)  # regular data
        elif tuple(steps.shape) != (batch, length):
            raise ValueError(f"steps must be (B, L) = {(batch, length)}, got {tuple(steps.shape)}")
        return self.signatures(x, steps)

    def forward(self, x: torch.Tensor, steps: torch.Tensor | None = None) -> torch.Tensor:
        """x (B, C, L), steps (B, L) the physical step sizes (None: all 1) -> (B, K)."""
        tokens = self.features(x, steps)  # (B, n, F)
        batch = tokens.shape[0]
        positions = self.positions.weight.unsqueeze(0).expand(batch, -1, -1)
        z = torch.cat([tokens, positions.to(tokens.dtype)], dim=-1)  # (B, n, D)
        for block in self.blocks:
            z = block(z)
        return self.readout(z)  # mean over the n tokens, Linear(D, K)
