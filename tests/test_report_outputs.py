"""The report's output files are named once (ssmbench.report.outputs): build_report writes
them, `ssmbench report --list-outputs` prints them, and the DVC report stage declares them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import REPO

from ssmbench.cli import main
from ssmbench.params_file import read_params
from ssmbench.report.outputs import (
    KINDS,
    figure_captions,
    output_paths,
    published_outputs,
    report_outputs,
)

PARAMS = read_params(REPO / "params.yaml")


def _declared(entries) -> list[Path]:
    paths = []
    for entry in entries or ():
        paths += [Path(entry)] if isinstance(entry, str) else [Path(k) for k in entry]
    return paths


def by_name_of(outputs) -> dict:
    return {o.name: o.path for o in outputs}


def test_every_output_has_a_name_a_kind_and_a_path():
    outputs = report_outputs("results", "figures", ["uea", "monster", "uea"])
    names = [o.name for o in outputs]
    # 4 fixed files, the scorecard (2), tables 1-5 and the selection-optimism table (3
    # formats each), figures 1, 3-9, 10 per benchmark, CD ours and paper's per benchmark,
    # the training curves (2 each)
    assert len(names) == len(set(names)) == 4 + 2 + 6 * 3 + (1 + 7 + 2 + 4 + 1) * 2
    assert by_name_of(outputs)["selection_optimism_md"] == Path(
        "results/tables/selection_optimism.md"
    )
    assert {o.kind for o in outputs} == set(KINDS)
    by_name = {o.name: o.path for o in outputs}
    assert by_name["metrics_csv"] == Path("results/metrics.csv")
    assert by_name["protocol_notes_md"] == Path("results/protocol_notes.md")
    assert by_name["scorecard_md"] == Path("results/scorecard.md")
    assert by_name["table3_tex"] == Path("results/tables/table3.tex")
    assert by_name["figure7_pdf"] == Path("figures/pdf/figure7.pdf")
    assert by_name["figure4_png"] == Path("figures/png/figure4.png")
    assert by_name["cd_monster_paper_png"] == Path("figures/png/cd_monster_paper.png")
    # only the UEA side for a UEA suite; a benchmark the paper lacks gets its own pair
    uea = {o.name for o in report_outputs("r", "f", ["uea", "synthetic"])}
    assert "table5_md" in uea and "figure1_png" in uea and "table3_md" not in uea
    assert {"synthetic_table_md", "overview_synthetic_png"} <= uea
    assert output_paths("r", "f", ["uea"], "scorecard") == ["r/scorecard.csv", "r/scorecard.md"]
    with pytest.raises(ValueError, match="unknown report output kind 'plot'"):
        output_paths("r", "f", ["uea"], "plot")


def test_every_figure_has_its_caption_file():
    captions = figure_captions("results", "figures", PARAMS["benchmarks"])
    assert {"figure1", "figure3", "figure4", "figure10_uea", "cd_uea_paper"} <= set(captions)
    for key, (files, caption) in captions.items():
        assert len(files) == 2, key
        text = (REPO / "workflow" / "report" / f"{caption}.rst").read_text()
        assert len(text.split()) > 30, f"{caption}.rst: a caption says what the figure shows"


def test_published_outputs_are_the_papers_artefacts_in_their_own_folder():
    outputs = published_outputs("results")
    names = {o.name for o in outputs}
    assert {"table1_md", "table5_md", "figure1_png", "figure6_pdf", "cd_uea_png"} <= names
    assert {"paper_consistency_md", "paper_consistency_csv"} <= names
    assert not {"scorecard_md", "cd_uea_paper_png", "training_curves_png"} & names
    assert all(Path("results/published") in o.path.parents for o in outputs)


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
    assert "table5.md: not written yet" in capsys.readouterr().err
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


@pytest.mark.parametrize("benchmark", ["physiome_ode", "physiome"])
def test_the_physiome_table_and_diagram_are_written_for_either_physiome_benchmark(benchmark):
    names = {o.name: o for o in report_outputs("results", "figures", [benchmark])}
    assert names["physiome_results_md"].path == Path("results/tables/physiome_results.md")
    assert {"physiome_results_csv", "physiome_results_tex"} <= set(names)
    assert names["physiome_cd_png"].path == Path("figures/png/physiome_cd.png")
    assert names["physiome_cd_pdf"].caption == "physiome_cd"
    assert not {n for n in report_outputs("r", "f", ["uea"]) if "physiome" in n.name}


def test_every_caption_an_artefact_names_exists():
    every = report_outputs("results", "figures", [*PARAMS["benchmarks"], "physiome_ode"])
    captions = {o.caption for o in every if o.caption is not None}
    assert {"physiome_results", "physiome_cd"} <= captions  # a table's caption too
    for caption in captions:
        text = (REPO / "workflow" / "report" / f"{caption}.rst").read_text()
        assert len(text.split()) > 30, f"{caption}.rst: a caption says what the artefact shows"
