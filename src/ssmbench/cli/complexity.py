"""`ssmbench complexity`: params and MMac of models for one input shape, or (--table4)
beside the MS4N paper's Table 4."""

from __future__ import annotations

import argparse

from ssmbench.cli.common import _integer, example, load, log

#: the largest --channels, --classes and --length: what each is, and how far the catalogued
#: datasets reach (C 1,345, K 82, L 47,998). The bounds lie past every catalogued dataset
#: and keep what is built small. A model's weights grow with C squared (LinODEnet ~31 C²:
#: 124 M at 2,000, 3 G at 10,000; TIDES and S5 ~2 C²) or with C (ConvTran ~4,100 a
#: channel), with K (a head of at most ~400 a class: 4 M at 10,000) and, for iTransformer,
#: with L (64 a step: 64 M at 1,000,000); mmac counts a copy of them. Counting every model
#: at the bounds peaks at ~2 GB (measured at C 2,000, K 10,000, L 250); a C of 10,000 or
#: an L of 10^8 asks for tens of GB.
SHAPE_BOUNDS = {
    "channels": (2_000, "channels", "the widest catalogued dataset, DuckDuckGeese, has 1,345"),
    "classes": (10_000, "classes", "the most of a catalogued dataset are Pedestrian's 82"),
    "length": (1_000_000, "steps", "the longest catalogued series, AudioMNIST's, has 47,998"),
}
#: the most values (C x L) of the sample counted on the CPU; a larger one is counted on the
#: meta device (complexity.mmac: shapes only, the same figure), as a long one is, since
#: some models' activations grow with C x L (ConvTran: ~1 KB a value, 10 GB at 10,240,000)
#: or with C squared x L (LogNCDE's signatures: 1.1 GB at C 2,000 x L 250). Every
#: catalogued dataset (DuckDuckGeese: 363,150) lies below it and is counted on the CPU.
CPU_MAX_VALUES = 500_000


def shape_size(option: str):
    """An argparse ``type=`` for ``--<option>``: an integer from 1 to its ``SHAPE_BOUNDS``
    bound. 0 or less is no shape (a model of no channels or classes still builds and
    prints numbers); past the bound the model or the sample would take gigabytes."""
    most, unit, reach = SHAPE_BOUNDS[option]

    def parse(text: str) -> int:
        n = _integer(text)
        if not 1 <= n <= most:
            raise argparse.ArgumentTypeError(
                f"{n}: give 1 to {most:,} {unit} ({reach}; the bound keeps the models "
                "built and counted within ~2 GB of memory)"
            )
        return n

    return parse


def add_parser(sub) -> None:
    p = sub.add_parser(
        "complexity",
        help="params and MMac of models for one input shape, or beside the paper's Table 4",
        **example("ssmbench complexity --channels 3 --classes 4 --length 1000 --models MS4N S4D"),
    )
    for option, letter in (("channels", "C"), ("classes", "K"), ("length", "L")):
        most, unit, _ = SHAPE_BOUNDS[option]
        p.add_argument(
            f"--{option}", type=shape_size(option), help=f"{letter}: 1 to {most:,} {unit}"
        )
    p.add_argument(
        "--models", nargs="*", metavar="MODEL",
        help="models of params.yaml's `models` (default: every model of the suite)",
    )  # fmt: skip
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
    if args.csv:
        raise ConfigError(
            "complexity: --csv goes with --table4 (it writes the Table 4 comparison); "
            "the counts of one shape are printed only"
        )
    if None in (args.channels, args.classes, args.length):
        raise ConfigError("complexity: give --channels, --classes and --length, or --table4")
    names = args.models or list(params["models"])
    shape = f"C={args.channels}, K={args.classes}, L={args.length}"
    width = max(14, *(len(n) + 2 for n in names))
    device = "auto" if args.channels * args.length <= CPU_MAX_VALUES else "meta"
    # columns wide enough for the largest counts within SHAPE_BOUNDS (LinODEnet at C 2,000:
    # 144,052,015 params; ~10^8 MMac), with room to spare
    print(f"{'model':<{width}}{'params':>14}{'MMac':>17}   ({shape})")
    for name in names:
        entry = model_entry(params, name)
        try:
            model = build_model(name, args.channels, args.classes, args.length, entry)
        except ValueError as exc:  # the model's own limits (RFormer's signature width)
            print(f"{name:<{width}}{'not built':>31}")
            log(f"note: {name} is not built at {shape}: {exc}")
            continue
        if is_estimator(model):
            print(f"{name:<{width}}{'n/a':>14}{'n/a':>17}")
            continue
        n_params, macs = count_params(model), mmac(model, args.channels, args.length, device=device)
        print(f"{name:<{width}}{n_params:>14,}{macs:>17.3f}")
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
