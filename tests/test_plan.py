"""`ssmbench plan`: the calibration table (ssmbench.step_costs) and the bill (ssmbench.plan).

The bill's arithmetic is checked against a hand computation on the real params.yaml's
default suite with a small table written here; the shipped table is checked to load and
to cover, on its CPU machine, every model family params.yaml names."""

from __future__ import annotations

import math

import pytest
from conftest import REPO

from ssmbench.cli import main
from ssmbench.config import ConfigError, Job, load_params, run_settings
from ssmbench.plan import estimate, format_bill, row_counts
from ssmbench.plan_check import estimate_error, format_error
from ssmbench.step_costs import COLUMNS, TABLE, StepCosts, interpolate, read_table

HEADER = ",".join(COLUMNS)


def _table(tmp_path, rows: list[str], name: str = "t.csv"):
    path = tmp_path / name
    path.write_text("# a test table\n" + HEADER + "\n" + "\n".join(rows) + "\n")
    return path


def _row(machine="m", device="cpu", family="ms4", B=8, mmac="2", step="0.1", eval_s=""):
    return f"{machine},{device},1,{family},X,{B},3,100,{mmac},{step},{eval_s},2026-12-05,test"


# ------------------------------------------------------------------ interpolation


def test_interpolate_flat_below_linear_between_proportional_above():
    points = [(10.0, 1.0), (30.0, 2.0)]
    assert interpolate(points, 1.0) == 1.0  # overhead-bound below the smallest
    assert interpolate(points, 20.0) == pytest.approx(1.5)
    assert interpolate(points, 60.0) == pytest.approx(4.0)  # 2.0 x 60 / 30
    assert interpolate([(10.0, 1.0), (10.0, 3.0)], 5.0) == pytest.approx(2.0)  # averaged


def test_seconds_by_machine_and_family_and_the_eval_fallback(tmp_path):
    costs = StepCosts.load(_table(tmp_path, [
        _row(B=8, mmac="2", step="0.4", eval_s="0.1"),   # work 16
        _row(B=16, mmac="2", step="0.8", eval_s="0.2"),  # work 32
        _row(machine="g", device="cuda", family="tides", B=4, mmac="1", step="0.3"),
    ]))  # fmt: skip
    assert costs.machines() == {"m": "cpu", "g": "cuda"}
    assert costs.seconds("m", "ms4", 24.0) == pytest.approx(0.6)
    assert costs.seconds("m", "ms4", 24.0, "eval") == pytest.approx(0.15)
    assert costs.seconds("g", "tides", 8.0, "eval") == pytest.approx(0.2)  # 0.6 / 3
    assert costs.seconds("m", "tides", 8.0) is None
    assert costs.seconds("g", "ms4", 8.0) is None


@pytest.mark.parametrize(
    "text, message",
    [
        ("machine,device\nm,cpu\n", "lacks the column"),
        (HEADER + "\n" + _row(step="fast") + "\n", "step_s = 'fast' is not a number"),
        (HEADER + "\n" + _row(step="-1") + "\n", "must be a finite number >= 0"),
        (HEADER + "\n" + _row(device="tpu") + "\n", "device = 'tpu'"),
        (HEADER + "\n" + _row(step="") + "\n", "step_s is empty"),
    ],
)
def test_a_bad_table_is_refused_naming_file_row_and_field(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as err:
        read_table(path)
    assert "bad.csv" in str(err.value)


def test_the_shipped_table_covers_the_suites_families():
    costs = StepCosts.load(TABLE)
    params = load_params(REPO / "params.yaml")
    machines = costs.machines()
    assert "cpu" in machines.values() and "cuda" in machines.values()
    cpu = next(m for m, d in machines.items() if d == "cpu")
    families = {entry["family"] for entry in params["models"].values()}
    assert families <= set(costs.families(cpu)), families - set(costs.families(cpu))


# ------------------------------------------------------------------ rows


@pytest.mark.parametrize(
    "benchmark, dataset, expected",
    [
        ("uea", "BasicMotions", (36, 4, 40)),  # 40 TRAIN (10% validation), 40 TEST
        ("uea6", "MotorImagery", (264, 57, 57)),  # 378 rows cut at int(0.7 N), int(0.85 N)
        ("monster", "Tiselac", (71775, 7975, 19937)),  # 99,687 rows: a fifth tested
        ("physiome", "HodgkinHuxley1952", (1400, 400, 200)),  # 70/20/10 of 2,000
    ],
)
def test_row_counts_follow_each_benchmarks_split(benchmark, dataset, expected):
    params = load_params(REPO / "params.yaml")
    job = Job(benchmark, dataset, "MS4N", 0)
    assert row_counts(params, job, run_settings(params, job, "default")) == expected


def test_row_counts_ask_the_benchmark_s_source(monkeypatch):
    """The split rule is the source's (``Source.split_rows``); where it cannot tell, or
    there is none, a fifth of the rows is tested."""
    import dataclasses

    from ssmbench.data.source_registry import SOURCES

    params = load_params(REPO / "params.yaml")
    job = Job("physiome", "HodgkinHuxley1952", "MS4N", 0)
    settings = run_settings(params, job, "default")
    asked = []

    def rule(name, settings, size, val_fraction):
        asked.append((name, size.N, val_fraction))
        return (7, 2, 1)

    physiome = SOURCES["physiome"]
    monkeypatch.setitem(SOURCES, "physiome", dataclasses.replace(physiome, split_rows=rule))
    assert row_counts(params, job, settings) == (7, 2, 1)
    assert asked == [("HodgkinHuxley1952", 2000, settings["val_fraction"])]
    for none in (lambda *a: None, None):
        monkeypatch.setitem(SOURCES, "physiome", dataclasses.replace(physiome, split_rows=none))
        n_val = round(settings["val_fraction"] * 1600)
        assert row_counts(params, job, settings) == (1600 - n_val, n_val, 400)


# ------------------------------------------------------------------ the bill


def _default_table(tmp_path, ms4_step="0.5"):
    # ms4 (MS4N, MS4) at one point: every work above it scales in proportion
    return _table(tmp_path, [_row(family="ms4", B=1, mmac="0.001", step=ms4_step, eval_s="0.1")])


def _default_costs(tmp_path, ms4_step="0.5"):
    return StepCosts.load(_default_table(tmp_path, ms4_step))


def test_the_default_suites_bill_by_hand(tmp_path):
    params = load_params(REPO / "params.yaml", suite="default")
    bill = estimate(params, _default_costs(tmp_path))
    runs = {e.name: e for e in bill.estimates}
    assert len(runs) == 12  # 2 datasets x 3 models x 2 folds, no searches
    e = runs["uea/BasicMotions/MS4N/fold0"]
    assert (e.n_train, e.n_val, e.n_test, e.batch_size) == (36, 4, 40, 4)
    assert e.epochs == params["benchmarks"]["uea"]["max_epochs"] == 300
    assert e.device == "cpu" and e.machine == "m" and e.size_class == "small"
    # proportional above the one point: s/step = 0.5 x work / 0.001, work = B x MMac/row
    from ssmbench.complexity import mmac
    from ssmbench.config import model_entry
    from ssmbench.models import build_model

    macs = mmac(build_model("MS4N", 6, 4, 100, model_entry(params, "MS4N", "BasicMotions")),
                6, 100, device="meta", convention="full")  # fmt: skip
    step, forward = 0.5 * 4 * macs / 0.001, 0.1 * 4 * macs / 0.001
    expected = 300 * (9 * step + 1 * forward) + 10 * forward
    assert e.seconds == pytest.approx(expected, rel=1e-9)
    # S4D has no figure on machine m: not estimated, and said
    assert runs["uea/BasicMotions/S4D/fold0"].seconds is None
    text = format_bill(bill, params)
    assert "no calibration for family 's4d' on m" in text
    assert "4 runs of S4D on uea/BasicMotions, uea/JapaneseVowels" in text


def test_a_run_over_its_runtime_is_listed_with_the_setting_to_change(tmp_path):
    params = load_params(REPO / "params.yaml", suite="default")
    bill = estimate(params, _default_costs(tmp_path, ms4_step="50"))
    over = [e for e in bill.estimates if e.over_limit]
    assert over and all(e.job.model in ("MS4N", "MS4") for e in over)
    text = format_bill(bill, params)
    assert "exceeds their size class's runtime" in text
    worst = max((e for e in over if e.job.model == "MS4N"), key=lambda e: e.seconds)
    need = math.ceil(1.25 * worst.seconds / 60 / 30) * 30  # + 25 %, up to 30 minutes
    assert f"  MS4N, small: 30 -> {need}: 4 runs, up to ~" in text
    assert f"h (uea/{worst.job.dataset}); on uea/BasicMotions, uea/JapaneseVowels" in text
    assert "ssmbench plan --suite default --resources > resources.yaml" in text
    small = params["resources"]["train"]["sizes"]["small"]
    line = next(ln for ln in text.splitlines() if ln.startswith("small"))
    n_small = sum(1 for e in bill.estimates if e.size_class == "small")
    assert line.split()[1:4] == [str(n_small), "0", str(math.ceil(n_small / 10))]  # group of 10
    assert small["group"] is True


def test_the_estimate_against_a_record():
    costs = StepCosts([])
    from ssmbench.step_costs import Point

    costs = StepCosts([Point("m", "cpu", 1, "ms4", "MS4N", 10, 3, 100, 1.0, 0.2, 0.05, "", "")])
    record = {"benchmark": "uea", "dataset": "D", "model": "MS4N", "fold": 0, "family": "ms4",
              "mmac_full": 1.0, "n_train": 100, "n_val": 20, "batch_size": 10, "epochs_run": 5,
              "train_seconds": 12.0}  # fmt: skip
    (check,) = estimate_error([record], costs, "m")
    # work 10 = the point: 5 x (10 x 0.2 + 2 x 0.05) = 10.5 s
    assert check.estimated_s == pytest.approx(10.5)
    assert check.ratio == pytest.approx(10.5 / 12.0)
    assert "median 0.88" in format_error([check])


def test_cli_plan_prints_the_bill_and_refuses_an_unknown_machine(tmp_path, capsys):
    table = _default_table(tmp_path)
    argv = ["--params", str(REPO / "params.yaml"), "--suite", "default", "plan"]
    assert main([*argv, "--table", str(table)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Suite default: 12 training runs")
    assert "cpu runs estimated with the figures of: m" in out
    assert main([*argv, "--table", str(table), "--cpu-machine", "nope"]) == 2
    err = capsys.readouterr().err
    assert "--cpu-machine nope" in err and "has: m" in err


def test_a_family_without_calibration_says_the_command_and_the_projects_table_fills_it(
    tmp_path, monkeypatch
):
    """The project's own table (paths.calibration) is read beside the package's; a family
    measured in neither is "not estimated" with the command that measures it into the
    project's table."""
    params = load_params(REPO / "params.yaml", suite="default")
    package = _table(tmp_path, [_row(step="0.5", eval_s="0.1")], "package.csv")
    text = format_bill(estimate(params, StepCosts.load(package)), params)
    assert ("not estimated: no calibration for family 's4d' on m; measure it with "
            "`python benchmarks/calibrate.py --machine m --models S4D --table "
            "calibration/step_seconds.csv`") in text  # fmt: skip
    own = _table(tmp_path, [_row(family="s4d", step="0.2"), _row(step="0.4")], "own.csv")
    costs = StepCosts.load(package, own)
    bill = {e.name: e for e in estimate(params, costs).estimates}
    assert bill["uea/BasicMotions/S4D/fold0"].seconds is not None
    assert [p.step_s for p in costs.points if p.family == "ms4"] == [0.4]  # the project's
    monkeypatch.chdir(tmp_path)
    from ssmbench.step_costs import tables

    with_paths = {**params, "paths": {**params["paths"], "calibration": "own.csv"}}
    assert tables(with_paths) == [TABLE, tmp_path.joinpath("own.csv").relative_to(tmp_path)]
    assert tables({**params, "paths": {**params["paths"], "calibration": "none.csv"}}) == [TABLE]


def test_calibrate_writes_the_projects_table_not_the_packages(tmp_path):
    import subprocess
    import sys

    import yaml

    from ssmbench.params_file import read_params

    params = read_params(REPO / "params.yaml")
    params.pop("studies", None)  # the studies merged in: one file
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    before = TABLE.read_bytes()
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "calibrate.py"), "--machine", "mine",
         "--models", "S4D", "--shapes", "2x2x16", "--steps", "1",
         "--params", str(tmp_path / "params.yaml")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert TABLE.read_bytes() == before
    rows = read_table(tmp_path / "calibration" / "step_seconds.csv")
    assert [(p.machine, p.family, p.B) for p in rows] == [("mine", "s4d", 2)]


def test_totals_are_lower_bounds_when_runs_are_not_estimated_and_minutes_when_small(tmp_path):
    params = load_params(REPO / "params.yaml", suite="default")
    text = format_bill(estimate(params, _default_costs(tmp_path)), params)  # S4D: no figure
    total = next(ln for ln in text.splitlines() if ln.startswith("total"))
    assert total.split()[1] == ">=" and total.split()[3] == ">="
    assert ">=: lower bounds: 4 of 12 runs are not estimated and not counted" in text
    assert "CPU-hours" in text
    # the shipped table: make run's suite is minutes, every run estimated
    small = format_bill(estimate(params, StepCosts.load(TABLE)), params)
    assert "CPU-minutes" in small and "CPU-hours" not in small and ">=" not in small


def test_searches_are_counted_apart_from_runs(tmp_path):
    params = load_params(REPO / "params.yaml", suite="tides-bench-preview")
    bill = estimate(params, StepCosts.load(TABLE))
    text = format_bill(bill, params)
    n_train = sum(1 for e in bill.estimates if e.stage == "train")
    n_tune = sum(1 for e in bill.estimates if e.stage == "tune")
    assert n_tune and text.startswith(f"Suite tides-bench-preview: {n_train} training runs, "
                                      f"{n_tune} searches first")  # fmt: skip
    rows = [ln.split() for ln in text.splitlines()[4:] if ln and ln.split()[0] in ("small",
            "medium", "large")]  # fmt: skip
    assert sum(int(r[1]) for r in rows) == n_train and sum(int(r[2]) for r in rows) == n_tune


def test_the_mmac_cache_keeps_figures_and_misses_a_changed_model(tmp_path, monkeypatch):
    from ssmbench.mmac_table import MMacTable

    params = load_params(REPO / "params.yaml", suite="default")
    cache = tmp_path / "cache" / "mmac.json"

    def kept():  # the project's cache alone, not the package's table
        return MMacTable(cache, shipped=None)

    first = estimate(params, _default_costs(tmp_path), mmac=kept())
    assert cache.is_file()
    import ssmbench.models

    def no_build(*args, **kwargs):
        raise AssertionError("a model was built although its MMac was kept")

    monkeypatch.setattr(ssmbench.models, "build_model", no_build)
    again = estimate(params, _default_costs(tmp_path), mmac=kept())
    assert [e.seconds for e in again.estimates] == [e.seconds for e in first.estimates]
    params["models"]["MS4N"]["d_model"] = 32  # another model: counted again
    changed = estimate(params, _default_costs(tmp_path), mmac=kept()).estimates
    assert {e.job.model for e in changed if "a model was built" in (e.problem or "")} == {"MS4N"}


def test_the_resources_block_applied_leaves_no_run_over_its_runtime(tmp_path):
    """`plan --resources` prints params.yaml's resources.train.models with the runtimes the
    runs need; merged over params.yaml as `snakemake --configfile` merges it, the model
    entries params.yaml had are kept and the same plan has no run over its runtime."""
    import yaml
    from snakemake.utils import update_config

    from ssmbench.plan_resources import needed_runtimes, resources_block
    from ssmbench.resources import check_train_resources

    params = load_params(REPO / "params.yaml", suite="default")
    costs = _default_costs(tmp_path, ms4_step="50")
    bill = estimate(params, costs)
    assert {(n.model, n.size_class) for n in needed_runtimes(bill)} == {
        ("MS4N", "small"), ("MS4", "small")}  # fmt: skip
    text = resources_block(bill, params)
    assert "snakemake --profile slurm --config suite=default --configfile resources.yaml" in text
    assert "small puts 10 runs in a SLURM job" in text  # a grouped class: runtimes add up
    block = yaml.safe_load(text)
    assert set(block) == {"resources"} and set(block["resources"]) == {"train"}
    update_config(params, block)
    check_train_resources(params)
    assert params["resources"]["train"]["models"]["Quant"] == {"gpu": 0, "threads": 4}
    assert needed_runtimes(estimate(params, costs)) == []


def test_cli_plan_resources_prints_the_block_alone(tmp_path, capsys):
    import yaml

    table = _default_table(tmp_path, ms4_step="50")
    argv = ["--params", str(REPO / "params.yaml"), "--suite", "default", "plan"]
    assert main([*argv, "--table", str(table), "--resources"]) == 0
    out = capsys.readouterr().out
    runtime = yaml.safe_load(out)["resources"]["train"]["models"]["MS4N"]["sizes"]["small"]
    assert runtime["runtime"] > 30 and "Suite default" not in out


# ------------------------------------------------------------------ bad input


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


def test_a_suite_of_no_runs_is_refused(tmp_path, capsys):
    import yaml

    from ssmbench.params_file import read_params
    from ssmbench.plan import nothing_estimated

    params = load_params(REPO / "params.yaml", suite="default")
    params["suites"]["default"]["benchmarks"] = {}  # past the schema: no run at all
    bill = estimate(params, _default_costs(tmp_path))
    assert nothing_estimated(bill, params) == (
        "suite default has no runs (its grid of benchmarks x datasets x models x folds is "
        "empty): name a suite with runs (`ssmbench suites` lists them)"
    )
    raw = read_params(REPO / "params.yaml")
    raw.pop("studies", None)  # the studies merged in: one file
    raw["suites"]["default"]["models"] = []
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    assert main(["--params", str(tmp_path / "params.yaml"), "plan"]) == 2
    assert "suites.default.models: [] should be non-empty" in capsys.readouterr().err


def test_a_suite_no_run_of_which_is_calibrated_is_one_error(tmp_path, capsys):
    table = _table(tmp_path, [_row(family="nothing")])
    argv = ["--params", str(REPO / "params.yaml"), "--suite", "default", "plan"]
    assert main([*argv, "--table", str(table)]) == 2
    err = _one_error_line(capsys)
    assert err.startswith("ssmbench plan: error: suite default: none of its 12 runs can be "
                          "estimated: the calibration table has no figures for ms4, s4d on m: "
                          "measure them with `python benchmarks/calibrate.py --machine m "
                          "--models MS4,S4D --table calibration/step_seconds.csv`")  # fmt: skip


def test_a_suite_no_run_of_which_is_sized_names_the_first_reason(tmp_path):
    from ssmbench.plan import nothing_estimated

    params = load_params(REPO / "params.yaml", suite="default")
    params["paths"] = {**params["paths"], "prepared": str(tmp_path / "none")}
    params["suites"]["default"]["benchmarks"] = {"uea": ["InsectWingbeat"]}  # no size known
    text = nothing_estimated(estimate(params, _default_costs(tmp_path)), params)
    assert text.startswith("suite default: none of its 6 runs can be estimated; the first "
                           "reason: uea/InsectWingbeat: ")  # fmt: skip


def test_a_calibration_table_with_other_columns_is_one_error(tmp_path, capsys):
    table = tmp_path / "t.csv"
    table.write_text("machine,device,seconds\nm,cpu,1\n")
    argv = ["--params", str(REPO / "params.yaml"), "--suite", "default", "plan"]
    assert main([*argv, "--table", str(table)]) == 2
    err = _one_error_line(capsys)
    assert "t.csv: the calibration table lacks the column(s) threads, family" in err
    assert "regenerate it with benchmarks/calibrate.py" in err


def test_plan_with_two_different_suites_is_one_error(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--suite", "tiny", "plan", "--suite", "default"])
    assert stop.value.code == 2
    assert ("--suite is given twice, 'tiny' before the command and 'default' after it"
            in capsys.readouterr().err)  # fmt: skip
