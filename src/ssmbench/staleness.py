"""Whether a run's record is current: made with the settings and the training code that
params.yaml and the source tree give its run.

One function decides it, `record_state`; the workflow (through each run's settings
marker, `sync_settings_marker`), `ssmbench train` (which keeps a current record instead of
training again) and `ssmbench status` all call it. A record keeps what it was made with
(``model_params``, ``protocol``, ``code_digest``), so the answer needs nothing but the
record: it holds in a fresh clone whose records came from `dvc pull`.

A record and its curve are one unit: the record names its curve (``curve_file``) and
holds the sha256 of its bytes (``curve_sha256``); `curve_problem` says when the curve
beside a record is not that one (a new curve published beside an old record by a write
that failed half-way, an edited or missing curve), and every reader trusts a curve only
when it has none. The record also holds the sha256 of its own content
(``content_sha256``, `content_sha256`), so a record edited after it was written (a
``test_error`` typed over) is seen too; `unit_problems` gathers what of the unit is not as
written, which ``ssmbench status`` reports as ``edited`` and the report leaves out. A
record without ``content_sha256`` (made by hand, or its digest deleted) is not as written
either.

The training code a record was made with is its ``code_digest``
(``ssmbench.code_digest``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# the digest a record's code_digest is held to, as ssmbench.config reads it from here
from ssmbench.code_digest import training_code_digest  # noqa: F401
from ssmbench.io import atomic_write_text, non_finite_fields
from ssmbench.provenance_file import with_provenance
from ssmbench.setting_defaults import setting_defaults

#: protocol keys that say how a run executes (checkpointing), not what it computes: they
#: never make a record stale and are left out of the settings the workflow tracks
EXECUTION_KEYS = ("checkpoint_every", "checkpoint_min_seconds")


@functools.cache
def location_keys() -> tuple[str, ...]:
    """The data settings that say where a dataset's files are read from (a local copy of
    the archive), not what they are: every source's ``location_keys``
    (``ssmbench.data.source_settings``), in the source table's order. A record holds the
    sha256 of the data it was made from (``dataset_sha256``, ``prepared_sha256``), so a
    copy that moves, or the same files read from another folder, makes no record stale:
    they are left out of the settings a record is held to, as the EXECUTION_KEYS are; the
    record still says where its data came from. Read when first asked for (the sources'
    settings files): a command that runs on the standard library alone imports this
    module."""
    from ssmbench.data.source_registry import SOURCES

    return tuple(
        dict.fromkeys(key for source in SOURCES.values() for key in source.settings.location_keys)
    )


def untracked_keys() -> tuple[str, ...]:
    """The settings no result depends on: the EXECUTION_KEYS and the `location_keys`."""
    return EXECUTION_KEYS + location_keys()


def tracked_settings(spec: dict) -> dict:
    """The spec as far as the result depends on it: without the `untracked_keys` (how a run
    checkpoints, where its data lie), and without where each value came from
    (``origins``: moving a value from one place of params.yaml to another changes no
    result)."""
    untracked = untracked_keys()
    settings = {k: v for k, v in spec["settings"].items() if k not in untracked}
    return {**{k: v for k, v in spec.items() if k != "origins"}, "settings": settings}


# --- the state of a record -------------------------------------------------------------


@dataclass(frozen=True)
class RecordState:
    """Whether a record is current; if not, why (one phrase per reason). ``edited``: the
    reasons that say a file of the run is not as it was written (`unit_problems`), also
    in ``reasons``."""

    current: bool
    reasons: tuple[str, ...] = ()
    edited: tuple[str, ...] = ()

    @property
    def why(self) -> str:
        return "; ".join(self.reasons)


#: the record keys that tie it to its curve: the curve's file name and its sha256
CURVE_FILE_KEY = "curve_file"
CURVE_SHA256_KEY = "curve_sha256"
#: the record keys that tie it to its test split's per-epoch scores (protocol
#: epoch_test_scores, ssmbench.train.epoch_test_scores)
SCORES_FILE_KEY = "test_scores_file"
SCORES_SHA256_KEY = "test_scores_sha256"


#: the key of a record (and of a tuned file) that holds the sha256 of its own content
CONTENT_SHA256_KEY = "content_sha256"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _plain(value):
    # what a JSON writer gives for a value a record may hold (numpy scalars, paths)
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


def content_sha256(content: dict) -> str:
    """The sha256 of ``content`` without its CONTENT_SHA256_KEY, as canonical JSON (keys
    sorted, no spaces, ASCII): the same for the dict a writer holds and for the one read
    back from the file it wrote, however the file is indented."""
    body = {k: v for k, v in content.items() if k != CONTENT_SHA256_KEY}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=_plain)
    return sha256_hex(text.encode("ascii"))


def sealed(content: dict) -> dict:
    """``content`` as JSON will hold it, with its CONTENT_SHA256_KEY (`content_sha256`):
    what a writer of a record or a tuned file writes."""
    plain = json.loads(json.dumps(content, default=_plain))
    return {**plain, CONTENT_SHA256_KEY: content_sha256(plain)}


def content_problem(content: dict) -> str | None:
    """Why ``content`` (a record or a tuned file, as read) is not what was written with
    its CONTENT_SHA256_KEY, or holds none (unsealed: made by hand, or its digest deleted);
    None when it is as written. The digest guards against accidents (a value typed over, a
    file half-written or mixed with another), not against someone who recomputes it."""
    expected = content.get(CONTENT_SHA256_KEY)
    if expected is None:
        return f"it is not sealed (no {CONTENT_SHA256_KEY})"
    if content_sha256(content) != expected:
        return f"its content does not match its {CONTENT_SHA256_KEY}"
    return None


#: the record keys that name its run; a record is current only for the run they name
IDENTITY_KEYS = ("benchmark", "dataset", "model", "fold")


def record_problems(record: dict, spec: dict, non_finite: bool = True) -> list[str]:
    """What makes a record, as read, unfit to stand for the run ``spec`` asks for, beyond
    its content digest (`content_problem`): a NaN or inf anywhere (every writer refuses
    one; ``non_finite=False``: the caller's parser saw none, `read_record_json`), or it
    names another run than ``spec`` (a record copied over another run's path). Empty when
    none."""
    problems = []
    bad = non_finite_fields(record) if non_finite else []
    if bad:
        problems.append(f"it holds non-finite values ({', '.join(bad[:3])})")
    other = [
        f"{key} {record.get(key)!r}, not {spec[key]!r}"
        for key in IDENTITY_KEYS
        if key in spec and record.get(key) != spec[key]
    ]
    if other:
        problems.append(f"it is the record of another run ({', '.join(other)})")
    return problems


def read_record_json(text: str) -> tuple[object, bool]:
    """The JSON ``text`` of a record, read, and whether it holds a ``NaN``, ``Infinity`` or
    ``-Infinity`` (seen by the parser: no walk over the record when it holds none)."""
    seen = []

    def constant(name: str) -> float:
        seen.append(name)
        return float(name)

    return json.loads(text, parse_constant=constant), bool(seen)


def _companion_problem(record_path, record: dict, file_key: str, sha_key: str, what: str):
    name = record.get(file_key)
    if name is None:
        return f"it names no {what} file"
    if not isinstance(name, str) or not name or Path(name).name != name or name[0] == ".":
        return f"its {file_key} {name!r} is not a file name beside it"
    path = Path(record_path).parent / name
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return f"its {what} file {name} is missing"
    except OSError as exc:
        return f"its {what} file {name} is unreadable ({exc.strerror or exc})"
    expected = record.get(sha_key)
    if expected is not None and sha256_hex(data) != expected:
        return f"its {what} file {name} is not the one written with it"
    return None


def curve_problem(record_path: str | Path, record: dict) -> str | None:
    """Why the curve beside the record at ``record_path`` (``record``, its content) is not
    the one written with it; None when it is. The curve is the file the record names
    (``curve_file``: a plain file name beside the record) with the sha256 it holds
    (``curve_sha256``). A record that holds no sha256 vouches for its curve by name
    alone."""
    return _companion_problem(record_path, record, CURVE_FILE_KEY, CURVE_SHA256_KEY, "curve")


def scores_problem(record_path: str | Path, record: dict) -> str | None:
    """As `curve_problem`, for the test scores per epoch a record names
    (``test_scores_file``, ``test_scores_sha256``)."""
    return _companion_problem(
        record_path, record, SCORES_FILE_KEY, SCORES_SHA256_KEY, "test scores"
    )


def unit_problems(record_path: str | Path, record: dict, scores: bool = True) -> list[str]:
    """What of a run's published unit is not as it was written: the record's content
    (`content_problem`), the curve it names (`curve_problem`) and, with ``scores``, the
    test scores it names (`scores_problem`). A file the record does not name is not
    checked. Empty when all is as written."""
    problems = []
    content = content_problem(record)
    if content:
        problems.append(f"{Path(record_path).name}: {content}")
    if CURVE_FILE_KEY in record:
        problems.append(curve_problem(record_path, record))
    if scores and SCORES_FILE_KEY in record:
        problems.append(scores_problem(record_path, record))
    return [p for p in problems if p]


@dataclass(frozen=True)
class PreparedDigests:
    """What the prepared data of a fold are: the sha256 of each file they were made from
    (meta.json ``raw_files``, a record's ``dataset_sha256``), of each prepared file
    (meta.json ``prepared_files``, a record's ``prepared_sha256``; None for a folder
    prepared before folders were sealed), and the files not as prepared
    (``ssmbench.data.prepared_files.changed_files``)."""

    raw: dict | None
    prepared: dict | None
    changed: tuple[str, ...] = ()


def prepared_digests(prepared_dir: str | Path, fold: int) -> PreparedDigests | None:
    """The digests of the prepared data of ``fold`` (`PreparedDigests`); None when it is
    not prepared (yet) or its meta.json cannot be read (the train job says why). Costs a
    stat of each prepared file; a file dated after meta.json is read once (see
    ``ssmbench.data.prepared_files``)."""
    from ssmbench.data.prepared_files import changed_files
    from ssmbench.data.store import fold_folder

    try:
        meta_path = fold_folder(prepared_dir, int(fold)) / "meta.json"
        stat = meta_path.stat()
    except Exception:  # not prepared, or a per-fold dataset without this fold
        return None
    meta = _meta_digests(str(meta_path), stat.st_mtime_ns, stat.st_size)
    if meta is None:
        return None
    return PreparedDigests(*meta, tuple(changed_files(meta_path.parent)))


@functools.lru_cache(maxsize=256)
def _meta_digests(path: str, mtime_ns: int, size: int) -> tuple | None:
    # keyed on the file's date and size: one read per dataset for a grid's thousands of runs
    from ssmbench.data.prepared_files import prepared_sha256

    try:
        meta = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict):
        return None
    raw_files = meta.get("raw_files")
    return (raw_files if isinstance(raw_files, dict) else None), prepared_sha256(meta)


def _keys_changed(made_with, asked: dict, shown: int = 3) -> str:
    """`` (key: old -> new, ...)``: the keys whose values differ between what a record was
    made with and what is asked now (``absent`` where one side lacks the key), the first
    ``shown`` of them by name, changed values before added or removed keys; empty when the
    record holds no mapping there."""
    if not isinstance(made_with, dict) or not isinstance(asked, dict):
        return ""
    absent = object()
    keys = sorted(
        (
            k
            for k in set(made_with) | set(asked)
            if made_with.get(k, absent) != asked.get(k, absent)
        ),
        key=lambda k: (k not in made_with or k not in asked, str(k)),
    )  # a value changed before a key added or removed

    def value(v) -> str:
        text = "absent" if v is absent else json.dumps(v, sort_keys=True, default=str)
        return text if len(text) <= 40 else text[:37] + "..."

    listed = [f"{k}: {value(made_with.get(k, absent))} -> {value(asked.get(k, absent))}"
              for k in keys[:shown]]  # fmt: skip
    more = f", {len(keys) - shown} more" if len(keys) > shown else ""
    return f" ({', '.join(listed)}{more})" if listed else ""


def _dataset_change(made_from, now: dict | None, what: str = "dataset") -> str:
    """What differs between a record's digests (``dataset_sha256``, ``prepared_sha256``)
    and the prepared data's."""
    made_from = made_from if isinstance(made_from, dict) else {}
    now = now if isinstance(now, dict) else {}
    for name in sorted(set(made_from) | set(now)):
        old, new = made_from.get(name), now.get(name)
        if old != new:
            return f"{what} ({name}: sha256 {str(old)[:12]}... -> {str(new)[:12]}...)"
    return what


def settings_changes(record: dict, spec: dict) -> list[str]:
    """What of a record's model hyperparameters and protocol settings (but the `untracked_keys`)
    differs from what ``spec`` asks for, one phrase each (``protocol settings (max_epochs:
    2 -> 300)``); empty when both are the same. A setting the record's protocol leaves out
    stands for its default."""
    protocol, settings = record.get("protocol"), tracked_settings(spec)["settings"]
    if isinstance(protocol, dict):
        # a setting the record leaves out was read at its default (the schema's) by the run
        defaults = setting_defaults(settings.get("source"))
        protocol = {
            **{k: v for k, v in settings.items() if k in defaults and v == defaults[k]},
            **{k: v for k, v in protocol.items() if k not in untracked_keys()},
        }
    return [
        f"{name}{_keys_changed(made_with, asked)}"
        for name, made_with, asked in (
            ("model hyperparameters", record.get("model_params"), spec["model_params"]),
            ("protocol settings", protocol, settings),
        )
        if made_with != asked
    ]


def record_state(
    record_path: str | Path, spec: dict, root: str | Path = ".", prepared: dict | None = None
) -> RecordState:
    """Whether the record at ``record_path`` was made with the settings (but
    `untracked_keys`), model hyperparameters, training code (`training_code_digest`) and
    prepared data (`prepared_digests`, under ``root``) that ``spec``
    (`ssmbench.config.job_spec`) asks for, and it and the files it names are as they were
    written (`unit_problems`: ``edited`` says which are not). A missing or unreadable
    record is not current, nor is a record whose prepared folder is missing (not prepared
    in this clone, or removed by a preparation that failed: its data are not there).
    ``prepared``: the answers of `prepared_digests` per prepared folder and fold, shared
    by the runs of a suite (each folder is looked at once)."""
    record_path = Path(record_path)
    try:
        record, non_finite = read_record_json(record_path.read_text())
    except FileNotFoundError:
        return RecordState(False, ("no record",))
    except (OSError, ValueError) as exc:
        return RecordState(
            False, (f"record unreadable ({type(exc).__name__}: {exc}); it will be rerun",)
        )
    if not isinstance(record, dict):
        return RecordState(False, ("record unreadable (not a JSON object); it will be rerun",))
    changed = settings_changes(record, spec)
    if record.get("code_digest") != spec["code"]:
        changed.append(f"training code ({record.get('code_digest')} -> {spec['code']})")
    if spec.get("prepared_dir") is not None:
        key = (str(Path(root) / spec["prepared_dir"]), int(spec["fold"]))
        prepared = {} if prepared is None else prepared
        if key not in prepared:
            prepared[key] = prepared_digests(*key)
        now = prepared[key]
        if now is None and not Path(key[0]).is_dir():
            changed.append(
                f"prepared data ({spec['prepared_dir']} is missing: not prepared, or its "
                "preparation failed; the run is trained again once it is prepared)"
            )
        if now is not None and record.get("dataset_sha256") != now.raw:
            changed.append(_dataset_change(record.get("dataset_sha256"), now.raw))
        if now is not None and now.changed:
            changed.append(f"prepared data ({'; '.join(now.changed)})")
        elif now is not None and record.get("prepared_sha256") != now.prepared:
            made_with = record.get("prepared_sha256")
            changed.append(_dataset_change(made_with, now.prepared, "prepared data"))
    reasons = ["changed since the record: " + ", ".join(changed)] if changed else []
    problems = record_problems(record, spec, non_finite)
    edited = [f"{record_path.name}: {p}" for p in problems]
    edited += unit_problems(record_path, record)
    reasons += edited
    return RecordState(not reasons, tuple(reasons), tuple(edited))


def record_suite(record: dict) -> str | None:
    """The suite that made a record: the ``--suite`` of the command line of its
    provenance (``argv``; the workflow passes it to every job), None where it names none.
    ``record`` with its provenance (``ssmbench.provenance_file.with_provenance``)."""
    argv = record.get("argv")
    if isinstance(argv, list) and "--suite" in argv[:-1]:
        suite = argv[argv.index("--suite") + 1]
        return suite if isinstance(suite, str) else None
    return None


def other_suites_record(record_path: str | Path, spec: dict, suite: str) -> str | None:
    """Why a run of ``suite`` must not replace the record at ``record_path``: another
    suite made it (`record_suite`) with other settings or model hyperparameters than
    ``spec`` asks for, so training would replace that suite's finished result with a
    result of other settings at the same path. None when there is no record, it is the
    same suite's (a changed params.yaml makes its own record stale, as it should), its
    suite is not known, or it was made with these settings."""
    try:
        record = json.loads(Path(record_path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    made_by = record_suite(with_provenance(record_path, record))
    if made_by is None or made_by == suite:
        return None
    changed = settings_changes(record, spec)
    if not changed:
        return None
    asked = ", ".join(changed)
    return f"{record_path}: made by suite {made_by!r}; suite {suite!r} asks for other {asked}"


#: what to do when a suite would replace another suite's record (`other_suites_record`)
KEEP_BOTH = (
    "to keep both, train the changed settings under a model name of their own: a variant in "
    "the suite (variants: {{{model}-mine: {{base: {model}}}}}, with its settings in "
    "model_overrides: {{{model}-mine: {{...}}}}); to replace the records, {replace}"
)


def record_is_stale(record_path: str | Path, spec: dict) -> bool:
    """`record_state` as a yes/no: True if the record is not current."""
    return not record_state(record_path, spec).current


# --- the settings marker ---------------------------------------------------------------


def settings_marker_path(settings_dir: str | Path, record_relative: str | Path) -> Path:
    """A run's settings marker:
    ``{paths.settings}/{benchmark}/{dataset}/{model}/fold{k}/settings.json``
    (``record_relative`` is the record's path relative to paths.runs).

    One folder per marker, because a marker is written while Snakemake builds its DAG, and
    Snakemake lists a folder once (its file inventory) and then takes a file missing from
    that listing for absent: a marker written into a folder it had already listed for
    another run's marker would fail the job ("Missing input files"). A folder of its own
    is listed only when its one marker is looked for, after it is written."""
    relative = Path(record_relative)
    return Path(settings_dir) / relative.with_suffix("") / "settings.json"


def search_marker_path(settings_dir: str | Path, benchmark: str, dataset: str, model: str) -> Path:
    """A search's marker (the tune stage's), in a folder of its own as a run's
    (`settings_marker_path`):
    ``{paths.settings}/{benchmark}/{dataset}/{model}/search/search.json``."""
    return Path(settings_dir) / benchmark / dataset / model / "search" / "search.json"


def sync_settings_marker(record_path: str | Path, marker_path: str | Path, spec: dict) -> Path:
    """Keep a run's settings marker (an input of its training job) in step with its record.

    Snakemake's own params trigger needs its metadata (.snakemake/), which a fresh clone
    whose records came from `dvc pull` lacks. So every training job takes this marker as
    an input, and its modification time carries `record_state` to Snakemake:

    * a current record: the marker is dated just before the record (nothing to do);
    * a record that is not current: the marker gets a fresh date, newer than the record, and
      Snakemake's mtime trigger reruns exactly that job;
    * no record: the job runs anyway.

    The marker always exists, so a job's set of inputs never changes from one run to the
    next (Snakemake would rerun a job whose input set changed).
    """
    text = json.dumps(tracked_settings(spec), sort_keys=True, indent=1) + "\n"
    return sync_marker(
        record_path, marker_path, text, lambda: record_state(record_path, spec).current
    )


def sync_marker(output_path, marker_path, text: str, current: Callable[[], bool]) -> Path:
    """A job's marker input holding ``text``, dated before ``output_path`` when the output
    is ``current()`` and after it when not (so Snakemake's mtime trigger reruns the job):
    `sync_settings_marker` for a run's record, and the tune stage's for a tuned file."""
    output_path, marker_path = Path(output_path), Path(marker_path)

    # rebuilt from params.yaml on every parse: atomic, but not worth an fsync each
    def write(always: bool = False) -> None:
        if always or not marker_path.is_file() or marker_path.read_text() != text:
            atomic_write_text(marker_path, text, durable=False)

    if not output_path.is_file():
        write()
        return marker_path
    output_time = output_path.stat().st_mtime
    if not current():
        if not marker_path.is_file() or marker_path.stat().st_mtime <= output_time:
            write(always=True)
            if marker_path.stat().st_mtime <= output_time:  # coarse clocks: make it newer
                os.utime(marker_path, (output_time + 1, output_time + 1))
        return marker_path
    if not marker_path.is_file() or marker_path.stat().st_mtime > output_time:
        write()
        os.utime(marker_path, (output_time - 1, output_time - 1))
    return marker_path
