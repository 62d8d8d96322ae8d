"""The model contract: what every model family meets, built-in or a researcher's own
(``family: package.module:Class``), checked on small inputs.

A deep family (aeon-style, each class may give small ``TEST_PARAMS``): it builds and maps
float32 (B, C, L) to finite logits (B, K) with parameters and MMac counted (also on the
meta device, where the complexity counts run); it learns (one optimisation step lowers
the loss; every parameter gets a gradient); a training batch changes no buffer but the
running statistics of norms and draws from neither Python's nor NumPy's generator (so a
batch abandoned on a stop signal can be undone, ``ssmbench.train.rewind``); it is
deterministic under a seed (in evaluation, and in training where dropout draws from it)
and differs under another seed; it stays finite on constant inputs and trains with a batch
of one; where it sets ``SUPPORTS_PER_STEP``, it maps to one output per step (B, L, K).
A non-deep family (``is_estimator``) fits and predicts probabilities over all K classes,
the same under the same seed, learns a separable problem and gives a class absent from
its training rows probability 0.

``checks(family)`` lists the checks that apply; ``run_check`` runs one and returns None or
what failed. ``ssmbench check-model`` runs them all on a class; tests/test_model_contract.py
runs them on every built-in family, with larger shapes besides.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

#: (C, L, K) every deep family is built for by default: one channel and one step, two
#: classes; a short multichannel series with many classes; a longer one
SHAPES = ((1, 1, 2), (1, 8, 2), (3, 50, 5), (16, 64, 12), (2, 500, 3))


class ContractFailure(AssertionError):
    """A family that does not meet one point of the contract; the message says which."""


@dataclass(frozen=True)
class Check:
    """One point of the contract: ``name`` (with its shape, if any) and what it runs."""

    name: str
    run: Callable[[str, Mapping[str, Any]], None]


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ContractFailure(message)


def build(family: str, hyper: Mapping[str, Any], C: int, K: int, L: int, seed: int = 0,
          per_step: bool = False):  # fmt: skip
    """The family's model for (C, K, L) with ``hyper``, its parameters drawn from ``seed``."""
    import torch

    from ssmbench.models import build_model

    torch.manual_seed(seed)
    return build_model(f"contract:{family}", C, K, L, {"family": family, **hyper},
                       per_step=per_step)  # fmt: skip


def maps_to_logits(shape: tuple[int, int, int]) -> Callable[[str, Mapping], None]:
    def check(family: str, hyper: Mapping) -> None:
        import torch

        from ssmbench.complexity import count_params, mmac

        C, L, K = shape
        model = build(family, hyper, C, K, L).eval()
        with torch.no_grad():
            out = model(torch.randn(2, C, L))
        _require(
            tuple(out.shape) == (2, K) and out.dtype == torch.float32,
            f"(2, {C}, {L}) gave {tuple(out.shape)} {out.dtype}; expected (2, {K}) float32",
        )
        _require(bool(torch.isfinite(out).all()), "the logits are not all finite")
        _require(count_params(model) > 0, "the model has no parameters")
        _require(mmac(model, C, L, device="meta") > 0, "its MMac count (meta device) is 0")

    return check


def _batch(C: int = 3, L: int = 32, K: int = 4):
    import torch

    gen = torch.Generator().manual_seed(1)
    return torch.randn(8, C, L, generator=gen), torch.arange(8) % K


def one_step_lowers_the_loss(family: str, hyper: Mapping) -> None:
    import torch
    import torch.nn.functional as F

    x, y = _batch()
    model = build(family, hyper, 3, 4, 32)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

    def loss_now() -> float:
        model.eval()
        with torch.no_grad():
            return F.cross_entropy(model(x), y).item()

    before = loss_now()
    model.train()
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None]
    _require(not missing, f"parameters without a gradient (never trained): {missing}")
    optimizer.step()
    after = loss_now()
    _require(after < before, f"one Adam step (lr 1e-2) did not lower the loss: {before} -> {after}")


def a_training_batch_changes_only_what_a_rewind_restores(family: str, hyper: Mapping) -> None:
    import torch
    import torch.nn.functional as F

    from ssmbench.train.rewind import host_random_digest, norm_statistics

    x, y = _batch()
    model = build(family, hyper, 3, 4, 32).train()
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
    _require(not changed, f"a training batch changed buffers other than norm statistics: {changed}")
    _require(host_random_digest() == host,
             "a training batch drew from Python's or NumPy's random generator (draw from "
             "torch's, which the run seeds and a rewind restores)")  # fmt: skip


def meta_device_forward(family: str, hyper: Mapping) -> None:
    import torch

    model = build(family, hyper, 3, 4, 1000).to("meta")
    with torch.no_grad():
        out = model(torch.empty(2, 3, 1000, device="meta"))
    shape = tuple(out.shape)
    _require(shape == (2, 4) and out.device.type == "meta",
             f"on the meta device (2, 3, 1000) gave {shape} on {out.device}")  # fmt: skip


def same_seed_same_output(family: str, hyper: Mapping) -> None:
    import torch

    x = torch.randn(3, 4, 40, generator=torch.Generator().manual_seed(2))
    a = build(family, hyper, 4, 3, 40, seed=7).eval()
    b = build(family, hyper, 4, 3, 40, seed=7).eval()
    with torch.no_grad():
        _require(torch.equal(a(x), b(x)), "two models built under the same seed differ")
        other = build(family, hyper, 4, 3, 40, seed=8).eval()
        _require(not torch.equal(a(x), other(x)),
                 "models built under seeds 7 and 8 give the same output (parameters not drawn "
                 "from torch's generator)")  # fmt: skip
    outputs = []
    for model in (a.train(), b.train()):  # training: dropout and sampling draw from the seed
        torch.manual_seed(3)
        outputs.append(model(x))
    _require(torch.equal(*outputs), "in training mode, the same seed gives different outputs")


def constant_input_and_batch_of_one(family: str, hyper: Mapping) -> None:
    import torch
    import torch.nn.functional as F

    C, L, K = 5, 24, 3
    model = build(family, hyper, C, K, L)
    model.train()
    for value in (0.0, 3.0, 1e3):
        constant = torch.full((4, C, L), value)  # zero variance along time and across rows
        loss = F.cross_entropy(model(constant), torch.tensor([0, 1, 2, 0]))
        loss.backward()
        _require(bool(torch.isfinite(loss)), f"the loss of a constant input {value} is not finite")
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        _require(all(bool(torch.isfinite(g).all()) for g in grads),
                 f"a constant input {value} gives non-finite gradients")  # fmt: skip
        model.zero_grad()
    one = torch.randn(1, C, L)
    F.cross_entropy(model(one), torch.tensor([1])).backward()  # a batch of one trains
    model.eval()
    with torch.no_grad():
        _require(tuple(model(one).shape) == (1, K), "a batch of one does not map to (1, K)")
        _require(bool(torch.isfinite(model(constant)).all()),
                 "evaluation on a constant input is not finite")  # fmt: skip


def per_step_output(family: str, hyper: Mapping) -> None:
    import torch

    C, L, K = 2, 17, 5
    model = build(family, hyper, C, K, L, per_step=True)
    out = model(torch.randn(1, C, L))  # a batch of one, one output vector per step
    _require(tuple(out.shape) == (1, L, K), f"per_step: (1, {C}, {L}) gave {tuple(out.shape)}")
    out.sum().backward()
    with torch.no_grad():
        shape = tuple(model.eval()(torch.randn(3, C, L)).shape)
    _require(shape == (3, L, K), f"per_step: (3, {C}, {L}) gave {shape}")


def _data(n: int, C: int, L: int, K: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % K
    X = rng.normal(size=(n, C, L)).astype(np.float32) + y[:, None, None]  # separable
    return X, y.astype(np.int64)


def estimator_fits_and_predicts(shape: tuple[int, int, int]) -> Callable[[str, Mapping], None]:
    def check(family: str, hyper: Mapping) -> None:
        C, L, K = shape
        X, y = _data(4 * K, C, L, K)
        model = build(family, hyper, C, K, L).configure(random_state=0)
        proba = model.fit(X, y).predict_proba(X[:3])
        _require(proba.shape == (3, K) and np.allclose(proba.sum(axis=1), 1.0),
                 f"predict_proba gave {proba.shape}, rows summing to {proba.sum(axis=1)}; "
                 f"expected (3, {K}) summing to 1")  # fmt: skip
        _require(model.predict_proba(X[:1]).shape == (1, K), "a batch of one")
        constant = model.predict_proba(np.full((2, C, L), 3.0, np.float32))
        _require(bool(np.isfinite(constant).all()), "a constant input gives non-finite output")
        again = build(family, hyper, C, K, L).configure(random_state=0).fit(X, y)
        _require(np.array_equal(proba, again.predict_proba(X[:3])),
                 "the same random_state gives a different model")  # fmt: skip

    return check


def estimator_learns_and_handles_a_missing_class(family: str, hyper: Mapping) -> None:
    C, L, K = 2, 32, 3
    X, y = _data(30, C, L, K)
    model = build(family, hyper, C, K, L).configure(random_state=0).fit(X, y)
    accuracy = float(np.mean(model.predict_proba(X).argmax(axis=1) == y))
    _require(accuracy > 0.9, f"training accuracy {accuracy:.2f} on a separable problem")
    keep = y != 2  # a class absent from the training rows gets probability 0
    proba = build(family, hyper, C, K, L).configure(random_state=0).fit(X[keep], y[keep])
    proba = proba.predict_proba(X)
    _require(proba.shape == (30, 3) and bool(np.all(proba[:, 2] == 0)),
             "a class absent from the training rows must get probability 0")  # fmt: skip


def checks(family: str, shapes=SHAPES) -> list[Check]:
    """The contract's checks that apply to ``family`` (a built-in name or an import
    path), deep or non-deep, the shape checks at ``shapes`` ((C, L, K) each)."""
    from ssmbench.models import FAMILIES, is_estimator

    cls = FAMILIES[family]
    if is_estimator(cls):
        return [
            *(
                Check("fits and predicts, C{} L{} K{}".format(*s), estimator_fits_and_predicts(s))
                for s in ((1, 8, 2), (3, 64, 5))
            ),  # fmt: skip
            Check(
                "learns; a class absent from training gets probability 0",
                estimator_learns_and_handles_a_missing_class,
            ),  # fmt: skip
        ]
    found = [Check("maps (B, C, L) to logits (B, K), C{} L{} K{}".format(*s), maps_to_logits(s))
             for s in shapes]  # fmt: skip
    found += [
        Check("one step lowers the loss; every parameter gets a gradient",
              one_step_lowers_the_loss),
        Check("a training batch changes only what a rewind restores",
              a_training_batch_changes_only_what_a_rewind_restores),
        Check("forward on the meta device", meta_device_forward),
        Check("the same seed gives the same model and output", same_seed_same_output),
        Check("constant inputs stay finite; a batch of one trains",
              constant_input_and_batch_of_one),
    ]  # fmt: skip
    if getattr(cls, "SUPPORTS_PER_STEP", False):
        found.append(Check("one output per step (B, L, K)", per_step_output))
    return found


def contract_params(family: str) -> dict:
    """The small hyperparameters the contract builds ``family`` with: its class's
    ``TEST_PARAMS``, else its defaults."""
    from ssmbench.models import FAMILIES

    return dict(getattr(FAMILIES[family], "TEST_PARAMS", {}))


def run_check(check: Check, family: str, hyper: Mapping) -> str | None:
    """None when ``family`` with ``hyper`` meets ``check``; else what failed (a
    ContractFailure's message, or the exception the model raised with its last frame)."""
    try:
        check.run(family, hyper)
    except ContractFailure as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001 - the model's own error is the finding
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        return f"{type(exc).__name__}: {exc} (at {frame.filename}:{frame.lineno})"
    return None
