"""`ssmbench offline pack|unpack|records|merge`: a suite's runs on compute nodes without
network (ssmbench.offline; docs/offline.md). On a machine with network `pack` writes one
bundle of the wheels and the datasets the suite needs; on the node `unpack` installs the
wheels with no index, puts the data where the suite's fetch reads them and fetches and
prepares each dataset there; `records` packs the node's finished runs, and `merge` adds them
to the project's `paths.runs`, never replacing a finished record that differs.

`unpack` reads no params.yaml itself and imports the standard library alone: it runs before
the project's packages are installed; its fetch and prepare steps read params.yaml with them.
"""

from __future__ import annotations

from pathlib import Path

from ssmbench.cli.common import add_config_arguments, example, load, log


def add_parser(sub) -> None:
    p = sub.add_parser(
        "offline",
        help="compute nodes without network: pack a suite's wheels and data, unpack them "
        "there, bring the run records back",
        description=__doc__.split("\n\n")[0],
        **example("ssmbench offline pack --suite uea10 --out uea10-bundle.tar --without dvc"),
    )
    steps = p.add_subparsers(
        dest="offline_step", required=True, metavar="STEP",
        help="pack (with network), unpack (on the node); records (on the node), merge",
    )  # fmt: skip
    _pack_parser(steps)
    _unpack_parser(steps)
    _records_parser(steps)
    _merge_parser(steps)
    for step in steps.choices.values():
        add_config_arguments(step, after=True)
    for action in steps.choices["unpack"]._actions:
        if action.dest == "suite_after":  # unpack reads the suite from the bundle
            action.help = "the bundle's suite (default; another is refused)"


def _pack_parser(steps) -> None:
    q = steps.add_parser(
        "pack", help="on a machine with network: the suite's wheels and data in one bundle",
        **example("ssmbench offline pack --suite uea10 --out uea10-bundle.tar --without dvc"),
    )  # fmt: skip
    q.add_argument("--out", required=True, metavar="FILE", help="the bundle to write (a .tar)")
    q.add_argument(
        "--no-wheels", action="store_true",
        help="data only: the node has every package the project needs",
    )  # fmt: skip
    q.add_argument(
        "--without", action="append", default=[], metavar="PACKAGE",
        help="leave out this package and what only it needs (torch where the node has its "
        "CUDA build, dvc, which runs on the login node); repeatable",
    )  # fmt: skip
    q.add_argument(
        "--python-version", metavar="X.Y",
        help="the node's Python, when it is not this one's (e.g. 3.12)",
    )  # fmt: skip
    q.add_argument(
        "--platform", action="append", default=[], metavar="TAG",
        help="a platform tag of the node's wheels (e.g. manylinux_2_28_x86_64), when it is "
        "not this machine's; repeatable",
    )  # fmt: skip
    q.set_defaults(func=cmd_pack)


def _unpack_parser(steps) -> None:
    q = steps.add_parser(
        "unpack",
        help="on the node, in the project folder: check the bundle, install its wheels, put "
        "its data in place, fetch and prepare each dataset without network",
        **example('ssmbench offline unpack uea10-bundle.tar --site "$TMPDIR/site"'),
    )
    q.add_argument("bundle", metavar="BUNDLE", help="a bundle of `ssmbench offline pack`")
    where = q.add_mutually_exclusive_group()
    where.add_argument(
        "--site", metavar="DIR",
        help="install the wheels into DIR (pip --target); then run with PYTHONPATH=DIR:src",
    )  # fmt: skip
    where.add_argument(
        "--venv", metavar="DIR",
        help="install the wheels into the virtual environment DIR (made, seeing this "
        "Python's packages, when it does not exist)",
    )  # fmt: skip
    q.add_argument(
        "--no-prepare", action="store_true",
        help="stop once the data are in place (no fetch and prepare)",
    )  # fmt: skip
    q.set_defaults(func=cmd_unpack)


def _records_parser(steps) -> None:
    q = steps.add_parser(
        "records", help="the finished runs of the suite (with their logs) in one archive",
        **example("ssmbench offline records --suite uea10 --out records-node1.tar"),
    )  # fmt: skip
    q.add_argument("--out", required=True, metavar="FILE", help="the archive to write (a .tar)")
    q.add_argument(
        "--all", action="store_true",
        help="every finished run under paths.runs, not only the suite's",
    )  # fmt: skip
    q.set_defaults(func=cmd_records)


def _merge_parser(steps) -> None:
    q = steps.add_parser(
        "merge",
        help="add an archive's finished runs to paths.runs; refused if one differs from a "
        "record there",
        **example("ssmbench offline merge records-node1.tar"),
    )
    q.add_argument("archive", metavar="ARCHIVE", help="an archive of `ssmbench offline records`")
    q.add_argument("--dry-run", action="store_true", help="say what would be added; write nothing")
    q.set_defaults(func=cmd_merge)


def cmd_pack(args) -> int:
    from ssmbench.offline.pack import WheelRequest, pack
    from ssmbench.offline.wheels import dependency_pins, normalise

    params = load(args)
    wheels = None
    if not args.no_wheels:
        pins = dependency_pins("ssmbench", without=args.without)
        wheels = WheelRequest(pins, args.python_version, tuple(args.platform))
        every = {name for name, _ in dependency_pins("ssmbench")}
        for name in args.without:
            if normalise(name) not in every:
                log(f"note: --without {name}: the project needs no package of that name")
    elif args.without or args.platform or args.python_version:
        log("note: --without, --python-version and --platform choose wheels; --no-wheels "
            "packs none")  # fmt: skip
    manifest = pack(params, Path(args.out), suite=params["suite"], wheels=wheels, say=log)
    kinds = [d["kind"] for d in manifest["datasets"]]
    print(f"{args.out}: suite {manifest['suite']}, {len(manifest['wheels'])} wheels, "
          f"{len(kinds)} datasets ({kinds.count('archive')} archive, {kinds.count('raw')} raw, "
          f"{kinds.count('made')} made on the node)")  # fmt: skip
    return 0


def cmd_unpack(args) -> int:
    from ssmbench.data.errors import DataError
    from ssmbench.data.names import name_problem
    from ssmbench.offline.unpack import unpack

    if args.suite is not None and (why := name_problem("suite", args.suite)) is not None:
        raise DataError(f"--suite: {why}")
    if not Path(args.params).is_file():
        raise DataError(
            f"--params {args.params}: no such file in {Path.cwd()}; run ssmbench offline "
            f"unpack in the project folder, where the bundle's paths lead"
        )
    command = ["--params", args.params]
    for setting in args.settings:
        command += ["--set", setting]
    site = Path(args.site) if args.site else None
    manifest = unpack(
        Path(args.bundle), site=site, venv=Path(args.venv) if args.venv else None,
        prepare=not args.no_prepare, command=command, suite=args.suite, say=log,
    )  # fmt: skip
    print(f"{args.bundle}: suite {manifest['suite']} ready"
          + (f"; run it with PYTHONPATH={site.resolve()}:src" if site else ""))  # fmt: skip
    return 0


def cmd_records(args) -> int:
    from ssmbench.config import suite_grid
    from ssmbench.offline.records import pack_records, record_paths

    params = load(args)
    runs = Path(params["paths"]["runs"])
    if args.all:
        records = record_paths(runs)
    else:
        records = [job.record_path(runs) for job in suite_grid(params)]
    done = pack_records(runs, Path(params["paths"]["logs"]), Path(args.out), records, say=log)
    print(f"{args.out}: {len(done['packed'])} finished runs")
    return 0


def cmd_merge(args) -> int:
    from ssmbench.offline.records import merge_records
    from ssmbench.project_lock import ProjectBusy, ProjectLockError, acquire, release

    params = load(args)
    if not args.dry_run:
        try:
            acquire()  # no run publishes a record meanwhile
        except (ProjectBusy, ProjectLockError) as exc:
            log(f"ssmbench offline merge: error: {exc}")
            return 1
    try:
        found = merge_records(
            Path(args.archive), Path(params["paths"]["runs"]), Path(params["paths"]["logs"]),
            dry_run=args.dry_run, say=log,
        )  # fmt: skip
    finally:
        if not args.dry_run:
            release()
    for rel in found.new:
        print(f"{'would add' if args.dry_run else 'added'} {rel}")
    return 0
