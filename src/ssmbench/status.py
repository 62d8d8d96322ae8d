"""`ssmbench status`: the state of every run of a suite, from the files alone.

Each run (one model on one fold of one dataset) of the suite's grid is in exactly one state,
decided from its record ``{runs}/{benchmark}/{dataset}/{model}/fold{k}.json`` and its log
``{logs}/train/{benchmark}/{dataset}/{model}/fold{k}.log`` (the training rule writes the
run's whole output there, and a new attempt starts it afresh):

``done``
    The record exists and is current: made with the current settings and training code
    (``ssmbench.staleness.record_state``, which the workflow and ``ssmbench train`` ask
    too).
``edited``
    The record exists but it, or a file it names, is not as it was written (changed by
    hand): its content does not match the sha256 it holds (``content_sha256``), or its
    curve or test scores file is gone or does not match the sha256 the record holds for
    it (``ssmbench.staleness.unit_problems``; a run killed between publishing its curve
    and its record leaves the same mismatch). The detail names the file and what to do:
    re-run the job with ``--force`` or restore the file. The workflow reruns it, and the
    report leaves it out. So is a record without ``content_sha256`` (made by hand, or its
    digest deleted); a file the record names without a sha256 is vouched for by its name.
``stale``
    The record exists but is not current: made with other settings (model
    hyperparameters, protocol, suite overrides) or other training code: the workflow
    reruns it. A record that cannot be read is stale too. A tuned run whose tuned file is
    gone says so (its settings fall back to params.yaml's, which is not what changed).
    (A stale or edited record whose log is newer and reports an error is ``failed``: its
    rerun failed.)
``failed``
    No current record, and the log reports an error (`last_error_line`): a Python
    traceback (the error line is the exception line that ends it, e.g.
    ``ValueError: ...``) or a ``<program>: error: ...`` line (``ssmbench train: error:``,
    the command line's message for bad input such as a corrupt dataset; ``slurmstepd:
    error: ... CANCELLED ... DUE TO TIME LIMIT``). The line nearest the end of the log is
    shown.
    A run whose dataset failed to fetch or prepare (no record, and the dataset's
    ``{logs}/fetch|prepare/{benchmark}/{dataset}.log`` reports an error newer than the
    run's own log, if any) is ``failed`` too, with that error line and log.
``incomplete``
    No record, and a log with no error in it: the run is still going, or it was stopped
    without a word (SIGKILL: out of host memory, killed past its time limit), or it was
    stopped by SIGTERM/SIGUSR1 and waits to resume from its checkpoint (its log then ends
    with that). The log's last line is shown.
``missing``
    No record and no log: never started.

A run that is not done also shows whether it has a checkpoint to resume from
(``paths.checkpoints``, `ssmbench.train.checkpoint.checkpoint_path`; only its existence is
checked).

Nothing but the records (small JSON files) and the tails of the logs is read: no dataset
file is opened, so it takes seconds on the paper's grid of thousands of runs. A log line
is shown with its control characters escaped, and a log of binary data as a note that it
is one: a terminal would obey their bytes. A file where a folder of the records should be
is an error naming it.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from ssmbench.config import Job, job_spec, source_changed, suite_grid
from ssmbench.staleness import record_state

STATES = ("done", "stale", "failed", "incomplete", "missing", "edited")
#: states the counts and the summary line name only when a run is in them: an alarm
#: that is there when it is needed
COUNTED_WHEN_PRESENT = ("edited",)

#: how much of the end of a log is read (a traceback fits many times over)
LOG_TAIL_BYTES = 64 * 1024

TRACEBACK_HEADER = "Traceback (most recent call last):"
#: "ssmbench train: error: ...", "slurmstepd: error: ...", "error: ..."
ERROR_LINE = re.compile(r"^(?:[\w.\-/ ]+: )?error: ", re.IGNORECASE)
#: what Python prints between chained exceptions (not the error itself)
CHAIN_LINES = (
    "During handling of the above exception",
    "The above exception was the direct cause",
)


@dataclass(frozen=True)
class RunStatus:
    benchmark: str
    dataset: str
    model: str
    fold: int
    state: str
    # failed: the error line; stale: why; edited: which file and what to do;
    # incomplete: the log's last line
    detail: str
    record: str
    log: str
    checkpoint: str = ""  # a not-done run's checkpoint, if there is one

    @property
    def run(self) -> str:
        return f"{self.benchmark}/{self.dataset}/{self.model}/fold{self.fold}"


def train_log_path(logs_dir: str | Path, job: Job) -> Path:
    """The training rule's log of a run (workflow/rules/train.smk)."""
    return (
        Path(logs_dir) / "train" / job.benchmark / job.dataset / job.model / f"fold{job.fold}.log"
    )


def data_log_error(logs_dir: str | Path, job: Job) -> tuple[str, Path, float] | None:
    """The newest error of the fetch and prepare logs of ``job``'s dataset (the data rules
    of workflow/rules/data.smk) as (``"prepare: <error line>"``, the log, its mtime); None
    when neither reports one."""
    found = None
    for step in ("fetch", "prepare"):
        path = Path(logs_dir) / step / job.benchmark / f"{job.dataset}.log"
        try:
            mtime = path.stat().st_mtime
            error = last_error_line(path)
        except NO_LOG:
            continue
        if error is not None and (found is None or mtime >= found[2]):
            found = (f"{step}: {error}", path, mtime)
    return found


#: what makes a log absent rather than unreadable: no such file, or a file where a folder
#: of its path should be
NO_LOG = (FileNotFoundError, NotADirectoryError)


def _tail_lines(path: Path) -> list[str]:
    with open(path, "rb") as handle:
        handle.seek(0, 2)
        size = handle.tell()
        handle.seek(max(0, size - LOG_TAIL_BYTES))
        data = handle.read()
    text = data.decode("utf-8", errors="replace")
    if _binary(data, text):
        return [f"(not text: {path} holds binary data; open it with a viewer of its kind)"]
    lines = [_printable(line) for line in text.splitlines()]
    if size > LOG_TAIL_BYTES and len(lines) > 1:
        lines = lines[1:]  # the first line of the window may be cut
    elif size > LOG_TAIL_BYTES and lines:
        lines = ["..." + lines[0]]  # one line longer than the window: its end, marked cut
    return lines


#: a log tail is binary when more than this share of its characters are not UTF-8 text
BINARY_SHARE = 0.1


def _binary(data: bytes, text: str) -> bool:
    """Whether a log's tail is binary data rather than text: a NUL byte, or more than
    BINARY_SHARE of it not UTF-8."""
    return b"\0" in data or text.count("\ufffd") > BINARY_SHARE * max(1, len(text))


#: control characters (but tab) as the escapes a terminal shows as text, not obeys
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if c != 0x09}


def _printable(line: str) -> str:
    """``line`` with its control characters escaped (``\\x1b``): a log's escape sequences
    would move, colour or retitle the terminal `ssmbench status` prints them to."""
    return line.translate(_CONTROLS)


def _unreadable(path: Path, exc: OSError) -> str:
    return (
        f"the log {path} cannot be read ({exc.strerror or exc}); remove it, and the job "
        f"writes it again when it runs"
    )


def _with_continuation(lines: list[str], i: int) -> str:
    """Line i, and when it ends with ':' the indented lines that carry on its message."""
    text = lines[i].strip()
    if text.endswith(":"):
        more = []
        for line in lines[i + 1 :]:
            if not line.strip() or not line[:1].isspace():
                break
            more.append(line.strip())
        if more:
            text = f"{text} {'; '.join(more)}"
    return text


def last_error_line(log_path: str | Path) -> str | None:
    """The error a log reports, or None if it reports none (see the module docstring).

    A Python traceback gives its exception line (the first unindented line after the last
    ``Traceback (most recent call last):``); a ``<program>: error: ...`` line gives itself.
    Whichever is nearer the end of the log wins. A message that goes on over indented
    lines after a ':' is joined into one line."""
    try:
        lines = _tail_lines(Path(log_path))
    except NO_LOG:
        raise
    except OSError as exc:  # a folder, no permission: said as the log's error
        return _unreadable(Path(log_path), exc)
    traceback_at = error_at = None
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i]
        if traceback_at is None and line.startswith(TRACEBACK_HEADER):
            traceback_at = i
        if error_at is None and ERROR_LINE.match(line):
            error_at = i
        if traceback_at is not None and error_at is not None:
            break
    exception_at = None
    if traceback_at is not None:
        for j in range(traceback_at + 1, len(lines)):
            line = lines[j]
            if line.strip() and not line[:1].isspace() and not line.startswith(CHAIN_LINES):
                exception_at = j
                break
        if exception_at is None:  # the log ends inside the traceback (still being written)
            exception_at = traceback_at
    found = [i for i in (exception_at, error_at) if i is not None]
    return _with_continuation(lines, max(found)) if found else None


def _last_line(log_path: Path) -> str:
    try:
        lines = [line for line in _tail_lines(log_path) if line.strip()]
    except NO_LOG:
        return "(no log)"
    except OSError as exc:
        return _unreadable(log_path, exc)
    return lines[-1].strip() if lines else "(empty log)"


def run_status(
    params: dict,
    job: Job,
    root: str | Path = ".",
    sources: dict | None = None,
    prepared: dict | None = None,
) -> RunStatus:
    """The state of one run (see the module docstring). ``sources``: the answers of
    `ssmbench.config.source_changed` per (benchmark, dataset), shared by the runs of a
    suite (each source is looked at once); ``prepared``: likewise for the prepared data
    (``ssmbench.staleness.record_state``)."""
    root = Path(root)
    record = job.record_path(root / params["paths"]["runs"])
    log = train_log_path(root / params["paths"]["logs"], job)

    def status(state: str, detail: str = "", shown_log: Path = log) -> RunStatus:
        checkpoint = ""
        if state != "done" and params["paths"].get("checkpoints"):
            from ssmbench.train.checkpoint import checkpoint_path

            path = checkpoint_path(root / params["paths"]["checkpoints"], job)
            checkpoint = str(path) if path.is_file() else ""
        return RunStatus(
            job.benchmark, job.dataset, job.model, job.fold, state, detail, str(record),
            str(shown_log), checkpoint,
        )  # fmt: skip

    try:
        record_mtime = record.stat().st_mtime
    except FileNotFoundError:
        record_mtime = None
    except NotADirectoryError:
        from ssmbench.os_errors import blocking_file
        from ssmbench.report.errors import RecordError

        raise RecordError(
            f"{blocking_file(record)}: a file, where a folder of the run records "
            f"(paths.runs: {params['paths']['runs']}) should be; move the file aside, and "
            "status reads the records beneath that folder"
        ) from None
    if record_mtime is not None:
        spec = job_spec(params, job)
        state = record_state(record, spec, root, prepared)
        sources = {} if sources is None else sources
        key = (job.benchmark, job.dataset)
        if key not in sources:
            sources[key] = source_changed(params, job.benchmark, job.dataset, root)
        if state.current and sources[key]:
            return status(
                "stale",
                f"its raw copy no longer stands for its source: {sources[key]}; the "
                "workflow fetches, prepares and trains it again",
            )
        if state.current:
            return status("done")
        try:
            rerun_failed = log.stat().st_mtime > record_mtime and last_error_line(log)
        except NO_LOG:
            rerun_failed = None
        if rerun_failed:
            return status("failed", rerun_failed)
        if state.edited:
            return status("edited", edited_detail(state.edited))
        tuned = spec.get("tuned") or {}
        if tuned.get("missing"):  # its settings fell back to params.yaml's: say why
            return status("stale", tuned_missing_detail(tuned["file"], job))
        return status("stale", state.why)
    data_error = data_log_error(root / params["paths"]["logs"], job)
    try:
        error = last_error_line(log)
        log_mtime = log.stat().st_mtime
    except NO_LOG:
        error, log_mtime = None, None
    if data_error is not None and (log_mtime is None or data_error[2] > log_mtime):
        return status("failed", data_error[0], data_error[1])
    if log_mtime is None:
        return status("missing")
    if error is not None:
        return status("failed", error)
    return status("incomplete", _last_line(log))


def tuned_missing_detail(tuned_file: str, job: Job) -> str:
    """What a ``stale`` run whose tuned file is gone shows: the file, not the settings
    that changed because it is gone."""
    return (
        f"its tuned file {tuned_file} is gone (the run's tuned settings come from it); "
        f"restore it, or run the search again: ssmbench tune --benchmark {job.benchmark} "
        f"--dataset {job.dataset} --model {job.model}"
    )


def edited_detail(problems: tuple[str, ...]) -> str:
    """What an ``edited`` run shows: which files are not as written, and what to do."""
    return (
        f"changed by hand: {'; '.join(problems)}; re-run the job with --force or restore the file"
    )


def suite_status(params: dict, suite: str | None = None, root: str | Path = ".") -> list[RunStatus]:
    """Every run of the suite's grid, in the grid's order. ``params`` as loaded by
    ``ssmbench.config.load_params``; paths are relative to ``root``."""
    if suite is not None and suite != params["suite"]:
        params = {**params, "suite": suite}
    sources: dict = {}
    prepared: dict = {}
    return [run_status(params, job, root, sources, prepared) for job in suite_grid(params)]


def count_states(statuses: list[RunStatus]) -> dict[str, int]:
    """Runs per state: every state, but those of COUNTED_WHEN_PRESENT only when a run is
    in them."""
    counts = Counter(s.state for s in statuses)
    return {
        state: counts.get(state, 0)
        for state in STATES
        if state not in COUNTED_WHEN_PRESENT or counts.get(state)
    }


def summary_line(suite: str, statuses: list[RunStatus]) -> str:
    counts = count_states(statuses)
    parts = ", ".join(f"{n} {state}" for state, n in counts.items())
    return f"suite {suite!r}: {len(statuses)} runs: {parts}"


COLUMNS = (
    "benchmark",
    "dataset",
    "model",
    "fold",
    "state",
    "detail",
    "record",
    "log",
    "checkpoint",
)


def format_csv(statuses: list[RunStatus]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for s in statuses:
        writer.writerow([getattr(s, c) for c in COLUMNS])
    return buffer.getvalue()


def format_json(suite: str, statuses: list[RunStatus], shown: list[RunStatus]) -> str:
    return (
        json.dumps(
            {
                "suite": suite,
                "n_runs": len(statuses),
                "counts": count_states(statuses),
                "runs": [asdict(s) for s in shown],
            },
            indent=1,
        )
        + "\n"
    )


def format_table(statuses: list[RunStatus], width: int = 160) -> str:
    from tabulate import tabulate

    def clip(text: str) -> str:
        return text if len(text) <= width else text[: width - 3] + "..."

    rows = [
        [s.state, s.run, clip(s.detail) + (" [checkpoint kept]" if s.checkpoint else "")]
        for s in statuses
    ]
    return tabulate(rows, headers=["state", "run", "detail"], disable_numparse=True)
