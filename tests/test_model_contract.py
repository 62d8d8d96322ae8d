"""One contract for every registered model family (aeon-style: each family's class gives
small ``TEST_PARAMS``): it builds for extreme shapes, maps (B, C, L) to (B, K), learns
(one optimisation step lowers the loss), is deterministic under a seed, stays finite on a
constant input and works with a batch of one. Non-deep families (``KIND = "estimator"``)
meet the same contract through fit/predict_proba."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ssmbench.complexity import count_params, mmac
from ssmbench.models import FAMILIES, build_model

#: (C, L, K): C = 1 and 1345 (DuckDuckGeese), L = 8 and 2500, K = 2 and 82 (Pedestrian).
#: (1345, 2500) together is left out: ConvTran's temporal convolution alone would hold
#: 2 x 128 x 1345 x 2500 floats (3.4 GB) at its real width.
SHAPES = [(1, 8, 2), (1345, 8, 82), (1, 2500, 82), (1345, 64, 2), (3, 50, 5)]
DEEP = sorted(f for f, cls in FAMILIES.items() if getattr(cls, "KIND", "torch") != "estimator")
ESTIMATORS = sorted(set(FAMILIES) - set(DEEP))


def entry(family: str) -> dict:
    return {"family": family, **getattr(FAMILIES[family], "TEST_PARAMS", {})}


def build(family: str, C: int, K: int, L: int, seed: int = 0):
    torch.manual_seed(seed)
    return build_model(f"contract-{family}", C, K, L, entry(family))


@pytest.mark.parametrize("family", DEEP)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "C{}-L{}-K{}".format(*s))
def test_builds_and_maps_to_logits(family, shape):
    C, L, K = shape
    model = build(family, C, K, L).eval()
    with torch.no_grad():
        out = model(torch.randn(2, C, L))
    assert out.shape == (2, K) and out.dtype == torch.float32
    assert torch.isfinite(out).all()
    assert count_params(model) > 0 and mmac(model, C, L, device="meta") > 0


@pytest.mark.parametrize("family", DEEP)
def test_one_step_lowers_the_loss(family):
    C, L, K = 3, 32, 4
    gen = torch.Generator().manual_seed(1)
    x, y = torch.randn(8, C, L, generator=gen), torch.arange(8) % K
    model = build(family, C, K, L)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

    def loss_now():
        model.eval()
        with torch.no_grad():
            return F.cross_entropy(model(x), y).item()

    before = loss_now()
    model.train()
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
    assert loss_now() < before


@pytest.mark.parametrize("family", DEEP)
def test_same_seed_same_output(family):
    x = torch.randn(3, 4, 40, generator=torch.Generator().manual_seed(2))
    a, b = build(family, 4, 3, 40, seed=7).eval(), build(family, 4, 3, 40, seed=7).eval()
    with torch.no_grad():
        assert torch.equal(a(x), b(x))
        other = build(family, 4, 3, 40, seed=8).eval()
        assert not torch.equal(a(x), other(x))


@pytest.mark.parametrize("family", DEEP)
def test_constant_input_and_batch_of_one(family):
    C, L, K = 5, 24, 3
    model = build(family, C, K, L)
    constant = torch.full((4, C, L), 3.0)  # zero variance along time and across rows
    model.train()
    loss = F.cross_entropy(model(constant), torch.tensor([0, 1, 2, 0]))
    loss.backward()
    assert torch.isfinite(loss)
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    model.zero_grad()
    one = torch.randn(1, C, L)
    F.cross_entropy(model(one), torch.tensor([1])).backward()  # batch of one trains
    model.eval()
    with torch.no_grad():
        assert model(one).shape == (1, K) and torch.isfinite(model(constant)).all()


# ----------------------------------------------------------------------------- estimators
def _data(n, C, L, K, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % K
    X = rng.normal(size=(n, C, L)).astype(np.float32) + y[:, None, None]  # separable
    return X, y.astype(np.int64)


@pytest.mark.parametrize("family", ESTIMATORS)
@pytest.mark.parametrize("shape", [(1, 8, 2), (3, 64, 5)], ids=lambda s: "C{}-L{}-K{}".format(*s))
def test_estimator_fits_and_predicts(family, shape):
    C, L, K = shape
    X, y = _data(4 * K, C, L, K)
    model = build(family, C, K, L).configure(random_state=0)
    proba = model.fit(X, y).predict_proba(X[:3])
    assert proba.shape == (3, K) and np.allclose(proba.sum(axis=1), 1.0)
    assert model.predict_proba(X[:1]).shape == (1, K)  # a batch of one
    assert np.isfinite(model.predict_proba(np.full((2, C, L), 3.0, np.float32))).all()
    again = build(family, C, K, L).configure(random_state=0).fit(X, y).predict_proba(X[:3])
    assert np.array_equal(proba, again)  # same seed, same model


@pytest.mark.parametrize("family", ESTIMATORS)
def test_estimator_learns_and_handles_a_missing_class(family):
    C, L, K = 2, 32, 3
    X, y = _data(30, C, L, K)
    model = build(family, C, K, L).configure(random_state=0).fit(X, y)
    assert np.mean(model.predict_proba(X).argmax(axis=1) == y) > 0.9
    keep = y != 2  # a class absent from the training rows gets probability 0
    proba = build(family, C, K, L).configure(random_state=0).fit(X[keep], y[keep]).predict_proba(X)
    assert proba.shape == (30, 3) and np.all(proba[:, 2] == 0)
