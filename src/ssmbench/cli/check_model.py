"""`ssmbench check-model FAMILY`: the model contract (``ssmbench.model_contract``) on a
model class, built-in (``ms4``) or a researcher's own (``package.module:Class``,
importable from this environment), before any params entry or job uses it."""

from __future__ import annotations

import sys

from ssmbench.cli.common import example, log


def add_parser(sub) -> None:
    p = sub.add_parser(
        "check-model",
        help="run the model contract on a family (a built-in name or package.module:Class)",
        description=__doc__.split("\n\n")[0],
        **example(
            "PYTHONPATH=examples/own_model ssmbench check-model mymodels.pool:MeanPoolLinear"
        ),
    )
    p.add_argument("family", help="a built-in family (ms4, gru, ...) or package.module:Class")
    p.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
        help="a hyperparameter for the contract's models, over the class's TEST_PARAMS "
        "(values read as on ssmbench --set: 32, 1e-4, true, text); repeatable",
    )  # fmt: skip
    p.set_defaults(func=cmd_check_model)


def _hyperparameters(family: str, overrides: list[str]) -> dict:
    from ssmbench.config import ConfigError
    from ssmbench.model_contract import contract_params
    from ssmbench.precedence import read_value

    hyper = contract_params(family)
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set {item!r}: write it as KEY=VALUE (e.g. --set d_model=32)")
        hyper[key] = read_value(text)
    return hyper


def cmd_check_model(args) -> int:
    from ssmbench.config import ConfigError
    from ssmbench.model_contract import checks, run_check
    from ssmbench.models import FAMILIES, validate_model_params
    from ssmbench.models.imported import FamilyImportError, import_family, is_import_path

    family = args.family
    if is_import_path(family):
        try:
            import_family(family)
        except FamilyImportError as exc:
            raise ConfigError(str(exc)) from None
    elif family not in FAMILIES:
        raise ConfigError(
            f"family {family!r}: neither a built-in family ({', '.join(sorted(FAMILIES))}) "
            "nor an import path package.module:Class"
        )
    hyper = _hyperparameters(family, args.overrides)
    try:
        validate_model_params(f"check-model {family}", {"family": family, **hyper})
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    found = checks(family)
    print(f"{family}: the model contract with hyperparameters {hyper or '(the defaults)'}")
    failed = 0
    for check in found:
        problem = run_check(check, family, hyper)
        failed += problem is not None
        print(f"  {'ok  ' if problem is None else 'FAIL'}  {check.name}"
              + (f"\n        {problem}" if problem else ""))  # fmt: skip
        sys.stdout.flush()
    print(f"{len(found) - failed} of {len(found)} checks passed")
    if failed:
        log(f"ssmbench check-model: {family} does not meet the model contract "
            f"({failed} check{'s' if failed > 1 else ''} failed)")  # fmt: skip
        return 1
    return 0
