"""Probes of a trained model that its dataset asks for: facts about the mechanism the
model learnt, recorded beside its scores.

A dataset lists its probes in ``meta.json`` under ``"probes"`` (the Fading Flash
generator, ``data/synthetic/prepare.py``, writes ``effective_decay``); a model answers a probe
when it has the method the probe calls. The run record holds the answers under
``"probes"`` (``None`` when no probe applies), measured on the tested (best) weights.

``effective_decay`` (the TIDES paper's mechanism figure; ``effective_lambda_per_zone`` of
the reference's ``fading_flash/tides_toy_paper_figures.py`` at 4b51adc): for each zone's
input (a one-hot of its rate, no flash) and each Δ of the test grid, the model's effective
continuous-time decay rate of each state, −Re Λ(u) · step(u, Δ) / Δ
(``model.effective_decay_rates(x, dt)``), and the state closest to the zone's true rate
(the reference's choice: the state that best matches).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

#: probe name -> the model method it calls
PROBE_METHODS = {"effective_decay": "effective_decay_rates"}


@torch.no_grad()
def effective_decay(model, probe: Mapping) -> dict:
    """``{"rates", "dts", "per_state": [zone][dt][state], "matched": [zone][dt]}``."""
    rates = [float(r) for r in probe["rates"]]
    dts = [float(d) for d in probe["dts"]]
    device = next(model.parameters()).device
    per_state, matched = [], []
    for rate, inputs in zip(rates, probe["inputs"], strict=True):
        x = torch.tensor(inputs, dtype=torch.float32, device=device)
        rows = [model.effective_decay_rates(x, dt).double().cpu().numpy() for dt in dts]
        per_state.append([[float(v) for v in row] for row in rows])
        matched.append([float(row[np.argmin(np.abs(row - rate))]) for row in rows])
    return {"rates": rates, "dts": dts, "per_state": per_state, "matched": matched}


PROBES = {"effective_decay": effective_decay}


def run_probes(model, meta: Mapping) -> dict | None:
    """The answers of ``model`` to its dataset's probes (those it has the method for), in
    eval mode; None when none applies."""
    asked = meta.get("probes") or {}
    answers = {}
    was_training = model.training
    model.eval()
    try:
        for name, probe in asked.items():
            if name in PROBES and hasattr(model, PROBE_METHODS[name]):
                answers[name] = PROBES[name](model, probe)
    finally:
        model.train(was_training)
    return answers or None
