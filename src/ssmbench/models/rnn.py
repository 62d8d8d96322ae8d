"""GRU and LSTM classifiers, sized as the MS4N paper's "GRU" and "LSTM" baselines.

Sources
-------
* Cho et al. (2014), "Learning Phrase Representations using RNN Encoder-Decoder for
  Statistical Machine Translation" (GRU); Hochreiter & Schmidhuber (1997), "Long
  Short-Term Memory" (LSTM). The cells are PyTorch's ``nn.GRU`` / ``nn.LSTM``.
* The MS4N paper ("A Simple State Space Model Excels at Multivariate Time Series
  Classification", Saadatmand, Webb, Rezatofighi, Salehi, arXiv:2605.27406), Table 4,
  gives the only published description of these baselines: their average parameter
  count and MMac per MONSTER domain. The authors' repository
  (https://github.com/h-saadatmand/MS4N: ``MS4N_Run.py`` lists ``MODELS = ['MS4N', 'GRU']``;
  ``model/MS4N.py`` is the MS4N wrapper) does not include the baseline code, so the
  architecture below was *reconstructed from Table 4*: it reproduces every published
  Param figure exactly and every MMac figure within 0.2 % (see below). It uses the same
  frame as the authors' MS4N classifier (``model/MS4N.py``): a per-step input projection
  ``Linear(C, 64)``, the sequence model, a LayerNorm, global average pooling and an MLP
  head.

How the width was pinned down
-----------------------------
Table 4's GRU and LSTM parameter averages are, in all six MONSTER domains,
``52,192 + 64 C + 33 K`` and ``68,832 + 64 C + 33 K`` (least squares over the six domains'
(C, K) averages: residuals below 0.2 parameter). 64 per input channel is the projection
``Linear(C, 64)``; 33 per class is ``Linear(32, K)``; LSTM − GRU = 16,640 = one more gate in
each of two layers of width 64 (a gate of a 64 → 64 layer has 64·64 + 64·64 + 2·64 = 8,320
parameters, PyTorch keeping two bias vectors); the rest, 52,192 − 64 − 3·16,640 = 2,208,
is ``Linear(64, 32)`` (2,080) plus a LayerNorm(64) (128).

Architecture (x: (B, C, L) float32 -> logits (B, K); H = d_model = 64, D = head_dim = 32)
-----------------------------------------------------------------------------------------
    x = Linear(C, H) at every step, on the (B, L, C) view                 (B, L, H)
    x = GRU or LSTM, n_layers = 2, hidden size H, batch_first              (B, L, H)
    x = LayerNorm over H (layer_norm=True)                                 (B, L, H)
    x = mean over L                                                         (B, H)
    logits = Linear(H, D) -> GELU -> dropout -> Linear(D, K)                (B, K)

Parameter count: GRU 64C + 64 + 2·3·8,320 + 128 + 2,080 + 33K = 52,192 + 64C + 33K;
LSTM 68,832 + 64C + 33K (the paper's numbers, to the parameter).

Complexity (MMac, one sample, "paper" convention of ``ssmbench.complexity``)
----------------------------------------------------------------------------
ptflops counts an ``nn.GRU`` / ``nn.LSTM`` per step and layer as the two weight matrices
plus the biases and a few element-wise terms (``rnn_flops_counter_hook``): 25,408 MACs per
GRU layer and 33,920 per LSTM layer of width 64. The recurrent layers here are
``nn.GRU`` / ``nn.LSTM`` subclasses (``_MetaSafeGRU``, ``_MetaSafeLSTM``) that count
themselves with exactly that formula (``count_macs``), because PyTorch evaluates an RNN
on the meta device one step at a time in Python (about 4 minutes for AudioMNIST's 47,998
steps) — on the meta device they return empty outputs of the right shape instead. With the
projection (64C + 64) and the LayerNorm (64, ptflops counting LayerNorm as one MAC per
element) a step costs 50,944 + 64C (GRU) and 67,968 + 64C (LSTM) MACs. Table 4 has 0.05 %
to 0.2 % more (Audio: GRU 494.64 vs 494.40 ours, LSTM 660.06 vs 659.41); the remaining
25 (GRU) and 67 (LSTM) MACs per step were not identified. Both conventions give the same
figure (ptflops sees all the work; sigmoid/tanh are not counted, as in ptflops).

Choices and deviations
----------------------
* The readout is the mean over all steps of the normalised outputs (the MS4N frame), not
  the last hidden state. The Param column cannot tell the two apart, but the MMac column
  can: the LayerNorm is counted at every step (64 MACs per step; e.g. EEG, L = 256: GRU
  13.27 MMac published, 13.27 with a LayerNorm over all steps, 13.26 with the last state
  only; LSTM 17.63 published, 17.63 vs 17.62), which fits normalising the whole output
  sequence and then pooling it.
* GELU in the head (as the MS4N head) — the activation is not identified by the counts.
* ``dropout`` (default 0) acts between the recurrent layers (``nn.GRU(dropout=...)``) and in
  the head. PyTorch default initialisation throughout.
* The input projection has no published justification beyond the parameter counts; it
  is kept because the counts require it (64 parameters per input channel).
"""

from __future__ import annotations

import torch
import torch.nn as nn

from .frame import ClassifierHead, SequenceClassifier

__all__ = ["GRUClassifier", "LSTMClassifier", "RecurrentClassifier", "rnn_step_macs"]


def rnn_step_macs(rnn: nn.RNNBase) -> int:
    """MACs of one time step of one sample, all layers, as ptflops 0.7 counts nn.GRU/LSTM.

    Per layer: the input and hidden weight matrices (gates·H·in + gates·H·H), the two bias
    vectors, and element-wise terms: GRU 7H (r-Hadamard H, 3H adds, 3H final products and
    add), LSTM 10H (4H adds, 3H for the cell state, 3H for the output). Bidirectional
    layers count twice.
    """
    H = rnn.hidden_size
    total = 0
    for layer in range(rnn.num_layers):
        w_ih = getattr(rnn, f"weight_ih_l{layer}")
        w_hh = getattr(rnn, f"weight_hh_l{layer}")
        macs = w_ih.shape[0] * w_ih.shape[1] + w_hh.shape[0] * w_hh.shape[1]
        if isinstance(rnn, nn.GRU):
            macs += 7 * H
        elif isinstance(rnn, nn.LSTM):
            macs += 10 * H
        else:  # plain RNN
            macs += H
        if rnn.bias:
            macs += 2 * w_ih.shape[0]
        total += macs
    return total * (2 if rnn.bidirectional else 1)


class _MetaSafeRNNMixin:
    """Skips the step-by-step meta-device evaluation and counts itself like ptflops."""

    def forward(self, x: torch.Tensor, hx=None):  # noqa: D401 - same as nn.GRU / nn.LSTM
        if x.is_meta:
            # Shapes only (complexity counting on device="meta"): PyTorch would otherwise
            # unroll the recurrence step by step in Python on the meta device.
            B, L = (x.shape[0], x.shape[1]) if self.batch_first else (x.shape[1], x.shape[0])
            D = 2 if self.bidirectional else 1
            shape = (
                (B, L, D * self.hidden_size) if self.batch_first else (L, B, D * self.hidden_size)
            )
            out = x.new_empty(shape)
            h = x.new_empty(D * self.num_layers, B, self.hidden_size)
            return out, ((h, h.clone()) if isinstance(self, nn.LSTM) else h)
        return super().forward(x, hx)

    def count_macs(self, inputs: tuple, output, convention: str) -> int:
        x = inputs[0]
        return int(x.shape[0]) * int(x.shape[1]) * rnn_step_macs(self)


class _MetaSafeGRU(_MetaSafeRNNMixin, nn.GRU):
    pass


class _MetaSafeLSTM(_MetaSafeRNNMixin, nn.LSTM):
    pass


class RecurrentClassifier(SequenceClassifier):
    """Linear(C, H) -> GRU/LSTM (n_layers, width H) -> LayerNorm -> mean over L -> MLP head."""

    #: the MS4N paper's group of the family (its Figures 3 and 7; report.style colours)
    GROUP = "RNN"

    CELL: type[nn.RNNBase] = _MetaSafeGRU
    #: small hyperparameters for the contract tests
    TEST_PARAMS = {"d_model": 8, "head_dim": 4}

    def __init__(
        self,
        n_channels: int,
        n_classes: int,
        length: int | None = None,
        d_model: int = 64,
        n_layers: int = 2,
        head_dim: int = 32,
        layer_norm: bool = True,
        dropout: float = 0.0,
    ) -> None:
        super().__init__(n_channels, n_classes, length)  # any L: the recurrence needs none
        H = d_model
        self.input_proj = nn.Linear(n_channels, H)
        self.rnn = self.CELL(
            H, H, num_layers=n_layers, batch_first=True, dropout=dropout if n_layers > 1 else 0.0
        )
        self.norm = nn.LayerNorm(H) if layer_norm else nn.Identity()
        self.head = ClassifierHead(H, head_dim, n_classes, dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.input_proj(x.transpose(-1, -2))  # (B, C, L) -> (B, L, H)
        x, _ = self.rnn(x)  # (B, L, H)
        x = self.norm(x)  # (B, L, H)
        return self.readout(x)  # (B, H) -> (B, K)


class GRUClassifier(RecurrentClassifier):
    """The MS4N paper's "GRU" baseline (2 GRU layers of width 64; see module docstring)."""

    CELL = _MetaSafeGRU


class LSTMClassifier(RecurrentClassifier):
    """The MS4N paper's "LSTM" baseline (2 LSTM layers of width 64; see module docstring)."""

    CELL = _MetaSafeLSTM
