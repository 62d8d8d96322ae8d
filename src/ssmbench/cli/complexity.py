"""`ssmbench complexity`: params and MMac of models for one input shape, or (--table4)
beside the MS4N paper's Table 4."""

from __future__ import annotations

from ssmbench.cli.common import load, log


def add_parser(sub) -> None:
    p = sub.add_parser(
        "complexity",
        help="params and MMac of models for one input shape, or beside the paper's Table 4",
    )
    p.add_argument("--channels", type=int)
    p.add_argument("--classes", type=int)
    p.add_argument("--length", type=int)
    p.add_argument("--models", nargs="*")
    p.add_argument(
        "--table4",
        action="store_true",
        help="per MONSTER domain: our average params and MMac beside the MS4N paper's Table 4",
    )
    p.add_argument("--csv", help="with --table4: also write the comparison to this CSV")
    p.set_defaults(func=cmd_complexity)


def cmd_complexity(args) -> int:
    from ssmbench.complexity import count_params, mmac
    from ssmbench.config import ConfigError, model_entry
    from ssmbench.models import build_model, is_estimator

    params = load(args)
    for name in args.models or []:
        if name not in params["models"]:
            raise ConfigError(
                f"--models: unknown model {name!r} (known: {', '.join(params['models'])})"
            )
    if args.table4:
        return _complexity_table4(params, args)
    if None in (args.channels, args.classes, args.length):
        raise ConfigError("complexity: give --channels, --classes and --length, or --table4")
    names = args.models or list(params["models"])
    shape = f"C={args.channels}, K={args.classes}, L={args.length}"
    width = max(14, *(len(n) + 2 for n in names))
    print(f"{'model':<{width}}{'params':>12}{'MMac':>12}   ({shape})")
    for name in names:
        entry = model_entry(params, name)
        model = build_model(name, args.channels, args.classes, args.length, entry)
        if is_estimator(model):
            print(f"{name:<{width}}{'n/a':>12}{'n/a':>12}")
            continue
        n_params, macs = count_params(model), mmac(model, args.channels, args.length)
        print(f"{name:<{width}}{n_params:>12,}{macs:>12.3f}")
    return 0


def _complexity_table4(params, args) -> int:
    """Per model and MONSTER domain: ours beside the MS4N paper's Table 4."""
    from ssmbench.config import model_entry
    from ssmbench.io import atomic_write
    from ssmbench.report.table4 import declared_gaps, table4_comparison

    df = table4_comparison({m: model_entry(params, m) for m in params["models"]}, args.models)

    def num(v, fmt):
        return "n/a" if v is None or v != v else format(v, fmt)

    def pct(v):
        return "" if v is None or v != v else f"{v:+.1f}%"

    print(
        f"{'model':<13}{'domain':<10}{'params':>10}{'paper':>10}{'diff':>8}"
        f"{'MMac':>11}{'paper':>11}{'diff':>8}"
    )
    for r in df.itertuples(index=False):
        print(
            f"{r.model:<13}{r.domain:<10}{num(r.params, ',.0f'):>10}"
            f"{num(r.params_paper, ',.0f'):>10}{pct(r.params_diff_pct):>8}"
            f"{num(r.mmac, ',.2f'):>11}{num(r.mmac_paper, ',.2f'):>11}"
            f"{pct(r.mmac_diff_pct):>8}"
        )
    for name in dict.fromkeys(df["model"]):
        for (key, domain), why in declared_gaps(params["models"][name]["family"]).items():
            where = "every domain" if domain == "*" else domain
            print(f"\n{name} {key} ({where}) is not matched: {why}")
    if args.csv:
        atomic_write(args.csv, lambda p: df.to_csv(p, index=False, lineterminator="\n"))
        log(f"wrote {args.csv}")
    return 0
