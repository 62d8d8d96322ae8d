"""The tune stage: an Optuna study of one (benchmark, dataset, model) that maximises (or
minimises) the validation metric of training runs on one fold, and the tuned-parameters
file its best trial gives (``ssmbench.search_space`` says what params.yaml declares).

* **Honest by construction**: a trial is `ssmbench.train.protocol.validate_job`, which
  never reads the fold's test rows (not even to check them) and returns the best epoch's
  validation score. The TIDES reference's UEA scripts re-ranked their final
  configurations by test accuracy (uea/run_top_configs.py:101-104); nothing here can.
* **Sampler**: multivariate TPE (``optuna.samplers.TPESampler``), as the TIDES
  hypersearch scripts (physiome_ode/hypersearch_physio.py:634-637); seeded with
  ``sampler_seed`` + the number of trials already in the study, so a resumed or second
  worker does not replay the first one's draws.
* **Storage**: Optuna's journal file (``JournalFileBackend``, a lock file beside it, safe
  on a shared file system: several workers, e.g. several SLURM jobs running `ssmbench
  tune` on the same (benchmark, dataset, model), share one study), or an RDB URL
  (``tuning.storage: postgresql://...``). The study's name carries a digest of the search
  (space, settings, fold, base run), so a changed search starts a new study instead of
  mixing trials of two searches.
* **Resumable**: a worker killed mid-trial leaves that trial RUNNING. Each trial keeps
  its worker (host, pid) and a heartbeat (after every validated epoch) in its user
  attributes; a RUNNING trial whose worker is gone (same host, no such process) or whose
  heartbeat is older than ``tuning.stale_after_s`` is failed and its parameters queued
  again, so the budget is met with finished trials. A SIGTERM (SLURM's time limit or
  preemption) fails the trial in progress the same way and exits with the resume status.
  A journal whose last entry was cut short (a worker killed while writing it) has that
  unfinished line moved to ``<journal>.unfinished-<time>`` before the study opens, under
  Optuna's own journal lock: Optuna skips such a line when it reads, but appends the next
  entry right after it, which would glue the two into one damaged line mid-file.
* **Budget**: ``n_trials`` finished trials (complete, or failed by a diverged loss), over
  every worker; a worker that finds the budget taken by trials still running elsewhere
  waits for them, and the last to finish writes the tuned file (atomically).
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from ssmbench.io import atomic_write, atomic_write_json
from ssmbench.search_space import DIRECTIONS, TUNED_FORMAT, search_digest, split_params, suggest
from ssmbench.staleness import sealed
from ssmbench.train.checks import DivergedError
from ssmbench.train.protocol import validate_job
from ssmbench.train.stop import StopRequest, TrainingInterrupted

#: seconds between looks at a study whose remaining trials run in other workers
POLL_SECONDS = 10.0
#: user attributes a trial carries (see the module docstring)
WORKER, HEARTBEAT, RETRY_OF, ABANDONED = "worker", "heartbeat", "retry_of", "abandoned"


def study_name(base_spec: dict, digest: str) -> str:
    return f"{base_spec['benchmark']}.{base_spec['dataset']}.{base_spec['model']}.{digest}"


def mend_unfinished_entry(journal_path: Path, log: Callable[[str], None]) -> Path | None:
    """Move the unfinished last line of an Optuna journal (bytes after its last line end:
    a write cut short) to ``<journal>.unfinished-<UTC time>``, under the lock Optuna's
    ``JournalFileBackend`` takes to append, so no live worker is writing; return where it
    went, or None when the journal ends with a whole line (or does not exist)."""
    from optuna.storages.journal import JournalFileSymlinkLock
    from optuna.storages.journal._file import get_lock_file

    journal_path = Path(journal_path)
    if not journal_path.is_file() or journal_path.stat().st_size == 0:
        return None
    with get_lock_file(JournalFileSymlinkLock(str(journal_path))):
        with open(journal_path, "r+b") as f:
            data = f.read()
            if data.endswith(b"\n"):
                return None
            keep = data.rfind(b"\n") + 1  # 0 when not one line is whole
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
            aside = journal_path.with_name(f"{journal_path.name}.unfinished-{stamp}")
            atomic_write(aside, lambda tmp: tmp.write_bytes(data[keep:]))
            f.truncate(keep)
            f.flush()
            os.fsync(f.fileno())
    whole = data[:keep].count(b"\n")
    log(f"warning: {journal_path}: its last entry was cut short ({len(data) - keep} bytes "
        f"with no line end: a write that did not finish); moved to {aside}, and the search "
        f"resumes from the {whole} whole entries before it")  # fmt: skip
    return aside


def open_storage(storage: str, journal_path: Path):
    """``journal``: the journal file at ``journal_path``; else an RDB URL for Optuna."""
    import optuna
    from optuna.storages.journal import JournalFileBackend

    if storage == "journal":
        journal_path.parent.mkdir(parents=True, exist_ok=True)
        return optuna.storages.JournalStorage(JournalFileBackend(str(journal_path)))
    return optuna.storages.RDBStorage(storage)


def trial_spec(base_spec: dict, search: dict, values: dict, training_keys) -> dict:
    """The run a trial trains: the base run, the search's settings, then the trial's values
    (model hyperparameters into the model entry, training settings into the settings)."""
    model, training = split_params(search["space"], values, training_keys)
    return {
        **base_spec,
        "model_params": {**base_spec["model_params"], **model},
        "settings": {**base_spec["settings"], **(search.get("settings") or {}), **training},
    }


def _worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _gone(worker: str | None) -> bool:
    """Whether a trial's worker (``host:pid``) is known to be dead: only a process on this
    host can be checked."""
    host, _, pid = (worker or "").rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return int(pid) == os.getpid()  # our own pid on a RUNNING trial: a previous life


def _abandon(study, trial, why: str, log) -> None:
    """Fail a RUNNING trial whose worker is gone and queue its parameters again."""
    from optuna.trial import TrialState

    storage = study._storage
    storage.set_trial_user_attr(trial._trial_id, ABANDONED, why)
    storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
    study.enqueue_trial(trial.params, user_attrs={RETRY_OF: trial.number},
                        skip_if_exists=False)  # fmt: skip
    log(f"trial {trial.number} {why}: failed, its parameters queued again")


def _reap(study, stale_after_s: float, log) -> None:
    from optuna.trial import TrialState

    now = time.time()
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        worker = trial.user_attrs.get(WORKER)
        beat = trial.user_attrs.get(HEARTBEAT)
        if worker is None:  # taken by a worker that has not marked it yet, or died first
            started = trial.datetime_start.timestamp() if trial.datetime_start else now
            if now - started > stale_after_s:
                _abandon(study, trial, "was never marked by the worker that took it", log)
            continue
        if _gone(worker):
            _abandon(study, trial, f"was left running by {worker}, which is gone", log)
        elif beat is not None and now - float(beat) > stale_after_s:
            _abandon(study, trial, f"has not been heard of for {now - float(beat):.0f} s "
                     f"(tuning.stale_after_s {stale_after_s:g})", log)  # fmt: skip


def _counts(study) -> tuple[int, int]:
    """(finished trials that count towards the budget, trials running now)."""
    from optuna.trial import TrialState

    done = running = 0
    for trial in study.get_trials(deepcopy=False):
        if trial.state == TrialState.RUNNING:
            running += 1
        elif trial.state in (TrialState.COMPLETE, TrialState.PRUNED):
            done += 1
        elif trial.state == TrialState.FAIL and ABANDONED not in trial.user_attrs:
            done += 1  # a diverged trial is a result of its parameters
    return done, running


def run_search(
    base_spec: dict,
    search: dict,
    *,
    training_keys,
    storage: str,
    journal_path: Path,
    tuned_path: Path,
    stale_after_s: float,
    threads: int = 1,
    log: Callable[[str], None] = print,
    stop: StopRequest | None = None,
    poll_seconds: float = POLL_SECONDS,
) -> dict:
    """Run the search of ``base_spec``'s (benchmark, dataset, model) until its budget is
    met (continuing the study the storage holds), then write the tuned file at
    ``tuned_path``; return what it holds."""
    import optuna
    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    monitor = base_spec["settings"]["monitor"]
    monitor = (search.get("settings") or {}).get("monitor", monitor)
    direction = DIRECTIONS[monitor]
    digest = search_digest(search, base_spec)
    name = study_name(base_spec, digest)
    if storage == "journal":
        mend_unfinished_entry(journal_path, log)
    study = optuna.create_study(
        study_name=name, storage=open_storage(storage, journal_path), direction=direction,
        load_if_exists=True,
    )  # fmt: skip
    wall_start = time.perf_counter()
    n_trials = int(search["n_trials"])
    log(f"study {name} ({storage if storage != 'journal' else journal_path}): {monitor} "
        f"({direction}), budget {n_trials} trials on fold {base_spec['fold']}")  # fmt: skip
    stop_request = stop if stop is not None else StopRequest(log)

    def objective(trial) -> float:
        trial.set_user_attr(WORKER, _worker_id())
        trial.set_user_attr(HEARTBEAT, time.time())
        values = suggest(trial, search["space"])
        spec = trial_spec(base_spec, search, values, training_keys)
        log(f"trial {trial.number}: {json.dumps(values, sort_keys=True)}")

        def beat(epoch, val_loss, val_acc):
            trial.set_user_attr(HEARTBEAT, time.time())

        try:
            result = validate_job(spec, threads=threads, log=log, stop=stop_request,
                                  on_validated=beat)  # fmt: skip
        except TrainingInterrupted:
            trial.set_user_attr(ABANDONED, "stopped by a signal")
            raise
        value = result["val_accuracy"] if monitor == "val_accuracy" else result["val_loss"]
        for key, v in result.items():
            trial.set_user_attr(key, v)
        log(f"trial {trial.number}: {monitor} {value:.6g} (best epoch {result['best_epoch']})")
        return float(value)

    with stop_request if stop is None else _Nothing():
        while True:
            _reap(study, stale_after_s, log)
            done, running = _counts(study)
            if done >= n_trials and not running:
                break
            if done + running >= n_trials:
                log(f"{done} of {n_trials} trials done, {running} running in other workers: "
                    f"waiting {poll_seconds:g} s")  # fmt: skip
                time.sleep(poll_seconds)
                continue
            study.sampler = optuna.samplers.TPESampler(
                seed=int(search.get("sampler_seed", 0)) + len(study.get_trials(deepcopy=False)),
                multivariate=True, n_startup_trials=int(search["n_startup_trials"]),
                # shared workers: a running trial's point counts as taken (uea/hypersearch.py)
                constant_liar=True,
            )  # fmt: skip
            try:
                study.optimize(objective, n_trials=1, catch=(DivergedError,))
            except TrainingInterrupted:
                interrupted = [t for t in study.get_trials(deepcopy=False)
                               if t.user_attrs.get(ABANDONED) == "stopped by a signal"
                               and t.user_attrs.get(WORKER) == _worker_id()]  # fmt: skip
                for t in interrupted:
                    study.enqueue_trial(t.params, user_attrs={RETRY_OF: t.number})
                raise

    trials = study.get_trials(deepcopy=False)
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    if not complete:
        raise RuntimeError(
            f"study {name}: none of its {len(trials)} trials finished (all diverged or "
            f"failed); widen or move the search space in params.yaml tuning.searches"
        )
    best = study.best_trial
    model_params, training = split_params(search["space"], best.params, training_keys)
    tuned = {
        "format": TUNED_FORMAT,
        "benchmark": base_spec["benchmark"],
        "dataset": base_spec["dataset"],
        "model": base_spec["model"],
        "params": dict(best.params),
        "model_params": model_params,
        "training_settings": training,
        "metric": monitor,
        "direction": direction,
        "best_value": float(best.value),
        "best_trial": best.number,
        "best_epoch": best.user_attrs.get("best_epoch"),
        "search": search,
        "search_digest": digest,
        "study": name,
        "storage": "journal" if storage == "journal" else "rdb",
        "journal": str(journal_path) if storage == "journal" else None,
        "fold": base_spec["fold"],
        "n_trials": n_trials,
        "n_complete": len(complete),
        "n_failed": sum(
            t.state == TrialState.FAIL and ABANDONED not in t.user_attrs for t in trials
        ),  # fmt: skip
        "n_abandoned": sum(ABANDONED in t.user_attrs for t in trials),
        "trial_seconds": round(
            sum(
                (t.datetime_complete - t.datetime_start).total_seconds()
                for t in trials
                if t.datetime_complete and t.datetime_start
            ),
            3,
        ),  # fmt: skip
        "this_worker_seconds": round(time.perf_counter() - wall_start, 3),
        "trials": [
            {
                "number": t.number,
                "state": t.state.name,
                "value": t.value,
                "params": t.params,
                "best_epoch": t.user_attrs.get("best_epoch"),
                "retry_of": t.user_attrs.get(RETRY_OF),
                "abandoned": t.user_attrs.get(ABANDONED),
            }
            for t in trials
        ],  # fmt: skip
        "test_split": "not read: trials score the validation rows only",
        "code_digest": base_spec.get("code"),
        "written": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    tuned = sealed(tuned)  # with the sha256 of its content: an edit is seen by its readers
    atomic_write_json(tuned_path, tuned)
    log(f"wrote {tuned_path}: best trial {best.number} {monitor} {best.value:.6g} "
        f"{json.dumps(best.params, sort_keys=True)}")  # fmt: skip
    return tuned


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
