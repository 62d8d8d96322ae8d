"""`ssmbench report`: metrics.csv, summary.json, tables and figures of the suite, or of the
MS4N paper's published numbers (--published).

The suite params.yaml names reports into paths.results and paths.figures (DVC's report
stage); any other suite (--suite) into {results}/suites/{suite}/ (ssmbench.report.outputs
.report_dirs). --list-outputs and --show-tables read the suite's own folder, and
--show-tables prints nothing that its summary.json does not say is that suite's report."""

from __future__ import annotations

import shlex

from ssmbench.cli.common import example, load, log


def add_parser(sub) -> None:
    p = sub.add_parser(
        "report", help="metrics.csv, summary.json, tables, figures",
        **example("ssmbench report --suite uea10 --show-tables"),
    )  # fmt: skip
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--list-outputs",
        action="store_true",
        help="print every file the report writes for the suite (name: path); write nothing",
    )
    which.add_argument(
        "--show-tables",
        action="store_true",
        help="print the suite's Markdown tables as last written; write nothing",
    )
    which.add_argument(
        "--published",
        action="store_true",
        help="render every table and figure of the MS4N paper from its published numbers "
        "alone, into {results}/published (no run record is read)",
    )
    p.set_defaults(func=cmd_report)


def cmd_report(args) -> int:
    from ssmbench.config import model_entry, suite_grid, suite_models
    from ssmbench.params_file import named_suite
    from ssmbench.report.outputs import report_dirs, report_outputs

    params = load(args)
    paths = params["paths"]
    _log_to_stderr()
    if args.published:
        from ssmbench.report.build import build_published

        for name, path in build_published(paths["results"], params["report"]).items():
            print(f"{name}: {path}")
        return 0
    suite_name = params["suite"]
    suite = params["suites"][suite_name]
    grid = suite_grid(params)
    params_suite = named_suite(args.params)
    dirs = report_dirs(paths, suite_name, params_suite)
    if args.list_outputs or args.show_tables:
        outputs = report_outputs(dirs.results, dirs.figures, {j.benchmark for j in grid})
        problem = _not_this_suites(dirs.results, suite_name, params_suite)
        if args.list_outputs:
            for output in outputs:
                print(f"{output.name}: {output.path}")
            if problem is not None:  # the listing says where; whether it is there, aside
                log(f"ssmbench report: note: {problem}")
            return 0
        if problem is not None:
            log(f"ssmbench report --show-tables: {problem}")
            return 2
        _note_other_grid(dirs.results, suite_name, params_suite, grid)
        for output in outputs:
            if output.kind == "table" and output.path.suffix == ".md":
                if not output.path.is_file():
                    raise FileNotFoundError(f"{output.path}: not written yet (ssmbench report)")
                print(f"{output.path}:\n\n{output.path.read_text(encoding='utf-8')}")
        return 0
    # pandas and matplotlib (4 s): only for building
    from ssmbench.report.build import build_report

    written = build_report(
        runs_dir=paths["runs"],
        results_dir=dirs.results,
        figures_dir=dirs.figures,
        report_params=params["report"],
        benchmark_models={b: suite_models(params, b) for b in suite["benchmarks"]},
        grid=[(j.benchmark, j.dataset, j.model, j.fold) for j in grid],
        benchmarks=sorted({j.benchmark for j in grid}),
        model_entries={m: model_entry(params, m) for m in sorted({j.model for j in grid})},
        suite=suite_name,
    )
    for name, path in written.items():
        print(f"{name}: {path}")
    return 0


def make_command(suite: str, params_suite: str | None) -> str:
    """The command that runs ``suite`` and writes its report: ``dvc repro`` for the suite
    params.yaml names (DVC versions its report), Snakemake for any other."""
    if suite == params_suite:
        return "dvc repro"
    return f"snakemake --cores all --config suite={shlex.quote(suite)}"


def _not_this_suites(results_dir, suite: str, params_suite: str | None) -> str | None:
    """Why the report folder of ``suite`` does not hold its report (one line, with the
    command that makes it), or None when it does: no summary.json there (no report yet),
    or one that names another suite, or none (written by an ssmbench whose summary did
    not name its suite)."""
    from ssmbench.report.outputs import report_made_for

    summary = f"{results_dir}/summary.json"
    made_for = report_made_for(results_dir)
    make = f"make it: {make_command(suite, params_suite)}"
    if made_for is None:
        return f"suite {suite!r} has no report yet (no {summary}); {make}"
    if made_for["suite"] is None:
        return (
            f"{summary} names no suite (written by an older ssmbench): the report there may "
            f"be of another suite than {suite!r}; {make}"
        )
    if made_for["suite"] != suite:
        return f"{summary} is the report of suite {made_for['suite']!r}, not of {suite!r}; {make}"
    return None


def _note_other_grid(results_dir, suite: str, params_suite: str | None, grid) -> None:
    """A note on stderr when the suite's report was made for another grid than the one
    the suite has now (an edited suite): the tables are printed, older than the suite."""
    from ssmbench.report.outputs import grid_entry, report_made_for

    made = (report_made_for(results_dir) or {}).get("grid")
    now = grid_entry((j.benchmark, j.dataset, j.model, j.fold) for j in grid)
    if made is not None and made.get("sha256") != now["sha256"]:
        log(
            f"ssmbench report --show-tables: note: {results_dir}/summary.json was made for "
            f"another grid of suite {suite!r} ({made.get('runs')} runs; {now['runs']} now): "
            f"these tables are older than the suite; {make_command(suite, params_suite)} "
            "rebuilds them"
        )


def _log_to_stderr() -> None:
    """The report's notices on stderr, one line each, each once: what it left out for want
    of data or published figures at INFO (a suite of two datasets has no critical
    difference to draw), what is wrong with its inputs at WARNING. The Snakemake rule keeps
    them in its log (logs/report.log for the suite params.yaml names)."""
    import logging

    class Once(logging.Filter):
        def __init__(self):
            super().__init__()
            self.seen: set[str] = set()

        def filter(self, record: logging.LogRecord) -> bool:
            line = f"{record.name}: {record.levelname}: {record.getMessage()}"
            if line in self.seen:
                return False
            self.seen.add(line)
            return True

    root = logging.getLogger()
    before = set(root.handlers)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(levelname)s: %(message)s")
    for handler in set(root.handlers) - before:  # the one made here, none that was there
        handler.addFilter(Once())
    for noisy in ("matplotlib", "PIL", "fontTools"):  # libraries' own INFO lines
        logging.getLogger(noisy).setLevel(logging.WARNING)
