"""The MMac table the package ships (ssmbench.mmac_table, scripts/mmac_table.py): current
for the paper suites, in agreement with counting the models, and bypassed where the code
a figure depends on changed."""

from __future__ import annotations

import pytest
from conftest import REPO

from ssmbench.config import load_params
from ssmbench.mmac_table import SHIPPED, MMacTable, read_table
from ssmbench.plan import estimate
from ssmbench.step_costs import TABLE, StepCosts

PAPER_SUITES = ("uea-paper", "monster-paper", "uea6-paper", "physiome-paper")


class _Asked(MMacTable):
    """The shipped table, with each key asked for and the count that would make it."""

    def __init__(self):
        super().__init__(cache=None, shipped=SHIPPED)
        self.asked: dict[str, object] = {}

    def get(self, key, count):
        self.asked[key] = count
        return super().get(key, lambda: float("nan"))


@pytest.fixture(scope="module")
def asked() -> _Asked:
    params = load_params(REPO / "params.yaml")
    table = _Asked()
    for suite in PAPER_SUITES:
        estimate(params, StepCosts.load(TABLE), suite=suite, mmac=table)
    return table


def test_the_shipped_table_holds_every_figure_of_the_paper_suites(asked):
    missing = [key for key in asked.asked if key not in read_table(SHIPPED)]
    assert len(asked.asked) > 300
    assert not missing, (
        f"{len(missing)} figures of the paper suites are not in {SHIPPED.name} under their "
        "current key (a model, its configuration or the counting changed): run "
        "scripts/mmac_table.py"
    )


def test_the_shipped_figures_agree_with_counting_the_models(asked):
    shipped = read_table(SHIPPED)
    keys = sorted(asked.asked)
    sample = keys[:: max(1, len(keys) // 12)]
    for key in sample:
        assert asked.asked[key]() == pytest.approx(shipped[key], rel=1e-9), key


def test_a_figure_whose_code_changed_is_counted_again(monkeypatch):
    import ssmbench.mmac_table as mmac_table

    params = load_params(REPO / "params.yaml", suite="default")
    costs = StepCosts.load(TABLE)
    table = MMacTable(cache=None, shipped=SHIPPED)
    first = estimate(params, costs, mmac=table)
    assert table.counted == 0  # the default suite's figures are shipped
    digest = mmac_table.code_digest
    monkeypatch.setattr(
        mmac_table, "code_digest", lambda family: digest(family) + ("edited" * (family == "s4d"))
    )
    table = MMacTable(cache=None, shipped=SHIPPED)
    again = estimate(params, costs, mmac=table)
    assert table.counted == 2  # S4D on the suite's two datasets, the others shipped
    assert [e.seconds for e in again.estimates] == [e.seconds for e in first.estimates]


def test_the_code_digest_covers_the_counting_the_building_and_the_family():
    from ssmbench.code_digest import PACKAGE
    from ssmbench.mmac_table import _shared_modules, code_digest

    names = {p.relative_to(PACKAGE).as_posix() for p in _shared_modules()}
    assert {"complexity.py", "models/s4d.py", "models/ms4.py", "models/registry.py",
            "models/hyperparams.py"} <= names  # fmt: skip
    assert code_digest("ms4") != code_digest("mamba1")


def test_an_unreadable_or_wrong_table_reads_as_empty(tmp_path):
    path = tmp_path / "t.json"
    assert read_table(path) == {}
    path.write_text("{not json")
    assert read_table(path) == {}
    path.write_text("[1, 2]")
    assert read_table(path) == {}
    path.write_text('{"a": 1.5, "b": "x", "c": true, "d": -1}')
    assert read_table(path) == {"a": 1.5}
