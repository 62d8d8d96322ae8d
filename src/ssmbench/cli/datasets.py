"""`ssmbench datasets`: the dataset catalog of both studies; reads no config."""

from __future__ import annotations

import sys

from ssmbench.cli.common import example, log


def add_parser(sub) -> None:
    p = sub.add_parser(
        "datasets", help="list the datasets of both studies (reads no config)",
        **example("ssmbench datasets --benchmark uea6"),
    )  # fmt: skip
    p.add_argument("--benchmark", help="only this benchmark (uea, monster, physiome, ...)")
    p.add_argument("--domain", help="only this domain (Audio, EEG, HAR, Satellite, ...)")
    p.add_argument(
        "--format", choices=("table", "csv"), default="table", help="output (default: table)"
    )
    p.set_defaults(func=cmd_datasets)


def cmd_datasets(args) -> int:
    # The catalog only: no params.yaml, so it works before the config is written or valid.
    from collections import Counter

    from ssmbench.data.catalog import BENCHMARKS, catalog

    entries = catalog(benchmark=args.benchmark, domain=args.domain)
    header = ["name", "benchmark", "domain", "task", "N", "C", "L", "classes", "source"]
    rows = [
        [e.name, e.benchmark, e.domain, e.task, e.N, e.C, e.L, e.n_classes, e.source]
        for e in entries
    ]
    counts = Counter(e.benchmark for e in entries)
    summary = ", ".join(f"{b}: {counts[b]}" for b in BENCHMARKS if counts[b])
    summary = f"{summary} ({len(entries)} datasets)" if entries else "no datasets match"
    if args.format == "csv":
        import csv

        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(header)
        writer.writerows([["" if v is None else v for v in row] for row in rows])
        log(summary)  # stderr: stdout stays a plain CSV
    else:
        from tabulate import tabulate

        print(tabulate(rows, headers=header, missingval="-", intfmt=","))
        print(summary)
    return 0
