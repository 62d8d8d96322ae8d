"""What the TIDES family's classifiers compute, written to a folder for comparison with
another version of the code (tests/test_tides_config.py runs this once on this checkout's
package and once on an earlier commit's, each on the PYTHONPATH it is given):

    python tests/tides_numbers.py OUT

For each case (a family and options; tests/test_tides_config.py's CASES): the model built
under ``torch.manual_seed(0)``, its state_dict, its output on a fixed input in evaluation
and in training mode (dropout drawn from the same seed), and the gradient of the training
output's sum for every parameter, into OUT/<case>.pt; the constructors' signatures (the
hyperparameters params.yaml may set, their types and defaults), ``CHOICES``,
``INT_MINIMUM`` and ``SUPPORTS_PER_STEP`` into OUT/interface.json.
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

import torch

from ssmbench.models.tides import MambaSClassifier, S5Classifier, TIDESClassifier

FAMILIES = {"tides": TIDESClassifier, "s5": S5Classifier, "mambas": MambaSClassifier}
ID = "input_dependent"
SMALL = {"d_model": 8, "ssm_size": 8, "ssm_blocks": 2, "encoder_depth": 0}
#: case -> (family, options): defaults, the test sizes and every branch of the options
CASES = {
    "tides-defaults": ("tides", {}),
    "s5-defaults": ("s5", {}),
    "mambas-defaults": ("mambas", {}),
    "tides-test": ("tides", {**SMALL, "rank": 2}),
    "tides-conj-bidir": ("tides", {**SMALL, "rank": 3, "conj_sym": True, "bidirectional": True}),
    "tides-rank0-exp": ("tides", {**SMALL, "rank": 0, "lambda_re_map": "exp", "ff_mult": 2.0}),
    "tides-scale-modes": ("tides", {**SMALL, "rank": -1, "lambda_im_mode": ID, "dropout": 0.3}),
    "tides-real": ("tides", {**SMALL, "real_lambda": True, "lambda_re_map": "stable"}),
    "tides-lti-bilinear": (
        "tides",
        {**SMALL, "lambda_re_mode": "lti", "bc_mode": "lti", "discretization": "bilinear"},
    ),
    "tides-mask-per-step": (
        "tides",
        {**SMALL, "mask_channels": True, "per_step": True, "proj_norm": False},
    ),
    "tides-random-init": (
        "tides",
        {**SMALL, "proj_init": "random", "lambda_encoder_depth": 1, "clip_eigs": True},
    ),
    "s5-test": ("s5", SMALL),
    "s5-plain-time": ("s5", {**SMALL, "block_glu": "plain", "time_channel": True}),
    "s5-conj-softplus": ("s5", {**SMALL, "conj_sym": True, "lambda_re_map": "softplus"}),
    "s5-dt": ("s5", {**SMALL, "dt_min": 0.01, "dt_max": 0.5, "n_layers": 3}),
    "mambas-test": ("mambas", SMALL),
    "mambas-norm-time": ("mambas", {**SMALL, "proj_norm": True, "time_channel": True}),
    "mambas-bidir-per-step": ("mambas", {**SMALL, "bidirectional": True, "per_step": True}),
}
B, C, K, L = 3, 4, 5, 17


def _inputs(mask: bool) -> dict:
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(B, C, L, generator=generator)
    steps = torch.rand(B, L, generator=generator) + 0.5
    steps[0, -3:] = 0.0  # a padded tail: Δ = 0 carries the state
    inputs = {"steps": steps}
    if mask:
        inputs["mask"] = (torch.rand(B, C, L, generator=generator) > 0.3).float()
    return {"x": x, **inputs}


def numbers(family: str, options: dict) -> dict:
    torch.manual_seed(0)
    model = FAMILIES[family](C, K, L, **options)
    inputs = _inputs(options.get("mask_channels", False))
    with torch.no_grad():
        evaluation = model.eval()(**inputs)
    torch.manual_seed(2)
    training = model.train()(**inputs)
    training.sum().backward()
    return {
        "state": {k: v.detach().clone() for k, v in model.state_dict().items()},
        "eval": evaluation,
        "train": training.detach(),
        "grad": {n: p.grad for n, p in model.named_parameters() if p.grad is not None},
    }


def interface() -> dict:
    described = {}
    for family, cls in FAMILIES.items():
        signature = inspect.signature(cls, eval_str=True)
        described[family] = {
            "parameters": [
                [name, getattr(p.annotation, "__name__", str(p.annotation)), repr(p.default)]
                for name, p in signature.parameters.items()
            ],
            "choices": {k: list(v) for k, v in sorted(cls.CHOICES.items())},
            "int_minimum": cls.INT_MINIMUM,
            "supports_per_step": cls.SUPPORTS_PER_STEP,
            "hyperparams": {k: t.__name__ for k, t in cls.HYPERPARAMS.items()},
        }
    return described


def main(out: Path) -> None:
    torch.set_num_threads(1)
    out.mkdir(parents=True, exist_ok=True)
    for case, (family, options) in CASES.items():
        torch.save(numbers(family, options), out / f"{case}.pt")
    (out / "interface.json").write_text(json.dumps(interface(), indent=1, sort_keys=True))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
