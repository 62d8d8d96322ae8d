"""Hostile inputs to `ssmbench plan` and `ssmbench complexity`: a calibration table that is
not UTF-8 or not readable CSV, run records under `plan --check DIR` whose fields are not
what `ssmbench train` writes, and --channels/--classes/--length out of range. Each gives a
message naming the file or the option and what is wrong, never a traceback."""

from __future__ import annotations

import json
import math

import pytest
from conftest import REPO

from ssmbench import plan_check
from ssmbench.cli import main
from ssmbench.config import ConfigError
from ssmbench.step_costs import COLUMNS, read_table

ROW = "m,cpu,1,ms4,MS4N,1,3,100,0.001,0.5,0.1,2026-12-05,test"
TABLE_TEXT = "# a test table\n" + ",".join(COLUMNS) + "\n" + ROW + "\n"

# ------------------------------------------------------------------ the calibration table


def test_a_table_that_is_not_utf8_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes(b"\xff\xfe" + TABLE_TEXT.encode())
    with pytest.raises(ConfigError, match="bad.csv: the calibration table is not UTF-8 text"):
        read_table(path)


def test_a_field_over_the_csv_limit_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text(TABLE_TEXT + ROW.replace("test", '"' + "x" * 200_000 + '"') + "\n")
    with pytest.raises(ConfigError, match="bad.csv: the calibration table is not CSV") as err:
        read_table(path)
    assert "field larger than field limit" in str(err.value)
    assert "unbalanced quote" in str(err.value)


def test_cli_plan_names_a_table_that_is_not_utf8(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_bytes(b"\xff" + TABLE_TEXT.encode())
    argv = ["--params", str(REPO / "params.yaml"), "--suite", "default", "plan"]
    assert main([*argv, "--table", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"ssmbench plan: error: {path}: the calibration table is not UTF-8 text" in err


# ------------------------------------------------------------------ plan --check records


def _record(**changes) -> dict:
    record = {"benchmark": "uea", "dataset": "BasicMotions", "model": "MS4N", "fold": 0,
              "family": "ms4", "device": "cpu", "mmac_full": 1.0, "n_train": 36, "n_val": 4,
              "batch_size": 4, "epochs_run": 5, "train_seconds": 12.0}  # fmt: skip
    record.update(changes)
    return {k: v for k, v in record.items() if v is not _GONE}


_GONE = object()

BAD_RECORDS = [
    ({"train_seconds": "abc"}, "train_seconds = 'abc' is not a finite number of seconds > 0"),
    ({"train_seconds": "12.5"}, "train_seconds = '12.5' is not a finite number"),
    ({"train_seconds": -5.0}, "train_seconds = -5.0 is not a finite number of seconds > 0"),
    ({"train_seconds": math.nan}, "train_seconds = nan is not a finite number"),
    ({"epochs_run": "one"}, "epochs_run = 'one' is not an integer >= 1"),
    ({"family": _GONE}, "family is missing (a name)"),
    ({"mmac_full": "big"}, "mmac_full = 'big' is not a finite number >= 0, or null"),
    ({"batch_size": 0}, "batch_size = 0 is not an integer >= 1"),
    ({"fold": "0"}, "fold = '0' is not an integer >= 0"),
]


@pytest.mark.parametrize("changes, message", BAD_RECORDS)
def test_a_record_train_would_not_write_is_named(changes, message):
    assert message in "; ".join(plan_check.record_problems(_record(**changes)))


def test_the_records_train_writes_have_no_problems():
    assert plan_check.record_problems(_record()) == []
    fitted = _record(family="quant", model="Quant", mmac_full=None, batch_size=None)
    assert plan_check.record_problems(fitted) == []


@pytest.mark.parametrize("changes, message", BAD_RECORDS)
def test_cli_plan_check_leaves_out_a_bad_record_with_one_warning(
    tmp_path, capsys, changes, message
):
    table = tmp_path / "t.csv"
    table.write_text(TABLE_TEXT)
    runs = tmp_path / "runs"
    (runs / "bad").mkdir(parents=True)
    (runs / "good").mkdir()
    bad = runs / "bad" / "fold0.json"
    bad.write_text(json.dumps(_record(**changes)))
    (runs / "good" / "fold0.json").write_text(json.dumps(_record()))
    argv = ["--params", str(REPO / "params.yaml"), "--suite", "default", "plan"]
    assert main([*argv, "--table", str(table), "--check", str(runs)]) == 0
    out, err = capsys.readouterr()
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"warning: {bad}: left out of the check: ")
    assert message in warnings[0]
    # the good record is still compared, and only it
    assert f"The estimate against 1 records of {runs}:" in out
    assert "1 runs: estimated / measured median" in out
    assert "nan" not in out.split("The estimate against")[1]


def test_an_estimate_of_zero_seconds_is_the_worst_ratio():
    checks = [plan_check.Check("a", "m", 1, 10.0, 0.0), plan_check.Check("b", "m", 1, 10.0, 12.0)]
    assert "worst 0.00" in plan_check.format_error(checks)


# ------------------------------------------------------------------ complexity


@pytest.mark.parametrize(
    "option, value, bound",
    [
        ("--channels", "0", "give 1 to 2,000 channels"),
        ("--channels", "-2", "give 1 to 2,000 channels"),
        ("--channels", "2001", "give 1 to 2,000 channels"),
        ("--channels", "100000000", "give 1 to 2,000 channels"),
        ("--classes", "0", "give 1 to 10,000 classes"),
        ("--classes", "-1", "give 1 to 10,000 classes"),
        ("--length", "0", "give 1 to 1,000,000 steps"),
        ("--length", "-5", "give 1 to 1,000,000 steps"),
        ("--length", "99999999999999999999", "give 1 to 1,000,000 steps"),
    ],
)
def test_complexity_refuses_a_shape_out_of_range(capsys, option, value, bound):
    shape = {"--channels": "3", "--classes": "4", "--length": "100", option: value}
    argv = ["--params", str(REPO / "params.yaml"), "complexity", "--models", "MS4"]
    with pytest.raises(SystemExit) as stop:
        main([*argv, *(x for kv in shape.items() for x in kv)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: {value}: {bound}" in err
    assert "within ~2 GB of memory" in err


def test_complexity_csv_without_table4_is_an_error(tmp_path, capsys):
    out = tmp_path / "c.csv"
    argv = ["--params", str(REPO / "params.yaml"), "complexity", "--models", "MS4"]
    shape = ["--channels", "3", "--classes", "4", "--length", "100"]
    assert main([*argv, *shape, "--csv", str(out)]) == 2
    assert "--csv goes with --table4" in capsys.readouterr().err
    assert not out.exists()


def test_complexity_counts_a_large_sample_on_meta_with_the_same_figure(capsys, monkeypatch):
    import ssmbench.complexity
    from ssmbench.complexity import mmac
    from ssmbench.config import load_params, model_entry
    from ssmbench.models import build_model

    devices = []

    def spy(model, n_channels, length, device="auto", **kwargs):
        devices.append(device)
        return mmac(model, n_channels, length, device=device, **kwargs)

    monkeypatch.setattr(ssmbench.complexity, "mmac", spy)
    # C x L = 600,000 is past CPU_MAX_VALUES: counted on the meta device
    argv = ["--params", str(REPO / "params.yaml"), "complexity", "--models", "MS4"]
    assert main([*argv, "--channels", "1000", "--classes", "4", "--length", "600"]) == 0
    line = capsys.readouterr().out.splitlines()[1].split()
    params = load_params(REPO / "params.yaml")
    model = build_model("MS4", 1000, 4, 600, model_entry(params, "MS4"))
    assert devices == ["meta"]
    assert float(line[2]) == pytest.approx(mmac(model, 1000, 600, device="cpu"), abs=1e-3)


def test_complexity_says_which_model_its_own_limits_refuse(capsys):
    # RFormer refuses a signature this wide (a block of ~10^13 parameters)
    argv = ["--params", str(REPO / "params.yaml"), "complexity", "--models", "RFormer", "MS4"]
    assert main([*argv, "--channels", "1345", "--classes", "4", "--length", "270"]) == 0
    out, err = capsys.readouterr()
    assert "RFormer" in out and "not built" in out
    assert "note: RFormer is not built at C=1345, K=4, L=270: RFormer: tokens of" in err


def test_cli_plan_check_a_fitted_record_of_a_benchmark_params_yaml_lacks(tmp_path, capsys):
    table = tmp_path / "t.csv"
    table.write_text(TABLE_TEXT)
    runs = tmp_path / "runs"
    runs.mkdir()
    fitted = _record(benchmark="elsewhere", family="quant", model="Quant", mmac_full=None,
                     batch_size=None, epochs_run=1)  # fmt: skip
    (runs / "fold0.json").write_text(json.dumps(fitted))
    argv = ["--params", str(REPO / "params.yaml"), "--suite", "default", "plan"]
    assert main([*argv, "--table", str(table), "--check", str(runs)]) == 0
    out = capsys.readouterr().out
    assert "elsewhere/BasicMotions/Quant/fold0" in out  # no figure for quant: n/a
