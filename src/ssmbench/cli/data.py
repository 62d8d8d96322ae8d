"""`ssmbench fetch`, `ssmbench prepare` and `ssmbench split`: one dataset's raw copy, its
prepared folder, and one fold's split of a dataset read in blocks."""

from __future__ import annotations

import json
from pathlib import Path

from ssmbench.cli.common import add_run_arguments, check_known, example, inside, load, log


def add_parser(sub) -> None:
    for name, func in (("fetch", cmd_fetch), ("prepare", cmd_prepare)):
        p = sub.add_parser(
            name, help=f"{name} one dataset",
            **example(f"ssmbench {name} --benchmark uea --dataset BasicMotions"),
        )  # fmt: skip
        add_run_arguments(p, "benchmark", "dataset")
        if name == "fetch":
            p.add_argument(
                "--force",
                action="store_true",
                help="fetch again even if the raw copy matches its provenance",
            )
        p.set_defaults(func=func)
    p = sub.add_parser(
        "split",
        help="one fold's train/validation/test rows of a dataset read in blocks, drawn once "
        "for its training jobs (the split rule)",
        **example("ssmbench split --benchmark monster --dataset WISDM --fold 0"),
    )
    add_run_arguments(p, "benchmark", "dataset", "fold")
    p.add_argument(
        "--out",
        help="the split's folder, under paths.splits (default: "
        "{paths.splits}/{benchmark}/{dataset}/fold{fold}, where its training jobs read it)",
    )
    p.set_defaults(func=cmd_split)


def cmd_fetch(args) -> int:
    from ssmbench.config import benchmark_settings
    from ssmbench.data.sources import fetch

    params = load(args)
    check_known(args, params)
    settings = benchmark_settings(params, args.benchmark, dataset=args.dataset)
    raw_dir = Path(params["paths"]["raw"]) / args.benchmark
    inside(raw_dir / args.dataset, params, "raw")
    info = fetch(args.dataset, raw_dir, settings, force=args.force)
    log(f"fetched {args.benchmark}/{args.dataset} from {info.get('source')}: {json.dumps(info)}")
    return 0


def cmd_prepare(args) -> int:
    from ssmbench.config import benchmark_settings
    from ssmbench.data.sources import prepare

    params = load(args)
    check_known(args, params)
    settings = benchmark_settings(params, args.benchmark, dataset=args.dataset)
    raw_dir = Path(params["paths"]["raw"]) / args.benchmark
    out_dir = Path(params["paths"]["prepared"]) / args.benchmark
    inside(out_dir / args.dataset, params, "prepared")
    path = prepare(args.dataset, raw_dir, out_dir, settings)
    meta = json.loads((path / "meta.json").read_text())
    log(
        f"prepared {path}: N={meta['N']} C={meta['C']} L={meta['L']} classes={meta['n_classes']} "
        f"length_policy={meta.get('length_policy')!r}"
    )
    for warning in meta.get("warnings") or []:  # also in meta.json: prepared, but not as asked
        log(f"warning: {warning}")
    return 0


def cmd_split(args) -> int:
    """One fold's split of a dataset read in blocks, drawn once for all its training jobs
    (the split rule; ssmbench.train.fold_split.write_split): the training, validation
    and test rows as .npy files and a split.json, in ``split_path`` (or --out, under
    paths.splits). It is drawn with the benchmark's settings (``benchmark_settings``: what
    every model's run has unless it overrides them, which `untuned_spec` refuses for such
    a dataset), so a run's ``read_split`` check finds its own settings."""
    from ssmbench.config import benchmark_settings, split_dir_of, split_path
    from ssmbench.train.fold_split import write_split

    params = load(args)
    check_known(args, params)
    settings = benchmark_settings(params, args.benchmark, dataset=args.dataset)
    prepared = Path(params["paths"]["prepared"]) / args.benchmark / args.dataset
    own = split_path(params, args.benchmark, args.dataset, args.fold)
    out = inside(Path(args.out) if args.out else own, params, "splits")
    if split_dir_of(params, (args.benchmark, args.dataset, args.fold)) is None:
        log(f"note: {args.benchmark}/{args.dataset} fits protocol.reading.in_memory_max_gb: "
            "its runs draw their split themselves and do not read this one")  # fmt: skip
    summary = write_split(prepared, args.fold, settings, out)
    rows = summary["rows"]
    log(f"wrote {out}: fold {args.fold} of {args.benchmark}/{args.dataset} "
        f"({summary['method']}): {rows['train']} train, {rows['val']} validation, "
        f"{rows['test']} test rows; drawn with {json.dumps(summary['settings'])}")  # fmt: skip
    return 0
