"""The report's output files are named once (ssmbench.report.outputs): build_report writes
them, `ssmbench report --list-outputs` prints them, and the DVC report stage declares them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import REPO

from ssmbench.cli import main
from ssmbench.report.outputs import KINDS, output_paths, report_outputs

PARAMS = yaml.safe_load((REPO / "params.yaml").read_text())


def _declared(entries) -> list[Path]:
    paths = []
    for entry in entries or ():
        paths += [Path(entry)] if isinstance(entry, str) else [Path(k) for k in entry]
    return paths


def test_every_output_has_a_name_a_kind_and_a_path():
    outputs = report_outputs("results", "figures", ["uea", "monster", "uea"])
    names = [o.name for o in outputs]
    assert len(names) == len(set(names)) == 4 + 2 * (3 + 2) + 2
    assert {o.kind for o in outputs} == set(KINDS)
    by_name = {o.name: o.path for o in outputs}
    assert by_name["metrics_csv"] == Path("results/metrics.csv")
    assert by_name["protocol_notes_md"] == Path("results/protocol_notes.md")
    assert by_name["monster_table_tex"] == Path("results/tables/monster_table.tex")
    assert by_name["figure7_uea_pdf"] == Path("figures/figure7_uea.pdf")
    assert by_name["figure8_png"] == Path("figures/figure8_curves.png")
    assert output_paths("r", "f", ["uea"], "figure8") == [
        "f/figure8_curves.png",
        "f/figure8_curves.pdf",
    ]
    with pytest.raises(ValueError, match="unknown report output kind 'plot'"):
        output_paths("r", "f", ["uea"], "plot")


def test_dvc_report_stage_outs_are_exactly_the_report_outputs():
    stage = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]["report"]
    declared = [_declared(stage.get(key)) for key in ("outs", "metrics", "plots")]
    declared = [path for paths in declared for path in paths]
    paths = PARAMS["paths"]
    every_benchmark = PARAMS["benchmarks"]  # any suite may report any of them
    outputs = [o.path for o in report_outputs(paths["results"], paths["figures"], every_benchmark)]
    for path in outputs:
        holders = [d for d in declared if path == d or d in path.parents]
        assert len(holders) == 1, f"{path}: declared by {holders} in dvc.yaml's report stage"
    for out in declared:
        assert any(out == p or out in p.parents for p in outputs), (
            f"dvc.yaml's report stage declares {out}, which the report does not write"
        )


def test_list_outputs_prints_the_suites_outputs(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    assert main(["report", "--list-outputs"]) == 0
    printed = capsys.readouterr().out.splitlines()
    paths = PARAMS["paths"]
    suite = PARAMS["suites"][PARAMS["suite"]]
    expected = report_outputs(paths["results"], paths["figures"], suite["benchmarks"])
    assert printed == [f"{o.name}: {o.path}" for o in expected]


def test_show_tables_prints_the_markdown_tables(tmp_path, capsys):
    params = dict(PARAMS, paths={**PARAMS["paths"], "results": str(tmp_path / "results")})
    config = tmp_path / "params.yaml"
    config.write_text(yaml.safe_dump(params, sort_keys=False))
    assert main(["--params", str(config), "report", "--show-tables"]) == 2
    assert "_table.md: not written yet" in capsys.readouterr().err
    suite = params["suites"][params["suite"]]
    tables = [
        o.path
        for o in report_outputs(params["paths"]["results"], "figures", suite["benchmarks"])
        if o.kind == "table" and o.path.suffix == ".md"
    ]
    for table in tables:
        table.parent.mkdir(parents=True, exist_ok=True)
        table.write_text(f"| Dataset | {table.stem} |\n")
    assert main(["--params", str(config), "report", "--show-tables"]) == 0
    assert capsys.readouterr().out == "".join(
        f"{table}:\n\n| Dataset | {table.stem} |\n\n" for table in tables
    )


@pytest.mark.parametrize("path", ["workflow/rules/report.smk", "Makefile"])
def test_the_rule_and_the_makefile_spell_no_output_name(path):
    text = (REPO / path).read_text()
    outputs = report_outputs("results", "figures", PARAMS["benchmarks"])
    spelt = sorted({o.path.name for o in outputs if o.path.name in text})
    assert not spelt, f"{path} spells {spelt}: take them from ssmbench.report.outputs"
