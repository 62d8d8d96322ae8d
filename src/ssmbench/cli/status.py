"""`ssmbench status`: each run of the suite, done / stale / failed / incomplete / missing /
edited."""

from __future__ import annotations

import sys

from ssmbench.cli.common import example, load, log


def add_parser(sub) -> None:
    p = sub.add_parser(
        "status",
        help="each run of the suite: done / stale / failed / incomplete / missing / edited, "
        "with the last error line of each failed run and the file of each edited one (reads "
        "records, the files they name and logs, no dataset)",
        **example("ssmbench status --suite uea10 --state failed stale"),
    )
    p.add_argument(
        "--state",
        nargs="+",
        choices=("done", "stale", "failed", "incomplete", "missing", "edited"),
        help="list only runs in these states (the counts still cover every run)",
    )
    p.add_argument(
        "--format", choices=("table", "csv", "json"), default="table",
        help="output (default: table)",
    )  # fmt: skip
    p.set_defaults(func=cmd_status)


def cmd_status(args) -> int:
    """Every run of the suite: done / stale / failed / incomplete / missing / edited (see
    ssmbench.status), with counts and each failed run's last error line."""
    from ssmbench.status import format_csv, format_json, format_table, suite_status, summary_line

    params = load(args)
    statuses = suite_status(params)
    shown = [s for s in statuses if not args.state or s.state in args.state]
    summary = summary_line(params["suite"], statuses)
    if args.format == "json":
        sys.stdout.write(format_json(params["suite"], statuses, shown))
    elif args.format == "csv":
        sys.stdout.write(format_csv(shown))
        log(summary)  # stderr: stdout stays a plain CSV
    else:
        if shown:
            print(format_table(shown))
        print(summary)
    return 0
