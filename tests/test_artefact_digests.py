"""A run's files and a tuned file carry their own digest, and every reader checks it.

Real runs of MS4 on BasicMotions (2 epochs, test scores per epoch on) through the real
`ssmbench train`:

* a record written by the real code holds the sha256 of its content, is ``done`` in
  `ssmbench status` and is read by the report;
* a record whose ``test_error`` is typed over, a curve with an extra epoch and a test
  scores file with an extra row are ``edited`` in `ssmbench status` ("changed by hand",
  the file, what to do, counted in the summary line); the report leaves the run out of
  metrics.csv and curves.csv with a log line naming the file;
* a record without its digest, one holding a NaN and one copied over another fold's path
  are not current (``edited`` in `ssmbench status`; `ssmbench train` trains the run
  again), and the report leaves the unsealed one out; the records committed under
  benchmarks/records are sealed and read by the report;
* a tuned file written by the real tune stage, with a value outside its search space
  (``d_model: 7``) or any other edit, is refused by `ssmbench train` with one error line
  naming the file, the key, the value and the space;
* a read-only runs folder is one clear error line of `ssmbench train`, naming the folder
  and what to do, with no traceback from the clean-up.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, make_project

from ssmbench.cli import main
from ssmbench.config import Job, load_params
from ssmbench.report.aggregate import collect_records, iter_record_paths
from ssmbench.report.build import build_report
from ssmbench.status import run_status, suite_status, summary_line

SUITE = "digests"
EDITED = Job("uea", "BasicMotions", "MS4", 0)
OTHER = Job("uea", "BasicMotions", "MS4", 1)
TRAIN = ["train", "--benchmark", "uea", "--dataset", "BasicMotions", "--model", "MS4"]


def _edit(params):
    params["suites"][SUITE] = {
        "description": "digest tests: one model, two folds, 2 epochs",
        "benchmarks": {"uea": ["BasicMotions"]},
        "models": ["MS4"],
        "folds": [0, 1],
        "overrides": {"max_epochs": 2, "epoch_test_scores": True},
    }
    params["suite"] = SUITE


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """The project copy with both folds trained by the real `ssmbench train`; the
    pristine runs folder is kept beside it for `runs` to restore."""
    from ssmbench.data import fetch_uea, prepare_uea

    root = make_project(tmp_path_factory.mktemp("digests") / "proj", _edit)
    fetch_uea("BasicMotions", root / "data/raw/uea", archive_dir=None, download=False)
    prepare_uea("BasicMotions", root / "data/raw/uea", root / "data/prepared/uea")
    cwd = os.getcwd()
    os.chdir(root)
    try:
        for fold in (0, 1):
            assert main([*TRAIN, "--fold", str(fold)]) == 0
    finally:
        os.chdir(cwd)
    shutil.copytree(root / "results/runs", root.parent / "pristine-runs")
    return root


@pytest.fixture
def runs(project) -> Path:
    """The runs folder as `ssmbench train` wrote it (each test edits its own copy)."""
    shutil.rmtree(project / "results/runs", ignore_errors=True)
    shutil.copytree(project.parent / "pristine-runs", project / "results/runs")
    return project / "results/runs"


def _params(project: Path) -> dict:
    return load_params(project / "params.yaml", suite=SUITE)


def _report(project: Path, out: Path, caplog) -> tuple[pd.DataFrame, pd.DataFrame]:
    """metrics.csv (and the curves) of a report of the project's runs, the log kept in
    caplog."""
    with caplog.at_level(logging.WARNING, logger="ssmbench.report"):
        written = build_report(
            project / "results/runs", out / "results", out / "figures", {}, benchmarks=["uea"]
        )
    return pd.read_csv(written["metrics_csv"]), pd.read_csv(written["curves_csv"])


def _edited_status(project: Path, capsys) -> str:
    """`ssmbench status` of the project's suite, as printed."""
    cwd = os.getcwd()
    os.chdir(project)
    try:
        assert main(["status"]) == 0
    finally:
        os.chdir(cwd)
    return capsys.readouterr().out


# --------------------------------------------------------------------------- records
def test_a_record_written_by_the_real_code_round_trips_as_done(project, runs, caplog, tmp_path):
    record = json.loads(EDITED.record_path(runs).read_text())
    assert len(record["content_sha256"]) == 64
    params = _params(project)
    assert [s.state for s in suite_status(params, root=project)] == ["done", "done"]
    assert summary_line(SUITE, suite_status(params, root=project)) == (
        f"suite {SUITE!r}: 2 runs: 2 done, 0 stale, 0 failed, 0 incomplete, 0 missing"
    )
    metrics, curves = _report(project, tmp_path, caplog)
    assert sorted(metrics["fold"]) == [0, 1] and "content_sha256" not in metrics.columns
    assert sorted(set(curves["fold"])) == [0, 1]
    assert "left out" not in caplog.text


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        ("record", "fold0.json: its content does not match its content_sha256"),
        ("curve", "its curve file fold0.curve.csv is not the one written with it"),
        ("test_scores", "its test scores file fold0.test_scores.csv is not the one written"),
    ],
)
def test_an_edited_file_is_changed_by_hand_and_left_out(
    project, runs, caplog, tmp_path, capsys, edit, named
):
    path = EDITED.record_path(runs)
    if edit == "record":  # test_error typed over, the file otherwise as written
        record = json.loads(path.read_text())
        record["test_error"] = 0.0
        path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    else:  # one epoch more than the run had
        companion = path.with_name(f"fold0.{edit}.csv")
        with open(companion) as handle:
            last = list(csv.reader(handle))[-1]
        last[0] = str(int(last[0]) + 1)
        companion.write_text(companion.read_text() + ",".join(last) + "\n")

    status = run_status(_params(project), EDITED, project)
    assert status.state == "edited", status
    assert status.detail.startswith(f"changed by hand: {named}"), status.detail
    assert status.detail.endswith("; re-run the job with --force or restore the file")
    assert run_status(_params(project), OTHER, project).state == "done"
    printed = _edited_status(project, capsys)
    row = [line for line in printed.splitlines() if "MS4/fold0" in line]
    assert row and row[0].startswith("edited ") and status.detail in row[0], printed
    assert printed.rstrip().endswith(
        "2 runs: 1 done, 0 stale, 0 failed, 0 incomplete, 0 missing, 1 edited"
    ), printed

    metrics, curves = _report(project, tmp_path, caplog)
    if edit == "test_scores":  # a diagnostic: only the selection-optimism table reads it
        assert sorted(metrics["fold"]) == [0, 1]
        assert "are not the ones written with it (sha256): left out" in caplog.text
        return
    assert list(metrics["fold"]) == [1]  # the edited run is in no table
    assert set(curves["fold"]) == {1}
    lines = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
    assert any(str(path) in line and "changed by hand" in line for line in lines), lines
    # the curve's line too, in the report's log (not a bare Python warning)
    assert any(line.startswith("curve ") and "fold0.curve.csv left out" in line
               for line in lines), lines  # fmt: skip


def _rewrite(path: Path, edit) -> None:
    record = json.loads(path.read_text())
    edit(record)
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")


def _train_again(project: Path, capsys) -> str:
    """`ssmbench train` of EDITED (no --force), as printed."""
    cwd = os.getcwd()
    os.chdir(project)
    try:
        assert main([*TRAIN, "--fold", "0", "--suite", SUITE]) == 0
    finally:
        os.chdir(cwd)
    printed = capsys.readouterr()
    return printed.out + printed.err


def test_a_record_without_its_digest_is_refused(project, runs, caplog, tmp_path):
    """Deleting content_sha256 must not turn the check off: an unsealed record with its
    test_error typed over is not current, and the report leaves it out of every table."""
    path = EDITED.record_path(runs)

    def unseal(record):
        del record["content_sha256"]
        record["test_error"] = 0.5

    _rewrite(path, unseal)
    status = run_status(_params(project), EDITED, project)
    assert status.state == "edited", status
    assert status.detail.startswith(
        "changed by hand: fold0.json: it is not sealed (no content_sha256)"
    ), status.detail
    metrics, curves = _report(project, tmp_path, caplog)
    assert list(metrics["fold"]) == [1] and set(curves["fold"]) == {1}
    assert "fold0.json: it is not sealed (no content_sha256)" in caplog.text


def test_a_record_with_a_non_finite_metric_is_refused(project, runs):
    """A NaN test_loss (JSON's NaN, which no writer of a record writes) is not current,
    even with a digest computed over it."""
    from ssmbench.staleness import sealed

    path = EDITED.record_path(runs)
    record = json.loads(path.read_text())
    record["test_loss"] = float("nan")
    path.write_text(json.dumps(sealed(record), indent=2, sort_keys=True) + "\n")
    status = run_status(_params(project), EDITED, project)
    assert status.state == "edited", status
    assert "fold0.json: it holds non-finite values (test_loss = nan)" in status.detail


def test_another_folds_record_copied_over_is_not_current(project, runs, capsys):
    """Fold 1's record (with its curve and test scores) copied over fold 0's paths is the
    record of another run: not done for status, and `ssmbench train` trains fold 0."""
    for suffix in (".json", ".curve.csv", ".test_scores.csv"):
        source = runs / f"uea/BasicMotions/MS4/fold1{suffix}"
        shutil.copyfile(source, source.with_name(f"fold0{suffix}"))
    status = run_status(_params(project), EDITED, project)
    assert status.state == "edited", status
    assert "it is the record of another run (fold 1, not 0)" in status.detail
    printed = _train_again(project, capsys)
    assert "is current: kept" not in printed, printed
    assert json.loads(EDITED.record_path(runs).read_text())["fold"] == 0
    assert run_status(_params(project), EDITED, project).state == "done"


def test_the_committed_records_are_still_read():
    committed = REPO / "benchmarks/records"
    for folder in sorted(p for p in committed.iterdir() if p.is_dir()):
        paths = iter_record_paths(folder)
        assert len(collect_records(folder)) == len(paths) > 0, folder


# ------------------------------------------------------------------------ tuned files
SPACE = {"d_model": {"type": "int", "low": 8, "high": 16, "step": 8}}


def _tuned_edit(params):
    params["suites"]["tuned"] = {
        "description": "digest tests: a tuned model",
        "benchmarks": {"uea": ["BasicMotions"]},
        "models": ["MS4"],
        "folds": [0],
        "overrides": {"max_epochs": 1},
        "tuning": {},
    }
    params["suite"] = "tuned"
    params["tuning"]["searches"] = {
        "MS4": {
            "benchmarks": ["uea"], "fold": 0, "n_trials": 1, "n_startup_trials": 1,
            "sampler_seed": 0, "settings": {"max_epochs": 1}, "space": SPACE,
        }
    }  # fmt: skip


@pytest.fixture(scope="module")
def tuned_project(project, tmp_path_factory) -> Path:
    """A project whose MS4 is tuned on BasicMotions, its tuned file written by the real
    `ssmbench tune`; the file as written is kept beside it."""
    root = make_project(tmp_path_factory.mktemp("tuned") / "proj", _tuned_edit)
    shutil.copytree(project / "data", root / "data")
    cwd = os.getcwd()
    os.chdir(root)
    try:
        args = ["tune", "--benchmark", "uea", "--dataset", "BasicMotions", "--model", "MS4"]
        assert main(args) == 0
    finally:
        os.chdir(cwd)
    tuned = root / "results/tuned/uea/BasicMotions/MS4.json"
    shutil.copy2(tuned, root.parent / "MS4.tuned.json")
    return root


def _train_with_tuned(root: Path, capsys, **changes) -> tuple[int, str, Path]:
    """`ssmbench train` of fold 0 after ``changes`` ({part: {key: value}}) to the tuned
    file as written; (exit status, stderr, the file)."""
    tuned = root / "results/tuned/uea/BasicMotions/MS4.json"
    content = json.loads((root.parent / "MS4.tuned.json").read_text())
    for part, values in changes.items():
        content[part].update(values)
    tuned.write_text(json.dumps(content, indent=2, sort_keys=True) + "\n")
    cwd = os.getcwd()
    os.chdir(root)
    capsys.readouterr()
    try:
        rc = main([*TRAIN, "--fold", "0"])
    finally:
        os.chdir(cwd)
    return rc, capsys.readouterr().err, tuned.relative_to(root)


def test_a_tuned_value_outside_its_space_is_refused(tuned_project, capsys):
    written = json.loads((tuned_project.parent / "MS4.tuned.json").read_text())
    assert len(written["content_sha256"]) == 64 and written["params"]["d_model"] in (8, 16)
    rc, err, tuned = _train_with_tuned(tuned_project, capsys, model_params={"d_model": 7})
    assert rc == 2, err
    line = err.strip().splitlines()[-1]
    assert line.startswith(
        f"ssmbench train: error: {tuned}: model_params.d_model = 7 is outside the search "
        f"space of d_model, {SPACE['d_model']}"
    ), line
    assert "ssmbench tune --benchmark uea --dataset BasicMotions --model MS4" in line
    assert "Traceback" not in err
    assert not EDITED.record_path(tuned_project / "results/runs").exists()


def test_a_tuned_value_off_its_step_is_refused(tuned_project, capsys):
    rc, err, tuned = _train_with_tuned(tuned_project, capsys, params={"d_model": 12},
                                       model_params={"d_model": 12})  # fmt: skip
    assert rc == 2, err
    assert f"{tuned}: params.d_model = 12 is outside the search space of d_model" in err


def test_a_tuned_file_changed_by_hand_within_its_space_is_refused(tuned_project, capsys):
    other = 16 if json.loads((tuned_project.parent / "MS4.tuned.json").read_text())[
        "params"]["d_model"] == 8 else 8  # fmt: skip
    rc, err, tuned = _train_with_tuned(tuned_project, capsys, params={"d_model": other},
                                       model_params={"d_model": other})  # fmt: skip
    assert rc == 2, err
    assert (
        f"ssmbench train: error: {tuned}: changed by hand: its content does not match its "
        "content_sha256" in err
    ), err
    # and the tune stage does not keep it: it writes the file again from its study
    cwd = os.getcwd()
    os.chdir(tuned_project)
    try:
        args = ["tune", "--benchmark", "uea", "--dataset", "BasicMotions", "--model", "MS4"]
        assert main(args) == 0
    finally:
        os.chdir(cwd)
    rewritten = json.loads((tuned_project / tuned).read_text())
    assert (
        rewritten["params"]
        == json.loads((tuned_project.parent / "MS4.tuned.json").read_text())["params"]
    )


# ------------------------------------------------------------- a read-only runs folder
def test_a_read_only_runs_folder_is_one_clear_error(project, runs, capsys):
    if os.geteuid() != 0:
        pytest.skip("mounting a read-only tmpfs needs root")
    folder = EDITED.record_path(runs).parent
    shutil.rmtree(folder)
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=16k", "tmpfs", str(folder)],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    cwd = os.getcwd()
    os.chdir(project)
    try:
        capsys.readouterr()
        rc = main([*TRAIN, "--fold", "0", "--force"])
    finally:
        os.chdir(cwd)
        subprocess.run(["umount", str(folder)], check=True)
    err = capsys.readouterr().err
    assert rc == 1, err
    line = err.strip().splitlines()[-1]
    relative = folder.relative_to(project)
    assert line.startswith("ssmbench train: error: could not write "), line
    assert "Read-only file system (EROFS); no record or curve was published" in line, line
    assert f"the folder {relative} takes no writes: make it writable" in line, line
    assert "Traceback" not in err
