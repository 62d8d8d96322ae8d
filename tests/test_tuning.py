"""The tune stage (ssmbench.search_space, ssmbench.train.tune): a search that never reads
the test split, writes the tuned file the train jobs read and cite, resumes after a
kill, and refuses bad searches and tuned files before any job runs."""

from __future__ import annotations

import copy
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import make_project, tool_env

from ssmbench.config import (
    TRAINING_KEYS,
    ConfigError,
    Job,
    check_params,
    job_spec,
    suite_searches,
    tuned_path,
    untuned_spec,
    validate_schema,
)
from ssmbench.data import fetch_uea, prepare_uea
from ssmbench.params_file import read_params
from ssmbench.search_space import SearchError, search_of, tuned_is_current, tuned_params
from ssmbench.train.tune import run_search

SPACE = {
    "lr": {"type": "float", "low": 1.0e-4, "high": 1.0e-2, "log": True},
    "dropout": {"type": "categorical", "choices": [0.0, 0.1]},
}


def _edit(params, n_trials=3, max_epochs=2):
    params["suites"]["tiny"] = {
        "description": "tuning tests",
        "benchmarks": {"uea": ["BasicMotions"]},
        "models": ["MS4"],
        "folds": [0, 1],
        "overrides": {"max_epochs": 2},
        "tuning": {},
    }
    params["suite"] = "tiny"
    params["tuning"]["searches"] = {
        "MS4": {
            "benchmarks": ["uea"],
            "fold": 0,
            "n_trials": n_trials,
            "n_startup_trials": 2,
            "sampler_seed": 0,
            "settings": {"max_epochs": max_epochs},
            "space": copy.deepcopy(SPACE),
        }
    }


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = make_project(tmp_path_factory.mktemp("tune") / "proj", _edit)
    fetch_uea("BasicMotions", root / "data/raw/uea", archive_dir=None, download=False)
    prepare_uea("BasicMotions", root / "data/raw/uea", root / "data/prepared/uea")
    return root


def _params(project: Path) -> dict:
    params = read_params(project / "params.yaml")
    for key in ("prepared", "tuned", "tuning", "runs", "checkpoints"):
        params["paths"][key] = str(project / params["paths"][key])
    return params


def _poisoned_copy(project: Path, dest: Path) -> Path:
    """BasicMotions with NaN in every test row of fold 0: anything that read a test row
    (a check, a batch, a score) would fail or give NaN."""
    import shutil

    from ssmbench.data.prepared_files import seal_prepared

    src = project / "data/prepared/uea/BasicMotions"
    shutil.copytree(src, dest)
    test = np.loadtxt(dest / "test_indices_fold_0.txt", dtype=np.int64)
    X = np.load(dest / "X.npy")
    X[test] = np.nan
    (dest / "X.npy").unlink()
    np.save(dest / "X.npy", X)
    seal_prepared(dest)  # prepared so: meta.json records the poisoned X
    return dest


def test_search_reads_no_test_row_and_train_cites_the_tuned_file(project, tmp_path):
    params = _params(project)
    job = Job("uea", "BasicMotions", "MS4", 0)
    search = search_of(params, "uea", "MS4")
    base = untuned_spec(params, job)
    base["prepared_dir"] = str(_poisoned_copy(project, tmp_path / "BasicMotions"))
    out = tuned_path(params, job)
    tuned = run_search(
        base, search, training_keys=TRAINING_KEYS, storage="journal",
        journal_path=tmp_path / "MS4.journal", tuned_path=out, stale_after_s=3600,
        log=lambda _: None,
    )  # fmt: skip
    assert tuned["n_complete"] == 3 and tuned["n_failed"] == 0
    values = [t["value"] for t in tuned["trials"]]
    assert all(np.isfinite(values))  # the NaN test rows never reached a score
    # monitor val_loss on the uea benchmark: the lowest validation loss wins
    assert tuned["metric"] == "val_loss" and tuned["best_value"] == min(values)
    assert set(tuned["params"]) == set(SPACE)
    assert tuned_is_current(out, search, untuned_spec(params, job))

    spec = job_spec(params, Job("uea", "BasicMotions", "MS4", 1))
    assert spec["model_params"]["dropout"] == tuned["params"]["dropout"]
    assert spec["settings"]["lr"] == tuned["params"]["lr"]
    assert spec["tuned"]["file"] == str(out) and spec["tuned"]["params"] == tuned["params"]

    # the real `ssmbench train` reads it and its record says so
    rc = subprocess.run(
        [sys.executable, "-m", "ssmbench.cli", "train", "--benchmark", "uea", "--dataset",
         "BasicMotions", "--model", "MS4", "--fold", "1"],
        cwd=project, env=tool_env(project), capture_output=True, text=True,
    )  # fmt: skip
    assert rc.returncode == 0, rc.stderr
    record = json.loads((project / "results/runs/uea/BasicMotions/MS4/fold1.json").read_text())
    assert record["tuned"]["params"] == tuned["params"]
    assert record["model_params"]["dropout"] == tuned["params"]["dropout"]
    assert record["protocol"]["lr"] == tuned["params"]["lr"]
    # ...and where each value came from: the tuned file over params.yaml's places
    tuned_file = record["tuned"]["file"]  # as the train command names it (here: relative)
    assert Path(project, tuned_file).resolve() == out.resolve()
    assert record["origins"]["settings"]["lr"] == tuned_file
    assert record["origins"]["model_params"]["dropout"] == tuned_file
    assert record["origins"]["settings"]["optimizer"] == "protocol"
    explain = subprocess.run(
        [sys.executable, "-m", "ssmbench.cli", "explain", "--benchmark", "uea", "--dataset",
         "BasicMotions", "--model", "MS4", "--fold", "1"],
        cwd=project, env=tool_env(project), capture_output=True, text=True,
    )  # fmt: skip
    assert explain.returncode == 0, explain.stderr
    lr_line = rf"^  lr +\S+ +tuned file {re.escape(tuned_file)}$"
    assert re.search(lr_line, explain.stdout, flags=re.M)
    out.unlink()


def test_train_without_its_tuned_file_is_refused(project):
    rc = subprocess.run(
        [sys.executable, "-m", "ssmbench.cli", "train", "--benchmark", "uea", "--dataset",
         "BasicMotions", "--model", "MS4", "--fold", "0"],
        cwd=project, env=tool_env(project), capture_output=True, text=True,
    )  # fmt: skip
    assert rc.returncode == 2
    assert "no tuned parameters yet; run the tune stage first" in rc.stderr


def _journal_trials(path: Path) -> list:
    import optuna
    from optuna.storages.journal import JournalFileBackend

    if not path.is_file():
        return []
    storage = optuna.storages.JournalStorage(JournalFileBackend(str(path)))
    studies = storage.get_all_studies()
    if not studies:
        return []
    return storage.get_all_trials(studies[0]._study_id, deepcopy=False)


@pytest.mark.slow
def test_search_killed_mid_trial_resumes_and_meets_its_budget(tmp_path):
    from optuna.trial import TrialState

    root = make_project(tmp_path / "proj", lambda p: _edit(p, n_trials=3, max_epochs=40))
    fetch_uea("BasicMotions", root / "data/raw/uea", archive_dir=None, download=False)
    prepare_uea("BasicMotions", root / "data/raw/uea", root / "data/prepared/uea")
    journal = root / "results/tuning/uea/BasicMotions/MS4.journal"
    command = [sys.executable, "-m", "ssmbench.cli", "tune", "--benchmark", "uea",
               "--dataset", "BasicMotions", "--model", "MS4"]  # fmt: skip
    worker = subprocess.Popen(command, cwd=root, env=tool_env(root),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 300
    # kill it while its second trial runs: one trial finished, one RUNNING
    while time.monotonic() < deadline:
        trials = _journal_trials(journal)
        states = [t.state for t in trials]
        if states.count(TrialState.COMPLETE) == 1 and TrialState.RUNNING in states:
            break
        assert worker.poll() is None, "the search ended before it could be killed"
        time.sleep(0.2)
    else:
        pytest.fail("no second trial started within 300 s")
    worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=30)
    killed = next(t for t in _journal_trials(journal) if t.state == TrialState.RUNNING)
    first = next(t for t in _journal_trials(journal) if t.state == TrialState.COMPLETE)

    resumed = subprocess.run(command, cwd=root, env=tool_env(root), capture_output=True,
                             text=True, timeout=600)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert "was left running by" in resumed.stderr
    tuned = json.loads((root / "results/tuned/uea/BasicMotions/MS4.json").read_text())
    assert tuned["n_complete"] == 3 and tuned["n_abandoned"] == 1
    by_number = {t["number"]: t for t in tuned["trials"]}
    assert by_number[first.number]["value"] == first.value  # the finished trial was kept
    assert by_number[killed.number]["state"] == "FAIL"
    retry = [t for t in tuned["trials"] if t["retry_of"] == killed.number]
    assert len(retry) == 1 and retry[0]["state"] == "COMPLETE"
    assert retry[0]["params"] == killed.params  # the killed trial's parameters, run again

    # a current tuned file is kept: a second run does no trial
    again = subprocess.run(command, cwd=root, env=tool_env(root), capture_output=True, text=True)
    assert again.returncode == 0 and "is current" in again.stderr
    assert len(_journal_trials(journal)) == len(tuned["trials"])


def _problems(edit) -> str:
    params = read_params(Path(__file__).parents[1] / "params.yaml")
    _edit(params)
    edit(params["tuning"]["searches"]["MS4"], params)
    with pytest.raises((ConfigError, Exception)) as info:
        validate_schema(params)
        check_params(params)
    return str(info.value)


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda s, p: s["space"].update(d_modle={"type": "int", "low": 8, "high": 16}),
         "'d_modle' is not a training setting"),
        (lambda s, p: s.update(space={}), "space"),
        (lambda s, p: s.update(n_trials=0), "n_trials"),
        (lambda s, p: s["space"].update(lr={"type": "float", "low": 0.0, "high": 1.0,
                                            "log": True}), "log: true needs low > 0"),
        (lambda s, p: s["space"].update(dropout={"type": "categorical", "choices": []}),
         "dropout"),
        (lambda s, p: s["settings"].update(max_epoch=3), "max_epoch"),
        (lambda s, p: s.update(benchmarks=["nope"]), "unknown benchmark 'nope'"),
        (lambda s, p: p["models"]["MS4"].update(family="ms4")
         or s["space"].update(d_state={"type": "categorical", "choices": [64, "x"]}), "d_state"),
    ],
)  # fmt: skip
def test_bad_searches_are_named_before_any_job(edit, words):
    assert words in _problems(edit)


def test_a_search_of_an_unknown_model_is_named():
    params = read_params(Path(__file__).parents[1] / "params.yaml")
    _edit(params)
    params["tuning"]["searches"]["NoSuchModel"] = params["tuning"]["searches"]["MS4"]
    with pytest.raises(ConfigError, match="tuning.searches.NoSuchModel: unknown model"):
        check_params(params)


def test_suite_overrides_shrink_the_search():
    params = read_params(Path(__file__).parents[1] / "params.yaml")
    search = search_of(params, "uea6", "TIDES", "tides-bench-preview")
    assert search["n_trials"] == 3 and search["settings"]["max_epochs"] == 3
    assert search_of(params, "uea6", "TIDES", "uea6-paper")["n_trials"] == 100
    assert search_of(params, "uea", "TIDES", "uea6-paper") is None
    # a suite without a `tuning` key runs no search: its TIDES trains as declared
    assert search_of(params, "uea6", "TIDES", "tides-data") is None
    jobs = suite_searches(params, "tides-bench-preview")
    assert [(j.benchmark, j.model) for j in jobs] == [("physiome", "TIDES-physio"),
                                                      ("uea6", "TIDES")]  # fmt: skip


def _tuned_file(tmp_path, **changes) -> Path:
    tuned = {"format": "ssmbench-tuned-1", "benchmark": "uea", "dataset": "BasicMotions",
             "model": "MS4", "params": {"lr": 1e-3, "dropout": 0.1}}  # fmt: skip
    tuned.update(changes)
    path = tmp_path / "MS4.json"
    path.write_text(json.dumps(tuned))
    return path


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"model": "MS4N"}, "was tuned for model 'MS4N', not 'MS4'"),
        ({"params": {"lr": 1e-3}}, "do not match the search space"),
        ({"params": {"lr": 1.0, "dropout": 0.1}}, "outside the search space"),
        ({"params": {"lr": 1e-3, "dropout": 0.3}}, "outside the search space"),
        ({"format": "other"}, "not a tuned-parameters file"),
    ],
)
def test_a_tuned_file_that_does_not_fit_its_run_is_refused(tmp_path, changes, words):
    with pytest.raises(SearchError, match=words):
        tuned_params(_tuned_file(tmp_path, **changes), "uea", "BasicMotions", "MS4", SPACE)


def test_ssmbench_check_names_a_tuned_file_that_does_not_fit(project, tmp_path):
    path = project / "results/tuned/uea/BasicMotions/MS4.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"format": "ssmbench-tuned-1", "benchmark": "uea",
                                "dataset": "BasicMotions", "model": "MS4N",
                                "params": {}}))  # fmt: skip
    try:
        rc = subprocess.run([sys.executable, "-m", "ssmbench.cli", "check"], cwd=project,
                            env=tool_env(project), capture_output=True, text=True)  # fmt: skip
    finally:
        path.unlink()
    assert rc.returncode == 2
    assert f"{Path('results/tuned/uea/BasicMotions/MS4.json')}: was tuned for model" in rc.stderr
    assert os.environ.get("NO_SUCH") is None


def _journal_with_trials(path: Path) -> list[bytes]:
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    path.parent.mkdir(parents=True, exist_ok=True)
    study = optuna.create_study(storage=JournalStorage(JournalFileBackend(str(path))))
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=2)
    return path.read_bytes().split(b"\n")


def test_a_journal_whose_last_entry_was_cut_short_resumes(project, tmp_path):
    """A worker killed while writing leaves the journal's last line unfinished. Optuna
    skips that line when it reads but appends its next entry right after it (the search
    then died with a JSONDecodeError from inside Optuna, and the journal was damaged for
    good): the unfinished bytes are moved aside, named in the log, and the search resumes
    from the whole entries and meets its budget."""
    params = _params(project)
    job = Job("uea", "BasicMotions", "MS4", 0)
    search = {**search_of(params, "uea", "MS4"), "n_trials": 1}
    base = untuned_spec(params, job)
    journal = tmp_path / "MS4.journal"
    kwargs = dict(training_keys=TRAINING_KEYS, storage="journal", journal_path=journal,
                  tuned_path=tmp_path / "MS4.json", stale_after_s=3600)  # fmt: skip
    run_search(base, search, log=lambda _: None, **kwargs)
    whole = journal.read_bytes()
    journal.write_bytes(whole[:-5])  # the last entry (the trial's end) cut short
    lines = []
    tuned = run_search(base, search, log=lines.append, **kwargs)
    assert tuned["n_complete"] == 1
    (aside,) = tmp_path.glob("MS4.journal.unfinished-*")
    cut = whole[:-5][whole[:-5].rfind(b"\n") + 1 :]
    assert aside.read_bytes() == cut and cut
    text = journal.read_bytes()
    assert text.startswith(whole[: len(whole) - 5 - len(cut)]) and text.endswith(b"\n")
    assert all(json.loads(line) for line in text.splitlines())
    warned = [line for line in lines if "its last entry was cut short" in line]
    n_whole = whole[:-5].count(b"\n")
    assert warned == [
        f"warning: {journal}: its last entry was cut short ({len(cut)} bytes with no line "
        f"end: a write that did not finish); moved to {aside}, and the search resumes from "
        f"the {n_whole} whole entries before it"
    ]


def test_a_damaged_journal_is_named_with_how_to_start_again(tmp_path, monkeypatch, capsys):
    """A journal line cut short in the middle of the file (Optuna raised JSONDecodeError
    from inside its reader) stops `ssmbench tune` with the file and line named; a last
    line cut short, which Optuna skips, is no error."""
    from ssmbench.cli import main
    from ssmbench.search_space import check_journal

    project = make_project(tmp_path / "proj", _edit)
    journal = project / "results/tuning/uea/BasicMotions/MS4.journal"
    lines = _journal_with_trials(journal)
    journal.write_bytes(b"\n".join(lines)[:-5])  # the last entry unfinished: resumable
    check_journal(journal)
    lines[2] = lines[2][:10]
    journal.write_bytes(b"\n".join(lines))
    monkeypatch.chdir(project)
    argv = ["tune", "--benchmark", "uea", "--dataset", "BasicMotions", "--model", "MS4"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{journal.relative_to(project)}:3: a damaged Optuna journal" in err
    assert "Move it aside to start the search again: mv " in err
