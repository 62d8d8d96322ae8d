"""Table 2 of the MS4N paper (MS4 ablation on MONSTER): each row's parameter count and MMac,
averaged over the 29 MONSTER datasets (each built with its own C, K, L from the catalog), as
our constructions give them; and the two options of ``MS4Classifier`` these need
(``block_input_proj``, ``learnable_b``). Candidates tried: docs/table2_counts.md.

Tolerances: parameters to the unit the paper prints (every row). MMac within 0.5% for
MS4N, MS4 and MS4-H128. MS4-2Layer's MMac is 0.80% above the paper's 52.08 (52.50): its
exact parameter count pins the second block's extra work to one Linear(H, H) with bias at
every step (4,160 MACs), where the paper's figure implies ~3,990; so it is held to 1%, and
its value is pinned so that a change of construction or convention shows up here."""

from __future__ import annotations

import csv

import pytest
import torch
from conftest import REPO

from ssmbench.complexity import count_params, domain_averages
from ssmbench.models import MS4Classifier, build_model
from ssmbench.params_file import read_params

#: the MS4 family's params.yaml entries for Table 2 (MS4-2Layer / MS4-H128 with the keys
#: that reproduce the paper's counts)
_BASE = {
    "family": "ms4",
    "d_model": 64,
    "d_state": 64,
    "n_layers": 1,
    "layer_norm": False,
    "dropout": 0.01,
    "b_scales_step": True,
    "first_layer_residual": False,
}
TABLE2 = {
    "MS4N": dict(_BASE, layer_norm=True),
    "MS4": dict(_BASE),
    "MS4-2Layer": dict(_BASE, n_layers=2, block_input_proj=True, learnable_b=False),
    "MS4-H128": dict(_BASE, d_model=128, d_state=128, learnable_b=False),
}
MMAC_TOLERANCE = {"MS4N": 0.005, "MS4": 0.005, "MS4-H128": 0.005, "MS4-2Layer": 0.01}
pytestmark = pytest.mark.xdist_group("table2")


def _published() -> dict[tuple[str, str], float]:
    path = REPO / "src" / "ssmbench" / "reference" / "published_summary.csv"
    with path.open(newline="") as f:
        return {
            (r["model"], r["metric"]): float(r["value"])
            for r in csv.DictReader(f)
            if r["source"] == "table2" and r["metric"] in ("params", "mmac")
        }


@pytest.fixture(scope="module")
def averages() -> dict[str, tuple[float, float]]:
    """{model: (params, MMac)}, the mean over all MONSTER datasets of the catalog."""
    out = {}
    for name, entry in TABLE2.items():
        domains = domain_averages(name, entry)
        n = sum(d["n"] for d in domains.values())
        assert n == 29, name
        params = sum(d["params"] * d["n"] for d in domains.values()) / n
        mmac = sum(d["mmac"] * d["n"] for d in domains.values()) / n
        out[name] = (params, mmac)
    return out


@pytest.mark.parametrize("name", list(TABLE2))
def test_table2_parameter_count_exactly(averages, name):
    assert round(averages[name][0]) == _published()[(name, "params")]


@pytest.mark.parametrize("name", list(TABLE2))
def test_table2_mmac_within_tolerance(averages, name):
    paper = _published()[(name, "mmac")]
    assert averages[name][1] == pytest.approx(paper, rel=MMAC_TOLERANCE[name])


def test_table2_mmac_values_pinned(averages):
    """The documented figures (docs/table2_counts.md), to the digits printed there."""
    got = {name: round(m, 2) for name, (_, m) in averages.items()}
    assert got == {"MS4N": 21.53, "MS4": 21.37, "MS4-2Layer": 52.50, "MS4-H128": 82.80}


# --- the two options ------------------------------------------------------------------------


@pytest.mark.parametrize("b_scales_step", [False, True])
def test_fixed_b_is_the_kernel_with_b_one(b_scales_step):
    torch.manual_seed(0)
    learned = MS4Classifier(3, 4, d_model=8, d_state=8, b_scales_step=b_scales_step)
    torch.manual_seed(0)
    fixed = MS4Classifier(
        3, 4, d_model=8, d_state=8, b_scales_step=b_scales_step, learnable_b=False
    )
    kernel = fixed.ssm_layers[0].kernel
    assert "B" not in dict(kernel.named_parameters())
    assert not any(k.endswith(".B") for k in fixed.state_dict())
    assert count_params(learned) - count_params(fixed) == 8 * 4  # H * N/2
    assert kernel.B.is_complex() == (not b_scales_step) and torch.all(kernel.B == 1)
    with torch.no_grad():
        torch.testing.assert_close(kernel(30), learned.ssm_layers[0].kernel(30))
    x = torch.randn(2, 3, 30)
    fixed(x).sum().backward()  # trains; the constant B takes no gradient
    assert kernel.C.grad is not None
    as64 = fixed.to(torch.float64)
    expected = torch.complex128 if not b_scales_step else torch.float64
    assert as64.ssm_layers[0].kernel.B.dtype == expected


def test_block_input_proj_is_the_authors_block():
    """x1 = GLU(S4D(Linear(C,H) x)) (no residual around the first block), then
    x2 = x1 + GLU(S4D(Linear(H,H) x1)); with one layer the option changes nothing."""
    torch.manual_seed(1)
    model = MS4Classifier(
        3,
        4,
        d_model=8,
        d_state=8,
        n_layers=2,
        layer_norm=False,
        block_input_proj=True,
        first_layer_residual=False,
    ).eval()
    x = torch.randn(2, 3, 20)
    with torch.no_grad():
        h = model.input_proj(x.transpose(1, 2))
        h = model.mixers[0](model.ssm_layers[0](h))  # the layers take (B, L, H)
        u = model.block_projs[0](h)
        h = h + model.mixers[1](model.ssm_layers[1](u))
        torch.testing.assert_close(model(x), model.head(h.mean(1)))
    assert (
        count_params(model)
        - count_params(MS4Classifier(3, 4, d_model=8, d_state=8, n_layers=2, layer_norm=False))
        == 8 * 8 + 8
    )

    torch.manual_seed(2)
    one = MS4Classifier(3, 4, d_model=8, d_state=8, block_input_proj=True).eval()
    torch.manual_seed(2)
    default = MS4Classifier(3, 4, d_model=8, d_state=8).eval()
    assert len(one.block_projs) == 0
    with torch.no_grad():
        torch.testing.assert_close(one(x), default(x))


def test_defaults_keep_ms4n_and_ms4():
    for name in ("MS4N", "MS4"):
        model = build_model(name, 3, 5, 100, TABLE2[name])
        assert len(model.block_projs) == 0
        assert "B" in dict(model.ssm_layers[0].kernel.named_parameters())


def test_table2_puts_our_built_counts_beside_the_papers():
    """The report's Table 2: our parameters and MMac are the mean over the 29 MONSTER
    datasets of each variant built for each (as the paper counts them), whatever the
    records' own datasets."""
    import pandas as pd
    from conftest import REPO

    from ssmbench.report.paper_tables import table2
    from ssmbench.report.results import paper_per_dataset
    from ssmbench.report.table4 import table4_comparison

    models = read_params(REPO / "params.yaml")["models"]
    counts = table4_comparison(models, ["MS4N", "MS4", "MS4-2Layer", "MS4-H128"])
    paper = paper_per_dataset()
    ours = paper[paper["model"].isin(["MS4N", "MS4"]) & (paper["dataset"] == "Pedestrian")]
    variants = ours.assign(model=ours["model"].map({"MS4N": "MS4-2Layer", "MS4": "MS4-H128"}))
    table = table2(pd.concat([ours, variants]), paper, counts).set_index("Model")
    assert (
        table.loc["MS4-2Layer", "Params (ours)"]
        == "43,300"
        == table.loc["MS4-2Layer", "Params (paper)"]
    )
    assert table.loc["MS4-H128", "Params (ours)"] == "85,948"
    assert table.loc["MS4-H128", "MMac (ours)"] == "82.80"  # paper 82.73
    assert table.loc["MS4-2Layer", "MMac (ours)"] == "52.50"  # paper 52.08: the closest found
    assert table.loc["MS4N", "Datasets (ours)"] == "1"
    assert table.loc["MS4N", "Datasets (paper)"] == "29"
