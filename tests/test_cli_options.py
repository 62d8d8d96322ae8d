"""One way to type every command: --params, --suite and --set before the verb or after it
(two different values refused), help text on every argument, one example in each
command's --help that parses, and `ssmbench suites`."""

from __future__ import annotations

import argparse
import shlex

import pytest
from conftest import REPO

from ssmbench.cli import HAS_STEPS, READS_NO_CONFIG, build_parser, main

PARAMS = str(REPO / "params.yaml")


def _choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(subs[0].choices) if subs else {}


def _commands() -> dict[str, argparse.ArgumentParser]:
    """Every command, and each step of a command made of steps (`offline pack`)."""
    commands = _choices(build_parser())
    for name in HAS_STEPS:
        commands.update({f"{name} {s}": p for s, p in _choices(commands[name]).items()})
    return commands


def _parse(argv: list[str]) -> argparse.Namespace:
    from ssmbench.cli.common import merge_config_arguments

    args = build_parser().parse_args(argv)
    assert merge_config_arguments(args) is None
    return args


# the arguments each command needs besides the config options
NEEDS = {
    "fetch": ["--benchmark", "uea", "--dataset", "BasicMotions"],
    "prepare": ["--benchmark", "uea", "--dataset", "BasicMotions"],
    "split": ["--benchmark", "uea", "--dataset", "BasicMotions", "--fold", "0"],
    "train": ["--benchmark", "uea", "--dataset", "BasicMotions", "--model", "MS4N", "--fold", "0"],
    "tune": ["--benchmark", "uea", "--dataset", "BasicMotions", "--model", "MS4N"],
    "explain": ["--benchmark", "uea", "--dataset", "BasicMotions", "--model", "MS4N"],
    "offline pack": ["--out", "bundle.tar"],
    "offline unpack": ["bundle.tar"],
    "offline records": ["--out", "records.tar"],
    "offline merge": ["records.tar"],
}


def test_every_command_that_reads_the_config_takes_its_options_after_the_verb_too():
    commands = _commands()
    assert READS_NO_CONFIG < set(commands)
    for name in sorted(set(commands) - READS_NO_CONFIG - HAS_STEPS):
        rest = [*name.split(), *NEEDS.get(name, [])]
        after = _parse([*rest, "--suite", "tiny", "--params", "p.yaml", "--set", "lr=1"])
        before = _parse(["--suite", "tiny", "--params", "p.yaml", "--set", "lr=1", *rest])
        for args in (after, before):
            assert (args.suite, args.params, args.settings) == ("tiny", "p.yaml", ["lr=1"]), name
        plain = _parse(rest)
        assert (plain.suite, plain.params, plain.settings) == (None, "params.yaml", []), name
    for name in READS_NO_CONFIG:  # a command that reads no config does not offer them
        with pytest.raises(SystemExit):
            build_parser().parse_args([name, "--suite", "tiny"])


def test_settings_before_and_after_the_verb_add_up():
    args = _parse(["--set", "lr=1", "check", "--set", "max_epochs=2"])
    assert args.settings == ["lr=1", "max_epochs=2"]


def test_an_option_given_twice_with_different_values_is_one_error(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--suite", "tiny", "check", "--suite", "default"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "--suite is given twice, 'tiny' before the command and 'default' after it" in err
    # the same value twice is no contradiction
    assert main(["--params", PARAMS, "--suite", "tiny", "grid", "--suite", "tiny"]) == 0


def test_every_argument_has_help_and_every_command_an_example_that_parses():
    for name, parser in _commands().items():
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"ssmbench {name} {action.option_strings or action.dest}: no help"
        epilog = parser.epilog or ""
        assert epilog.startswith("example:\n  "), f"ssmbench {name}: no example"
        words = shlex.split(epilog.removeprefix("example:\n  "))
        while "=" in words[0]:  # an environment variable the example sets first
            words.pop(0)
        assert words[0] == "ssmbench" and name in " ".join(words), (name, words)
        if name == "locked":
            continue  # its REMAINDER takes the rest
        build_parser().parse_args(words[1:])  # the example is a valid command line
        assert name in parser.format_help().split("example:")[1]


def test_suites_lists_every_suite_with_its_runs(capsys):
    from ssmbench.config import load_params, suite_grid, suite_searches

    assert main(["suites", "--params", PARAMS]) == 0
    out = capsys.readouterr().out.splitlines()
    params = load_params(PARAMS)
    rows = {line[2:].split()[0]: line for line in out[1:-1]}
    assert set(rows) == set(params["suites"])
    for name, line in rows.items():
        cells = line[2:].split()
        runs, searches = (int(c.replace(",", "")) for c in (cells[2], cells[4]))
        assert runs == len(suite_grid(params, name)), name
        assert searches == len(suite_searches(params, name)), name
        assert line.startswith("* ") == (name == params["suite"]), name
        described = params["suites"][name].get("description")
        if described:
            assert line.endswith(described)
    assert "uea-paper" in rows and "20,400" in rows["uea-paper"]
