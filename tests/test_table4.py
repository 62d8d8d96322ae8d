"""Complexity fidelity: every deep model of params.yaml that the MS4N paper's Table 4 lists
reproduces its average parameter count and MMac per MONSTER domain (each domain's datasets
built with their own C, K, L from the catalog): MS4N and MS4 exactly (to the digits the
paper prints), every other model within 5%. A published MMac printed with two decimals
also matches when ours rounds to it (Mamba1's 0.01 and 0.07: 5% of 0.01 is below the
printing precision). The families whose module documents a closer fit (GRU and LSTM to the
parameter, Mamba to the unit, ConvTran's MMac to the digits printed) are held to it, and
FCN's documented gaps to their size.

The comparison (every model built for every MONSTER dataset) is computed once per session."""

from __future__ import annotations

import pytest
from conftest import REPO

from ssmbench.params_file import read_params
from ssmbench.report.table4 import declared_gap, declared_gaps, table4_comparison

MODELS = read_params(REPO / "params.yaml")["models"]
#: one xdist worker runs this file, so the session's comparison is built once
pytestmark = pytest.mark.xdist_group("table4")
TOLERANCE = 0.05
EXACT = ("MS4N", "MS4")


@pytest.fixture(scope="session")
def comparison():
    table = table4_comparison(MODELS)
    return table[table["params"].notna()]  # deep models (non-deep: "not applicable")


def _printed(value: float, paper: float) -> bool:
    return round(value, 2) == round(paper, 2) or round(value) == paper


def test_every_deep_model_of_table4_is_compared(comparison):
    deep_in_table4 = set(comparison["model"])
    assert {"MS4N", "MS4", "ConvTran", "Mamba1", "Mamba2", "Transformer", "Informer",
            "iTransformer", "GRU", "LSTM", "FCN", "HInception"} == deep_in_table4  # fmt: skip
    assert comparison.groupby("model").size().eq(6).all()  # six domains each


def test_ms4n_and_ms4_exactly(comparison):
    rows = comparison[comparison["model"].isin(EXACT)]
    assert len(rows) == 12
    for r in rows.itertuples():
        assert round(r.params) == r.params_paper, (r.model, r.domain)
        assert _printed(r.mmac, r.mmac_paper), (r.model, r.domain, r.mmac, r.mmac_paper)
        digits = 3 if r.mmac_paper < 10 else 2  # the digits Table 4 prints
        assert r.mmac == pytest.approx(r.mmac_paper, abs=0.6 * 10 ** -(digits - 1)), r.domain


def _declared_gap(model: str, key: str, domain: str) -> str | None:
    """A model class may declare where it cannot match Table 4, with the reason:
    ``TABLE4_GAPS = {(key, domain or "*"): why}`` (e.g. FCN)."""
    return declared_gap(MODELS[model]["family"], key, domain)


def test_other_models_within_five_percent_or_a_declared_gap(comparison):
    misses, declared_but_matching = [], []
    for r in comparison[~comparison["model"].isin(EXACT)].itertuples():
        for key in ("params", "mmac"):
            ours, paper = getattr(r, key), getattr(r, f"{key}_paper")
            within = abs(ours / paper - 1) <= TOLERANCE or _printed(ours, paper)
            gap = _declared_gap(r.model, key, r.domain)
            if not within and not gap:
                misses.append(f"{r.model} {r.domain} {key}: ours {ours:.4g} vs paper {paper:.4g}")
            if within and gap and (key, r.domain) in declared_gaps(MODELS[r.model]["family"]):
                declared_but_matching.append(f"{r.model} {r.domain} {key}")
    assert not misses, "\n".join(misses)
    # a gap declared for one domain must be a real gap (so the declarations cannot rot)
    assert not declared_but_matching, declared_but_matching


def _rows(comparison, model: str) -> dict:
    rows = {r.domain: r for r in comparison[comparison["model"] == model].itertuples()}
    assert len(rows) == 6, model
    return rows


@pytest.mark.parametrize("model", ["Mamba1", "Mamba2"])
def test_mamba_params_to_the_unit_and_mmac_as_printed(comparison, model):
    """Params within 0.01% (exact up to the average's rounding); MMac within 5%, or within
    the published figure's rounding (0.005 MMac) where that is larger, and rounding to the
    printed figure except Mamba2/Audio (250.62 vs 250.47, +0.06%: models/mamba.py)."""
    for domain, r in _rows(comparison, model).items():
        assert abs(r.params / r.params_paper - 1) < 1e-4, (domain, r.params, r.params_paper)
        assert abs(r.mmac - r.mmac_paper) <= max(0.05 * r.mmac_paper, 0.005), domain
        if model == "Mamba1" or domain != "Audio":
            assert round(r.mmac, 2) == pytest.approx(r.mmac_paper), (domain, r.mmac)


def test_convtran_mmac_to_the_digits_printed(comparison):
    for domain, r in _rows(comparison, "ConvTran").items():
        assert r.params == pytest.approx(r.params_paper, rel=0.002), domain
        assert round(r.mmac, 2) == pytest.approx(r.mmac_paper, abs=1e-9), domain


@pytest.mark.parametrize("model", ["GRU", "LSTM", "HInception"])
def test_recurrent_and_inception(comparison, model):
    """GRU and LSTM (reconstructed from Table 4): every published parameter count to the
    parameter; all three: params within 5%, MMac within 0.5% (two printed decimals)."""
    for domain, r in _rows(comparison, model).items():
        if model in ("GRU", "LSTM"):
            assert r.params == pytest.approx(r.params_paper, abs=0.6), domain
        assert r.params == pytest.approx(r.params_paper, rel=0.05), domain
        assert r.mmac == pytest.approx(r.mmac_paper, rel=0.005), domain


def test_fcn_params_and_known_gaps(comparison):
    """FCN: params within 5% except Counts (-7.3%); MMac 23-31% below ptflops' count."""
    for domain, r in _rows(comparison, "FCN").items():
        if domain == "Counts":
            assert r.params / r.params_paper - 1 == pytest.approx(-0.0733, abs=0.001)
        else:
            assert r.params == pytest.approx(r.params_paper, rel=0.05), domain
        assert 0.65 < r.mmac_paper / r.mmac < 0.80, domain  # documented, not reproduced
