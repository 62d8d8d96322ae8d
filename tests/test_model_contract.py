"""One contract for every registered model family (aeon-style: each family's class gives
small ``TEST_PARAMS``): it builds for extreme shapes (also on the meta device), maps
(B, C, L) to (B, K), learns (one optimisation step lowers the loss; every parameter gets a
gradient), is deterministic under a seed (in evaluation and in training, where dropout and
sampling draw from it), stays finite on constant inputs, works with a batch of one, and,
where the family offers it, maps to one output per step (B, L, K). Every params.yaml model
builds at its real width, also for the extreme shape. Non-deep families (``is_estimator``)
meet the same contract through fit/predict_proba."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import REPO

from ssmbench.complexity import count_params, mmac
from ssmbench.models import FAMILIES, build_model, is_estimator, validate_model_params
from ssmbench.params_file import read_params
from ssmbench.train.rewind import host_random_digest, norm_statistics

#: (C, L, K): C = 1 and 1345 (DuckDuckGeese), L = 1, 8 and 2500, K = 2 and 82 (Pedestrian).
SHAPES = [(1, 1, 2), (1, 8, 2), (1345, 8, 82), (1, 2500, 82), (1345, 64, 2), (3, 50, 5),
          (1345, 2500, 2)]  # fmt: skip
#: (1345, 2500) is left out for ConvTran: its temporal convolution alone would hold
#: 2 x 32 x 1345 x 2500 floats (0.9 GB) at the contract width (3.4 GB at its real width).
TOO_LARGE = {("convtran", (1345, 2500, 2))}
#: RFormer's level-2 signature of a 1,346-dimensional path has 1.8 million features per
#: token (a block of ~10^13 weights): its constructor refuses a block over 10^9.
TOO_LARGE |= {("rformer", shape) for shape in SHAPES if shape[0] == 1345}
#: Log-NCDE's depth-2 vector field at C = 1345 has 1346 paths x 905,185 log-signature
#: coordinates per window, LinODEnet's filter and ODE C x C matrices (H = N = C) and a
#: matrix exponential per step: at L = 2500 each is minutes on a CPU for one contract check.
TOO_LARGE |= {("logncde", (1345, 2500, 2)), ("linodenet", (1345, 2500, 2))}


def _cannot_exist(entry: dict, C: int, L: int) -> bool:
    """A params.yaml entry that cannot be built at (C, L) by construction: RFormer with
    more windows than steps, or with C = 1345 (see TOO_LARGE)."""
    return entry["family"] == "rformer" and (entry.get("n_windows", 100) > L or C > 64)


#: (family, C) whose params.yaml entries are built but not run there: Log-NCDE at its real
#: widths and C = 1345 spends ~8 s per forward pass (the contract's own shapes run it).
BUILD_ONLY = {("logncde", 1345)}


DEEP = sorted(f for f, cls in FAMILIES.items() if not is_estimator(cls))
PER_STEP = sorted(f for f in DEEP if FAMILIES[f].SUPPORTS_PER_STEP)
ESTIMATORS = sorted(set(FAMILIES) - set(DEEP))
PARAMS_MODELS = read_params(REPO / "params.yaml")["models"]


def entry(family: str) -> dict:
    return {"family": family, **getattr(FAMILIES[family], "TEST_PARAMS", {})}


def build(family: str, C: int, K: int, L: int, seed: int = 0):
    torch.manual_seed(seed)
    return build_model(f"contract-{family}", C, K, L, entry(family))


@pytest.mark.parametrize("family", DEEP)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "C{}-L{}-K{}".format(*s))
def test_builds_and_maps_to_logits(family, shape):
    if (family, shape) in TOO_LARGE:
        pytest.skip("too large for this family (see TOO_LARGE)")
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
    missing = [n for n, p in model.named_parameters() if p.grad is None]
    assert not missing, missing  # every parameter is trained
    optimizer.step()
    assert loss_now() < before


@pytest.mark.parametrize("family", DEEP)
def test_a_training_batch_changes_only_what_a_rewind_restores(family):
    """A batch abandoned on a stop signal is undone by restoring torch's generators and
    the running statistics of norms (ssmbench.train.rewind): a training forward and
    backward may change no other buffer and draw from neither Python's nor NumPy's
    generator."""
    C, L, K = 3, 32, 4
    gen = torch.Generator().manual_seed(1)
    x, y = torch.randn(8, C, L, generator=gen), torch.arange(8) % K
    model = build(family, C, K, L).train()
    restored = {id(buffer) for buffer in norm_statistics(model)}
    before = {
        name: buffer.detach().clone()
        for name, buffer in model.named_buffers()
        if id(buffer) not in restored
    }
    host = host_random_digest()
    F.cross_entropy(model(x), y).backward()
    changed = [
        name
        for name, buffer in model.named_buffers()
        if name in before and not torch.equal(buffer.nan_to_num(), before[name].nan_to_num())
    ]
    assert not changed, changed
    assert host_random_digest() == host


@pytest.mark.parametrize("family", DEEP)
def test_meta_device_forward(family):
    model = build(family, 3, 4, 1000).to("meta")
    with torch.no_grad():
        out = model(torch.empty(2, 3, 1000, device="meta"))
    assert out.shape == (2, 4) and out.device.type == "meta"


@pytest.mark.parametrize("family", DEEP)
def test_same_seed_same_output(family):
    x = torch.randn(3, 4, 40, generator=torch.Generator().manual_seed(2))
    a, b = build(family, 4, 3, 40, seed=7).eval(), build(family, 4, 3, 40, seed=7).eval()
    with torch.no_grad():
        assert torch.equal(a(x), b(x))
        other = build(family, 4, 3, 40, seed=8).eval()
        assert not torch.equal(a(x), other(x))
    outputs = []
    for model in (a.train(), b.train()):  # training: dropout and sampling draw from the seed
        torch.manual_seed(3)
        outputs.append(model(x))
    assert torch.equal(*outputs)


@pytest.mark.parametrize("family", DEEP)
def test_constant_input_and_batch_of_one(family):
    C, L, K = 5, 24, 3
    model = build(family, C, K, L)
    model.train()
    for value in (0.0, 3.0, 1e3):
        constant = torch.full((4, C, L), value)  # zero variance along time and across rows
        loss = F.cross_entropy(model(constant), torch.tensor([0, 1, 2, 0]))
        loss.backward()
        assert torch.isfinite(loss), value
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        assert all(torch.isfinite(g).all() for g in grads), value
        model.zero_grad()
    one = torch.randn(1, C, L)
    F.cross_entropy(model(one), torch.tensor([1])).backward()  # batch of one trains
    model.eval()
    with torch.no_grad():
        assert model(one).shape == (1, K) and torch.isfinite(model(constant)).all()


@pytest.mark.parametrize("family", PER_STEP)
def test_per_step_output(family):
    C, L, K = 2, 17, 5
    torch.manual_seed(0)
    model = build_model(f"contract-{family}", C, K, L, entry(family), per_step=True)
    out = model(torch.randn(1, C, L))  # a batch of one, one output vector per step
    assert out.shape == (1, L, K)
    out.sum().backward()
    with torch.no_grad():
        assert model.eval()(torch.randn(3, C, L)).shape == (3, L, K)


@pytest.mark.parametrize("name", sorted(PARAMS_MODELS))
def test_params_yaml_models_validate_and_build(name):
    """Every params.yaml model at its real width (and at each dataset's own
    ``dataset_params``), for a small and an extreme (C, K)."""
    from ssmbench.config import model_entry

    params = {"models": PARAMS_MODELS}
    for dataset in [None, *(PARAMS_MODELS[name].get("dataset_params") or {})]:
        entry = model_entry(params, name, dataset)
        validate_model_params(name, entry)
        for C, L, K in [(2, 20, 3), (1345, 64, 82), (2, 600, 3)]:
            if _cannot_exist(entry, C, L):
                continue
            model = build_model(name, C, K, L, entry)
            if is_estimator(model):
                return  # fit/predict: test_estimator_fits_and_predicts
            if (entry["family"], C) in BUILD_ONLY:
                continue
            with torch.no_grad():
                assert model(torch.randn(1, C, L)).shape == (1, K)


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
