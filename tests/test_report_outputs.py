"""The report's output files are named once (ssmbench.report.outputs): build_report writes
them, `ssmbench report --list-outputs` prints them, and the DVC report stage declares them;
each suite's report has its own folder, and `--show-tables` prints only the suite's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from ssmbench.cli import main
from ssmbench.params_file import read_params
from ssmbench.report.outputs import (
    GRID_KEY,
    KINDS,
    SUITE_KEY,
    figure_captions,
    grid_digest,
    grid_entry,
    output_paths,
    published_outputs,
    report_dirs,
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
    # 4 fixed files and the metric files' folder, the scorecard (2), tables 1-5 and the
    # selection-optimism table (3 formats each), figures 1, 3-9, 10 per benchmark, CD ours
    # and paper's per benchmark, the training curves (2 each)
    assert len(names) == len(set(names)) == 5 + 2 + 6 * 3 + (1 + 7 + 2 + 4 + 1) * 2
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


def _scratch_params(tmp_path: Path) -> tuple[dict, Path]:
    """The repository's params with paths.results in ``tmp_path``, as one params.yaml there
    (its suite: the repository's, ``default``)."""
    params = dict(PARAMS, paths={**PARAMS["paths"], "results": str(tmp_path / "results")})
    config = tmp_path / "params.yaml"
    config.write_text(yaml.safe_dump(params, sort_keys=False))
    return params, config


def _grid(params: dict, suite: str) -> list[tuple]:
    from ssmbench.config import suite_grid

    grid = suite_grid({**params, "suite": suite})
    return [(j.benchmark, j.dataset, j.model, j.fold) for j in grid]


def _summary(results: Path, suite: str | None, grid=None) -> None:
    """A summary.json as the report writes it for ``suite`` (None: without the key, as
    an ssmbench whose summary named no suite wrote it)."""
    summary = {"uea": {"MS4N": {"mean_error": 0.1}}, "scorecard": {}}
    if suite is not None:
        summary[SUITE_KEY] = suite
    if grid is not None:
        summary[GRID_KEY] = grid_entry(grid)
    results.mkdir(parents=True, exist_ok=True)
    (results / "summary.json").write_text(json.dumps(summary))


def test_show_tables_prints_the_markdown_tables(tmp_path, capsys):
    params, config = _scratch_params(tmp_path)
    results = Path(params["paths"]["results"])
    assert main(["--params", str(config), "report", "--show-tables"]) == 2
    assert capsys.readouterr().err == (
        f"ssmbench report --show-tables: suite 'default' has no report yet (no "
        f"{results}/summary.json); make it: dvc repro\n"
    )
    _summary(results, "default", _grid(params, "default"))
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
    shown = capsys.readouterr()
    assert shown.out == "".join(f"{table}:\n\n| Dataset | {table.stem} |\n\n" for table in tables)
    assert shown.err == ""


def test_each_suite_reports_in_its_own_folder():
    """params.yaml's suite at paths.results and paths.figures (the DVC stage's outs); any
    other suite under {results}/suites/{suite}/, in the same layout, its log apart."""
    paths = {"results": "results", "figures": "figures", "logs": "logs"}
    assert report_dirs(paths, "default", "default") == (
        Path("results"), Path("figures"), Path("logs/report.log")
    )  # fmt: skip
    mine = report_dirs(paths, "mine", "default")
    assert mine == (
        Path("results/suites/mine"), Path("results/suites/mine/figures"),
        Path("logs/suites/mine/report.log"),
    )  # fmt: skip
    by_name = by_name_of(report_outputs(mine.results, mine.figures, ["uea"]))
    assert by_name["summary_json"] == Path("results/suites/mine/summary.json")
    assert by_name["table5_md"] == Path("results/suites/mine/tables/table5.md")
    assert by_name["figure7_png"] == Path("results/suites/mine/figures/png/figure7.png")
    assert by_name["scorecard_md"] == Path("results/suites/mine/scorecard.md")
    # the suite params.yaml names is DVC's wherever it was asked for
    assert report_dirs(paths, "mine", "mine").results == Path("results")
    # the grid's digest: the same runs in any order, another for other runs
    grid = [("uea", "A", "M", 0), ("uea", "B", "M", 1)]
    assert grid_digest(grid) == grid_digest(grid[::-1]) != grid_digest(grid[:1])
    assert grid_entry(grid) == {"runs": 2, "sha256": grid_digest(grid)}


def test_another_suites_report_is_neither_a_dvc_out_nor_versioned_in_git():
    """Running a suite that params.yaml does not name never writes what DVC's stages own,
    and git ignores its folder (its report is a working copy)."""
    import subprocess

    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    declared = [
        path
        for stage in stages.values()
        for key in ("outs", "metrics", "plots")
        for path in _declared(stage.get(key))
    ]
    paths = PARAMS["paths"]
    dirs = report_dirs(paths, "uea10", PARAMS["suite"])
    for output in report_outputs(dirs.results, dirs.figures, PARAMS["benchmarks"]):
        holders = [d for d in declared if output.path == d or d in output.path.parents]
        assert not holders, f"{output.path}: inside dvc.yaml's {holders}"
    probe = str(dirs.results / "summary.json")
    ignored = subprocess.run(["git", "check-ignore", "-q", probe], cwd=REPO, check=False)
    assert ignored.returncode == 0, f"{probe}: not ignored by git"


def test_show_tables_of_a_suite_without_a_report_names_the_command(tmp_path, capsys):
    params, config = _scratch_params(tmp_path)
    _summary(Path(params["paths"]["results"]), "default")  # the default suite's report
    for argv in (["--suite", "tiny", "report", "--show-tables"],
                 ["report", "--suite", "tiny", "--show-tables"]):  # fmt: skip
        assert main(["--params", str(config), *argv]) == 2
        shown = capsys.readouterr()
        assert shown.out == ""
        assert shown.err == (
            f"ssmbench report --show-tables: suite 'tiny' has no report yet (no "
            f"{tmp_path}/results/suites/tiny/summary.json); make it: snakemake --cores all "
            "--config suite=tiny\n"
        )


@pytest.mark.parametrize(
    ("made_for", "said"),
    [
        ("tiny", "summary.json is the report of suite 'tiny', not of 'default'; make it: "
                 "dvc repro"),
        (None, "summary.json names no suite (written by an older ssmbench): the report there "
               "may be of another suite than 'default'; make it: dvc repro"),
    ],
)  # fmt: skip
def test_show_tables_refuses_a_folder_whose_summary_names_another_suite(
    tmp_path, capsys, made_for, said
):
    """results/ written by another suite (an older ssmbench wrote any suite's report
    there, and a summary that named no suite): not printed as the default suite's."""
    params, config = _scratch_params(tmp_path)
    results = Path(params["paths"]["results"])
    _summary(results, made_for)
    table = results / "tables" / "table5.md"
    table.parent.mkdir(parents=True)
    table.write_text("| Dataset | another suite's |\n")
    assert main(["--params", str(config), "report", "--show-tables"]) == 2
    shown = capsys.readouterr()
    assert shown.out == "" and said in shown.err and len(shown.err.splitlines()) == 1


def test_show_tables_notes_a_report_made_for_another_grid(tmp_path, capsys):
    params, config = _scratch_params(tmp_path)
    results = Path(params["paths"]["results"])
    _summary(results, "default", _grid(params, "default")[:-1])  # one run fewer then
    suite = params["suites"]["default"]
    for o in report_outputs(results, "figures", suite["benchmarks"]):
        if o.kind == "table" and o.path.suffix == ".md":
            o.path.parent.mkdir(parents=True, exist_ok=True)
            o.path.write_text("| Dataset |\n")
    assert main(["--params", str(config), "report", "--show-tables"]) == 0
    shown = capsys.readouterr()
    n = len(_grid(params, "default"))
    assert "table5.md" in shown.out
    assert f"was made for another grid of suite 'default' ({n - 1} runs; {n} now)" in shown.err


def test_list_outputs_of_another_suite_lists_its_own_folder(tmp_path, capsys):
    params, config = _scratch_params(tmp_path)
    assert main(["--params", str(config), "report", "--suite", "tiny", "--list-outputs"]) == 0
    shown = capsys.readouterr()
    dirs = report_dirs(params["paths"], "tiny", "default")
    expected = report_outputs(dirs.results, dirs.figures, params["suites"]["tiny"]["benchmarks"])
    assert shown.out.splitlines() == [f"{o.name}: {o.path}" for o in expected]
    assert shown.err == (
        f"ssmbench report: note: suite 'tiny' has no report yet (no {dirs.results}/"
        "summary.json); make it: snakemake --cores all --config suite=tiny\n"
    )


@pytest.mark.parametrize("path", ["workflow/rules/report.smk", "Makefile"])
def test_the_rule_and_the_makefile_spell_no_output_name(path):
    text = (REPO / path).read_text()
    outputs = report_outputs("results", "figures", PARAMS["benchmarks"])
    # a file's name anywhere; a folder's (no suffix) as part of a path, after a slash (the
    # kind "metrics" is not the folder results/metrics)
    spelt = sorted(
        {
            o.path.name
            for o in outputs
            if (o.path.name in text if o.path.suffix else f"/{o.path.name}" in text)
        }
    )
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


def test_the_metric_files_hold_a_row_per_model_and_follow_the_report(tmp_path):
    from ssmbench.report.aggregate import metric_files, write_metric_files

    summary = {
        "uea": {
            "MS4N": {"mean_error": 0.1, "mean_rank": 1.0, "mean_std": 0.01, "n_runs": 4,
                     "n_datasets": 2, "params": 9.0, "mmac": 1.0},
            "S4D": {"mean_error": 0.2, "mean_rank": 2.0, "mean_std": None, "n_runs": 2,
                    "n_datasets": 1, "params": 9.0, "mmac": 1.0},
        },
        "scorecard": {"uea": {"MS4N": {"agree": 1, "compared": 2}}},
        "suite": "s",
    }  # fmt: skip
    files = metric_files(summary, ["uea"])
    assert files == {
        "uea/MS4N.json": {"test_error": 0.1, "rank": 1.0, "std": 0.01, "runs": 4,
                          "datasets": 2, "agree": 1},
        "uea/S4D.json": {"test_error": 0.2, "rank": 2.0, "std": None, "runs": 2,
                         "datasets": 1},
    }  # fmt: skip
    folder = tmp_path / "metrics"
    write_metric_files(files, folder)
    assert json.loads((folder / "uea" / "S4D.json").read_text())["runs"] == 2
    del summary["uea"]["S4D"]
    write_metric_files(metric_files(summary, ["uea"]), folder)  # the folder as a whole
    assert sorted(p.name for p in (folder / "uea").iterdir()) == ["MS4N.json"]
