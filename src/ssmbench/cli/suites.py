"""`ssmbench suites`: every suite of params.yaml's studies, with the study file it is in, its
runs, datasets and searches, and its description; params.yaml's own suite marked ``*``.
`ssmbench suites --use NAME` makes NAME params.yaml's suite (its ``suite:`` line), the one
``dvc repro`` runs and DVC versions the report of: what ``dvc exp run -S suite=NAME`` would
edit, without the checkout of dvc.lock's outputs with which DVC starts an experiment
(which deletes the records made since)."""

from __future__ import annotations

from ssmbench.cli.common import example, load


def add_parser(sub) -> None:
    p = sub.add_parser(
        "suites", help="list the suites: study file, runs, datasets, searches, description",
        **example("ssmbench suites --use tides-diagnostics"),
    )  # fmt: skip
    p.add_argument(
        "--use", metavar="NAME",
        help="make NAME params.yaml's suite (its `suite:` line), the one `dvc repro` runs",
    )  # fmt: skip
    p.set_defaults(func=cmd_suites)


def cmd_suites(args) -> int:
    from ssmbench.config import suite_datasets, suite_grid, suite_searches
    from ssmbench.params_file import read_params_and_files

    params = load(args)
    if args.use is not None:
        return _use(args, params)
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


def _use(args, params) -> int:
    from ssmbench.config import ConfigError
    from ssmbench.params_file import set_named_suite

    if args.use not in params["suites"]:
        raise ConfigError(
            f"--use: no suite {args.use!r} in {args.params}'s studies (`ssmbench suites` "
            "lists them)"
        )
    before = set_named_suite(args.params, args.use)
    print(f"{args.params}: suite {before} -> {args.use}; `dvc repro` runs it (its report is "
          "the versioned one)")  # fmt: skip
    return 0
