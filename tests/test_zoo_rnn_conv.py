"""GRU, LSTM, FCN and H-InceptionTime: parameter formulas, MAC counting details and the
hand-crafted filters. (The model contract: tests/test_model_contract.py; Table 4:
tests/test_table4.py.)"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from ssmbench.complexity import count_params, mmac
from ssmbench.models.fcn import FCNClassifier
from ssmbench.models.inception import HandCraftedFilters, HInceptionClassifier, hand_crafted_filters
from ssmbench.models.rnn import GRUClassifier, LSTMClassifier

# --- sizes ---------------------------------------------------------------------------------


def test_param_formulas():
    assert count_params(GRUClassifier(1, 7, 10)) == 52_192 + 64 + 33 * 7
    assert count_params(LSTMClassifier(14, 2, 10)) == 68_832 + 64 * 14 + 33 * 2
    assert count_params(FCNClassifier(14, 2, 10)) == 263_680 + 1024 * 14 + 129 * 2
    assert count_params(HInceptionClassifier(1, 7, 10)) == 64 + 64 + 74_362 + 49 * 7


# --- counting details ------------------------------------------------------------------------


@pytest.mark.parametrize("cls,plain", [(GRUClassifier, nn.GRU), (LSTMClassifier, nn.LSTM)])
def test_rnn_count_macs_equals_ptflops_hook(cls, plain):
    torch.manual_seed(0)
    ours = cls(3, 5, 20)
    ref = cls(3, 5, 20)
    ref.rnn = plain(64, 64, 2, batch_first=True)  # counted by ptflops' own RNN hook
    assert mmac(ours, 3, 20) == mmac(ref, 3, 20) == mmac(ours, 3, 20, device="meta")


def test_hand_crafted_filters_match_reference_form():
    """Bank convolution == each filter as a Conv1d(C, 1, k, 'same') replicated over channels."""
    torch.manual_seed(0)
    x = torch.randn(2, 3, 50, dtype=torch.float64)
    layer = HandCraftedFilters().double()
    out = layer(x)
    filters = hand_crafted_filters()
    assert out.shape == (2, 17, 50) and len(filters) == 17
    assert [len(f) for f in filters] == [2, 4, 8, 16, 32, 64] * 2 + [6, 12, 24, 48, 96]
    np.testing.assert_allclose(filters[1], [-1, 1, -1, 1])
    np.testing.assert_allclose(filters[7], [1, -1, 1, -1])
    np.testing.assert_allclose(filters[12], [-1, -1, 2, 2, -1, -1])  # peak, k = 4
    for i, f in enumerate(filters):
        w = torch.tensor(f, dtype=torch.float64).expand(1, 3, -1)  # (1, C, k)
        ref = F.conv1d(x, w, padding="same")  # Keras/PyTorch "same" alignment
        torch.testing.assert_close(out[:, i : i + 1], ref)


def test_inception_conventions():
    model = HInceptionClassifier(4, 3, 100)
    paper = mmac(model, 4, 100, device="meta")
    full = mmac(model, 4, 100, device="meta", convention="full")
    assert full - paper == pytest.approx(100 * (438 + 3) / 1e6)
    assert mmac(FCNClassifier(4, 3, 100), 4, 100, device="meta", convention="full") == mmac(
        FCNClassifier(4, 3, 100), 4, 100, device="meta"
    )
