"""`ssmbench suites`: every suite of params.yaml's studies, with the study file it is in, its
runs, datasets and searches, and its description; params.yaml's own suite marked ``*``."""

from __future__ import annotations

from ssmbench.cli.common import example, load


def add_parser(sub) -> None:
    p = sub.add_parser(
        "suites", help="list the suites: study file, runs, datasets, searches, description",
        **example("ssmbench suites"),
    )  # fmt: skip
    p.set_defaults(func=cmd_suites)


def cmd_suites(args) -> int:
    from ssmbench.config import suite_datasets, suite_grid, suite_searches
    from ssmbench.params_file import read_params_and_files

    params = load(args)
    files = read_params_and_files(args.params)[1]
    rows = []
    for name, spec in params["suites"].items():
        rows.append((
            ("* " if name == params["suite"] else "  ") + name,
            files.get(f"suites.{name}", str(args.params)),
            f"{len(suite_grid(params, name)):,}",
            f"{len(suite_datasets(params, name)):,}",
            f"{len(suite_searches(params, name)):,}",
            spec.get("description") or "",
        ))  # fmt: skip
    head = ("  suite", "file", "runs", "datasets", "searches", "description")
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head) - 1)]
    right = {2, 3, 4}  # counts
    for row in (head, *rows):
        cells = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(row[:-1], widths, strict=True))
        ]
        print("  ".join([*cells, row[-1]]).rstrip())
    print(f"(* the suite of {args.params}; another: ssmbench --suite NAME, snakemake --config "
          "suite=NAME)")  # fmt: skip
    return 0
