"""The scan a model ran (ssmbench.models.scan_paths): each layer with a scan names the path
its last forward pass took, and a run's record carries it as ``scan`` (null for a model
without one). On the CPU: Mamba1 fused (stepwise or parallel when its ``scan_method`` says
so), Mamba2 parallel, the TIDES family fused (numba; chunked without it or with
``use_fused`` off, sequential in recurrent mode), the Fading Flash models' loop
sequential, MS4N none."""

from __future__ import annotations

import pytest
import torch
from test_protocol import basic_motions, spec_for  # noqa: F401

from ssmbench.models import MS4Classifier, numba_runtime
from ssmbench.models.mamba import Mamba1Classifier, Mamba1Mixer, Mamba2Classifier
from ssmbench.models.minimal_ssm import MinimalSSMClassifier
from ssmbench.models.numba_runtime import numba_missing
from ssmbench.models.scan_paths import (
    CHUNKED_LINEAR,
    FUSED_CPU_SELECTIVE,
    FUSED_TIDES_CPU,
    PARALLEL_SELECTIVE,
    PARALLEL_SSD,
    SCAN_PATHS,
    SEQUENTIAL_LOOP,
    SEQUENTIAL_RECURRENT,
    STEPWISE_SELECTIVE,
    scan_of,
)
from ssmbench.models.tides import MambaSClassifier, S5Classifier, TIDESClassifier
from ssmbench.train.protocol import run_job

C, K, L = 3, 4, 20


def _ran(model, steps: bool = False) -> str | None:
    """``scan_of(model)`` after one forward pass of a (2, C, L) batch."""
    torch.manual_seed(0)
    x = torch.randn(2, C, L)
    with torch.no_grad():
        model(x, torch.ones(2, L)) if steps else model(x)
    return scan_of(model)


def test_mamba1_names_the_method_it_ran(monkeypatch):
    model = Mamba1Classifier(C, K, L, d_model=8, d_state=4, n_layers=2)
    assert scan_of(model) is None  # nothing has run yet
    assert _ran(model) == FUSED_CPU_SELECTIVE  # auto on the CPU
    for mixer in model.mixers:
        mixer.scan_method = "parallel"
    assert _ran(model) == PARALLEL_SELECTIVE
    monkeypatch.setattr(Mamba1Mixer, "scan_method", "stepwise")
    model = Mamba1Classifier(C, K, L, d_model=8, d_state=4)
    assert _ran(model) == STEPWISE_SELECTIVE
    # where the fused kernel cannot run (here numba made to look missing) the stepwise scan
    # runs in its place, and the layer names it
    monkeypatch.setattr(Mamba1Mixer, "scan_method", "auto")
    monkeypatch.setattr(numba_runtime, "numba_missing", lambda: "numba does not import (test)")
    assert _ran(model) == STEPWISE_SELECTIVE


def test_the_other_scan_layers_name_their_path():
    assert _ran(Mamba2Classifier(C, K, L, d_model=8, d_state=4, headdim=4)) == PARALLEL_SSD
    fused = CHUNKED_LINEAR if numba_missing() else FUSED_TIDES_CPU
    for cls in (TIDESClassifier, S5Classifier, MambaSClassifier):
        model = cls(C, K, L, **cls.TEST_PARAMS)
        assert _ran(model, steps=True) == fused, cls.__name__
        for block in model.blocks:
            block.ssm.use_fused = False
        assert _ran(model, steps=True) == CHUNKED_LINEAR, cls.__name__
        assert _ran(model.set_recurrent(), steps=True) == SEQUENTIAL_RECURRENT, cls.__name__
    assert _ran(MinimalSSMClassifier(C, K, L), steps=True) == SEQUENTIAL_LOOP


def test_a_model_without_a_scan_has_none():
    assert _ran(MS4Classifier(C, K, L, **MS4Classifier.TEST_PARAMS)) is None
    assert scan_of(object()) is None  # an estimator


def test_every_name_says_its_kind():
    kinds = {name.split(" (")[0] for name in SCAN_PATHS}
    assert kinds == {"fused", "parallel", "chunked", "stepwise", "sequential"}
    assert len(set(SCAN_PATHS)) == len(SCAN_PATHS)


def test_the_record_names_the_scan_that_ran(basic_motions, tmp_path, monkeypatch):  # noqa: F811
    spec = spec_for(basic_motions, model="Mamba1", max_epochs=1)
    spec["model_params"].update(d_model=8, d_state=4)
    logs = []
    record = run_job(spec, tmp_path / "auto" / "fold0.json", log=logs.append)
    assert record["scan"] == FUSED_CPU_SELECTIVE
    assert sum(line.endswith(f"] scan: {FUSED_CPU_SELECTIVE}") for line in logs) == 1, logs
    monkeypatch.setattr(Mamba1Mixer, "scan_method", "parallel")
    record = run_job(spec, tmp_path / "parallel" / "fold0.json", log=lambda _: None)
    assert record["scan"] == PARALLEL_SELECTIVE


@pytest.mark.parametrize("bad", ["numba", "loop"])
def test_an_unknown_method_is_refused(bad):
    mixer = Mamba1Mixer(8, 4)
    mixer.scan_method = bad
    with pytest.raises(ValueError, match="method must be one of"):
        mixer(torch.randn(1, 5, 8))
