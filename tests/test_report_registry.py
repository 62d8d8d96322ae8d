"""The report's artefacts are a registry (ssmbench.report.outputs): each entry names its
drawing function, "module:function", imported only when the report draws it. So a new
table or figure is its module and one entry; build.py draws whatever is registered, with
no branch of its own per artefact; and the workflow, which imports outputs.py at every
parse, loads no matplotlib."""

from __future__ import annotations

import ast
import inspect
import json
import subprocess
import sys

import pandas as pd
import pytest
from conftest import REPO

from ssmbench.report import outputs
from ssmbench.report.build import build_report
from ssmbench.report.context import DrawContext
from ssmbench.report.outputs import (
    PAPER_BENCHMARKS,
    Artefact,
    artefacts,
    draw_function,
    figure_files,
    report_outputs,
)
from ssmbench.staleness import sealed

#: Every benchmark with artefacts of its own, and one the paper lacks.
EVERY_BENCHMARK = (*PAPER_BENCHMARKS, "synthetic", "uea_drop", "uea6", "physiome",
                   "physiome_ode", "other")  # fmt: skip


def _registered() -> list[Artefact]:
    """Every entry: those of every benchmark, the published report's, and every entry of a
    group tuple in outputs.py (so that none is left out of ``artefacts``)."""
    found = {a.key: a for a in artefacts(EVERY_BENCHMARK)}
    found.update((a.key, a) for a in artefacts(PAPER_BENCHMARKS, published=True))
    groups = [v for v in vars(outputs).values() if isinstance(v, tuple) and v]
    listed = [a for g in groups if all(isinstance(a, Artefact) for a in g) for a in g]
    missing = sorted(a.key for a in listed if a.key not in found)
    assert not missing, f"registered but never listed by artefacts(): {missing}"
    return list(found.values())


def test_every_registered_artefact_names_a_function_that_resolves():
    registered = _registered()
    assert len(registered) >= 36
    for artefact in registered:
        fn = artefact.drawer()
        assert callable(fn), artefact.key
        assert fn.__module__.startswith("ssmbench.report."), (artefact.key, fn.__module__)
        params = list(inspect.signature(fn).parameters)
        assert len(params) == 1, f"{artefact.draw}: called as fn(context), takes {params}"


def test_a_bad_name_fails_with_what_is_wrong():
    with pytest.raises(ValueError, match="expected 'module:function'"):
        draw_function(".overview")
    with pytest.raises(ValueError, match="has no function 'no_such_drawing'"):
        draw_function(".overview:no_such_drawing")
    with pytest.raises(ModuleNotFoundError):
        draw_function(".no_such_module:draw")


def test_importing_outputs_loads_no_drawing_code():
    """What the Snakefile does at every parse (workflow/rules/common.smk), in a fresh
    interpreter: import outputs.py and list the outputs and captions."""
    code = (
        "import sys\n"
        "from ssmbench.report.outputs import figure_captions, output_paths\n"
        f"benchmarks = {list(EVERY_BENCHMARK)!r}\n"
        "assert output_paths('r', 'f', benchmarks)\n"
        "assert figure_captions('r', 'f', benchmarks)\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=REPO)  # fmt: skip
    loaded = set(done.stdout.split())
    heavy = {"matplotlib", "pandas", "numpy", "scipy", "torch", "aeon"}
    assert not {m.split(".")[0] for m in loaded} & heavy
    ours = {m for m in loaded if m.split(".")[0] == "ssmbench"}
    assert ours == {"ssmbench", "ssmbench.report", "ssmbench.report.outputs"}


def test_build_names_no_artefact():
    """build.py draws by the registry alone: no string of its code is an artefact's key
    or the prefix or suffix of one (docstrings aside)."""
    tree = ast.parse((REPO / "src" / "ssmbench" / "report" / "build.py").read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    strings = {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and id(node) not in docstrings
    }  # fmt: skip
    keys = {a.key for a in _registered()}
    affixes = {"cd_", "overview_", "figure10_", "_table", "_paper", "figure", "table"}
    assert not strings & (keys | affixes)


def draw_toy_table(ctx: DrawContext):
    """The toy table: one row per record of the toy benchmark (what the context gives)."""
    from ssmbench.report.tables import write_table

    assert ctx.artefact.key == "toy_table" and ctx.stem.name == "toy_table"
    assert ctx.runs_dir is not None and not ctx.ours.empty and not ctx.curves.empty
    toy = ctx.records[ctx.records["benchmark"] == ctx.artefact.benchmark]
    table = toy[["dataset", "model", "fold", "test_error"]].sort_values(["model", "fold"])
    return write_table(table.reset_index(drop=True), ctx.stem)


def draw_toy_figure(ctx: DrawContext):
    from ssmbench.report.style import message_figure

    return message_figure(ctx.stem, ctx.artefact.what, ["a toy figure"])


def _runs(tmp_path, benchmark: str):
    runs = tmp_path / "runs"
    for model, errors in (("MS4N", (0.1, 0.3)), ("MS4", (0.2, 0.4))):
        folder = runs / benchmark / "ToySet" / model
        folder.mkdir(parents=True)
        for fold, err in enumerate(errors):
            record = {"benchmark": benchmark, "dataset": "ToySet", "model": model,
                      "fold": fold, "test_error": err, "best_epoch": 2}  # fmt: skip
            (folder / f"fold{fold}.json").write_text(json.dumps(sealed(record)))
            curve = pd.DataFrame({"epoch": [1, 2, 3], "train_loss": [1.0, 0.5, 0.4],
                                  "train_accuracy": [0.5, 0.7, 0.8], "val_loss": [1.0, 0.6, 0.5],
                                  "val_accuracy": [0.5, 0.6, 0.7], "seconds": 0.1})  # fmt: skip
            curve.to_csv(folder / f"fold{fold}.curve.csv", index=False)
    return runs


def test_a_new_artefact_is_its_function_and_one_entry(tmp_path, monkeypatch):
    """Two toy artefacts, a table and a figure, registered in outputs.py alone: the
    report declares them, and build_report draws them by their functions (build.py
    untouched)."""
    toys = (
        Artefact("toy_table", "table", ("toyb",), "toy per run", draw=f"{__name__}:draw_toy_table"),
        Artefact("toy_figure", "figure", ("toyb",), "toy figure", "overview",
                 draw=f"{__name__}:draw_toy_figure"),
    )  # fmt: skip
    monkeypatch.setattr(outputs, "DIAGNOSTIC_ARTEFACTS", outputs.DIAGNOSTIC_ARTEFACTS + toys)
    results, figures = tmp_path / "results", tmp_path / "figures"
    declared = {o.name: o.path for o in report_outputs(results, figures, ["toyb"])}
    assert {"toy_table_csv", "toy_table_md", "toy_table_tex", "toy_figure_png"} <= set(declared)

    written = build_report(_runs(tmp_path, "toyb"), results, figures, {})
    assert written == declared
    table = pd.read_csv(results / "tables" / "toy_table.csv")
    assert table["test_error"].tolist() == [0.2, 0.4, 0.1, 0.3]  # MS4 then MS4N, by fold
    for path in figure_files(figures / "toy_figure").values():
        assert path.stat().st_size > 0, path


def test_each_family_declares_a_group_the_figures_colour():
    """A family's group (its class's GROUP) is one of the paper's groups the figures have
    colours for; the MS4 study's families each have one, the TIDES study's none (Other)."""
    from ssmbench.models import FAMILIES, family_group
    from ssmbench.report import style

    groups = {family: family_group(family) for family in FAMILIES}
    assert {g for g in groups.values() if g} <= set(style.GROUP_COLOURS) - {"Other"}
    assert groups["ms4"] == groups["mamba2"] == "SSM" and groups["convtran"] == "Hybrid"
    assert groups["extratrees"] == "NonDL" and groups["tides"] is None
    assert style.group_of("tides") == style.group_of("no-such-family") == "Other"
    assert style.colour_of("gru") == style.GROUP_COLOURS["RNN"]
