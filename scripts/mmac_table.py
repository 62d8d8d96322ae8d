"""Writes the MMac table the package ships (src/ssmbench/calibration/mmac.json).

    .venv/bin/python scripts/mmac_table.py           # every suite of params.yaml
    .venv/bin/python scripts/mmac_table.py --check   # exit 1 if it is not current

For each (model, dataset) pair of the suites' grids and searches that the catalog (or a
prepared folder) sizes, the forward MMac per row under its key (``ssmbench.mmac_table``):
figures the table already holds under a current key are kept, the others counted (by
``ssmbench plan``'s own code, ``plan.estimate``). The table written holds the current keys
only: a figure whose code or configuration changed drops out.

Run it after changing a model's code or configuration, the counting (complexity.py) or
the pinned torch / ptflops: `ssmbench plan` stays right without it (a key it does not
find is counted), only slower, and tests/test_mmac_table.py fails until it is run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    from ssmbench.config import load_params
    from ssmbench.mmac_table import SHIPPED, MMacTable, read_table, write_table
    from ssmbench.plan import estimate
    from ssmbench.step_costs import TABLE, StepCosts

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--params", default=str(REPO / "params.yaml"))
    ap.add_argument("--table", default=str(SHIPPED), help="the table to write")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if a figure would be counted")  # fmt: skip
    args = ap.parse_args(argv)

    params = load_params(args.params)
    table = MMacTable(cache=None, shipped=Path(args.table))
    costs = StepCosts.load(TABLE)  # only the MMac are wanted: any table will do
    for suite in params["suites"]:
        start, before = time.perf_counter(), table.counted
        estimate(params, costs, suite=suite, mmac=table)
        print(f"{suite}: {table.counted - before} counted "
              f"({time.perf_counter() - start:.1f} s)", flush=True)  # fmt: skip
    old = read_table(Path(args.table))
    dropped = len(set(old) - set(table.used))
    if args.check:
        if table.counted or dropped:
            print(f"{args.table} is not current: {table.counted} figures missing, {dropped} "
                  "stale; run scripts/mmac_table.py", file=sys.stderr)  # fmt: skip
            return 1
        print(f"{args.table} is current ({len(table.used)} figures)")
        return 0
    write_table(Path(args.table), table.used)
    print(f"{args.table}: {len(table.used)} figures ({table.counted} counted, {dropped} dropped)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
