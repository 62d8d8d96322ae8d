"""`ssmbench report`: metrics.csv, summary.json, tables and figures of the suite, or of the
MS4N paper's published numbers (--published)."""

from __future__ import annotations

from ssmbench.cli.common import load


def add_parser(sub) -> None:
    p = sub.add_parser("report", help="metrics.csv, summary.json, tables, figures")
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
    from ssmbench.report.outputs import report_outputs

    params = load(args)
    paths = params["paths"]
    _log_to_stderr()
    if args.published:
        from ssmbench.report.build import build_published

        for name, path in build_published(paths["results"], params["report"]).items():
            print(f"{name}: {path}")
        return 0
    suite = params["suites"][params["suite"]]
    grid = suite_grid(params)
    if args.list_outputs or args.show_tables:
        outputs = report_outputs(paths["results"], paths["figures"], {j.benchmark for j in grid})
        for output in outputs:
            if args.list_outputs:
                print(f"{output.name}: {output.path}")
            elif output.kind == "table" and output.path.suffix == ".md":
                if not output.path.is_file():
                    raise FileNotFoundError(f"{output.path}: not written yet (ssmbench report)")
                print(f"{output.path}:\n\n{output.path.read_text(encoding='utf-8')}")
        return 0
    # pandas and matplotlib (4 s): only for building
    from ssmbench.report.build import build_report

    written = build_report(
        runs_dir=paths["runs"],
        results_dir=paths["results"],
        figures_dir=paths["figures"],
        report_params=params["report"],
        benchmark_models={b: suite_models(params, b) for b in suite["benchmarks"]},
        grid=[(j.benchmark, j.dataset, j.model, j.fold) for j in grid],
        benchmarks=sorted({j.benchmark for j in grid}),
        model_entries={m: model_entry(params, m) for m in sorted({j.model for j in grid})},
    )
    for name, path in written.items():
        print(f"{name}: {path}")
    return 0


def _log_to_stderr() -> None:
    """The report's notices (what it skipped and why) on stderr, one line each: the
    Snakemake rule keeps them in logs/report.log."""
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(levelname)s: %(message)s")
