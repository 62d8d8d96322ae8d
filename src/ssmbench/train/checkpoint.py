"""Checkpoints of a deep training run: what they hold, and how they are saved and read.

A run on a cluster can be stopped before it finishes (``ssmbench.train.stop``: SIGTERM or
SIGUSR1 abandon the batch in flight, ``ssmbench.train.rewind``, write a checkpoint of the
state before it and exit with `RESUME_EXIT_CODE`); the retried job (Snakemake
``--retries``) or the requeued one (SLURM ``--requeue``) resumes from it and produces the
record an uninterrupted run would have produced. A checkpoint is also written every
``checkpoint_every`` epochs, but not within ``checkpoint_min_seconds`` of the previous one
(params.yaml ``protocol``), so a hard kill (SIGKILL, a node failure) loses at most that
many epochs or that many seconds of training, whichever is more.

A checkpoint holds everything the rest of the run depends on: the model and optimizer,
the epoch and the batch within it, the running sums of the epoch in progress, every
random state (python, numpy, torch CPU and CUDA, the shuffling generator, taken at the
start of the epoch in progress so its batch order can be drawn again), the early-stopping
state (best score, its weights, its epoch, epochs since) and the curve so far.

* It lives at ``paths.checkpoints/{benchmark}/{dataset}/{model}/fold{k}.pt``, outside the
  DVC-tracked run records, and is deleted once the run's record is written.
* It carries `settings_digest` of the run (its settings, model hyperparameters, training
  code digest, dataset checksums, torch version): one made with anything else is never
  resumed but discarded, with a log line.
* It carries `content_digest` of everything else it holds: one changed after it was
  written (an edited tensor, a damaged byte that still loads) is discarded, with a log
  line.
* One whose digests match but whose values this run cannot take up (written by faulty
  code, or crafted: `check_matches`) is discarded too, with a log line naming the value,
  before any of it is applied; taken up, it would fail at the first optimizer step or
  random draw, or train a wrong run, and fail the same way on every retry.
* A checkpoint is optional work: one that cannot be written (full disk, read-only folder)
  raises `CheckpointWriteError`, which the training loop logs as a warning and trains on.
* It is written atomically (`ssmbench.io.atomic_write`) and read with
  ``torch.load(..., weights_only=True)``: it holds tensors, numbers, strings, lists and
  dicts only (random states are stored as tensors and lists), never pickled objects. An
  unreadable or malformed one is discarded with a log line and the run starts afresh.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ssmbench.io import atomic_write
from ssmbench.staleness import EXECUTION_KEYS

# The stop signals live in a module without torch (``ssmbench train`` catches them before
# importing it); the names stay importable from here, where the resume logic is.
from ssmbench.train.stop import (  # noqa: F401
    RESUME_EXIT_CODE,
    STOP_SIGNALS,
    StopRequest,
    TrainingInterrupted,
)

#: Bumped when the checkpoint layout changes: an older file is then discarded.
FORMAT = 2

_KEYS = ("format", "digest", "content_sha256", "run", "epoch", "step", "partial", "model",
         "optimizer", "rng", "early_stopping", "curve", "train_seconds")  # fmt: skip


#: the running sums of an epoch before its first batch
NO_BATCHES = {"loss_sum": 0.0, "second": 0.0, "n_rows": 0, "seconds": 0.0}


@dataclass
class TrainingState:
    """Where a deep run stands: before batch `step` (0-based; 0: the epoch's start) of
    `epoch`, with the running sums of the batches of it already done (`partial`, keys of
    `NO_BATCHES`), the curve of the finished epochs, the early-stopping state and the
    training time so far. A checkpoint holds it beside the model, the optimizer and the
    random states; the training loop brings it up to date at each point it may save."""

    epoch: int = 1
    step: int = 0
    partial: dict = field(default_factory=lambda: dict(NO_BATCHES))
    curve: list[dict] = field(default_factory=list)
    best: tuple[float, float] | None = None  # (val loss, val accuracy) of the best epoch
    best_state: dict | None = None  # its weights
    best_epoch: int = 0
    since_best: int = 0  # epochs since the best one
    stopped_early: bool = False
    train_seconds: float = 0.0
    # the test split's scores per validated epoch (protocol epoch_test_scores; empty when
    # off): a diagnostic nothing in the run reads (train.epoch_test_scores)
    test_scores: list[dict] = field(default_factory=list)
    # each resume so far: {"epoch", "step", "checkpoint_sha256"} (the record's "resumed")
    resumes: list[dict] = field(default_factory=list)

    def checkpoint(self, *, digest: str | None, run: str, model, optimizer, rng: dict) -> dict:
        """The checkpoint of this state (what `save` writes and `load` reads back)."""
        return {
            "format": FORMAT,
            "digest": digest,
            "run": run,
            "epoch": self.epoch,
            "step": self.step,
            "partial": self.partial,
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "rng": rng,
            "early_stopping": {
                "best": list(self.best) if self.best is not None else None,
                "best_state": self.best_state,
                "best_epoch": self.best_epoch,
                "since_best": self.since_best,
                "stopped_early": self.stopped_early,
            },
            "curve": self.curve,
            "test_scores": self.test_scores,
            "resumes": self.resumes,
            "train_seconds": self.train_seconds,
        }

    @classmethod
    def from_checkpoint(cls, state: dict) -> TrainingState:
        """The state a checkpoint (one `load` returned) holds."""
        stopping = state["early_stopping"]
        return cls(
            epoch=int(state["epoch"]),
            step=int(state["step"]),
            partial=state["partial"],
            curve=list(state["curve"]),
            best=tuple(stopping["best"]) if stopping["best"] is not None else None,
            best_state=stopping["best_state"],
            best_epoch=int(stopping["best_epoch"]),
            since_best=int(stopping["since_best"]),
            stopped_early=bool(stopping["stopped_early"]),
            train_seconds=float(state["train_seconds"]),
            test_scores=list(state["test_scores"]),
            resumes=[dict(resume) for resume in state.get("resumes", [])],
        )


def checkpoint_path(checkpoints_dir: str | Path, job) -> Path:
    """Where the checkpoint of `job` (a `ssmbench.config.Job`) lives."""
    return job.record_path(checkpoints_dir).with_suffix(".pt")


def run_name(spec: dict) -> str:
    return f"{spec['benchmark']}/{spec['dataset']}/{spec['model']}/fold{spec['fold']}"


def settings_digest(spec: dict) -> str:
    """What a checkpoint must have been made with to be resumed: the run, its settings
    (but `EXECUTION_KEYS`), the model's hyperparameters, the training code digest (the
    protocol, data store, the model's family: ``ssmbench.staleness.training_code_digest``)
    and this module's source, the dataset's raw-file and prepared-file checksums, torch's
    version and the checkpoint format."""
    settings = {k: v for k, v in spec["settings"].items() if k not in EXECUTION_KEYS}
    identity = {
        "run": run_name(spec),
        "settings": settings,
        "model_params": spec["model_params"],
        "code": spec.get("code"),
        "checkpoint_code": hashlib.sha256(Path(__file__).read_bytes()).hexdigest(),
        "dataset_sha256": spec.get("dataset_sha256"),
        "prepared_sha256": spec.get("prepared_sha256"),
        "torch": torch.__version__,
        "format": FORMAT,
    }
    text = json.dumps(identity, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ------------------------------------------------------------------------ random states
def rng_state(shuffle: torch.Generator) -> dict:
    """Every random state a run draws from, as tensors, numbers and lists."""
    version, internal, gauss_next = random.getstate()
    name, keys, pos, has_gauss, cached_gaussian = np.random.get_state()
    return {
        "python": {"version": version, "state": list(internal), "gauss_next": gauss_next},
        "numpy": {
            "bit_generator": name,
            "keys": torch.from_numpy(np.asarray(keys, dtype=np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached_gaussian),
        },
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "shuffle": shuffle.get_state(),
    }


def set_rng_state(state: dict, shuffle: torch.Generator, log: Callable[[str], None]) -> None:
    py = state["python"]
    random.setstate((py["version"], tuple(py["state"]), py["gauss_next"]))
    npy = state["numpy"]
    np.random.set_state(
        (npy["bit_generator"], npy["keys"].numpy().astype(np.uint32), npy["pos"],
         npy["has_gauss"], npy["cached_gaussian"])
    )  # fmt: skip
    torch.set_rng_state(state["torch"])
    cuda = state["cuda"]
    if torch.cuda.is_available():
        if len(cuda) == torch.cuda.device_count():
            torch.cuda.set_rng_state_all(cuda)
        else:
            log(f"checkpoint has {len(cuda)} CUDA random states for "
                f"{torch.cuda.device_count()} devices: CUDA states left as seeded")  # fmt: skip
    shuffle.set_state(state["shuffle"])


# ------------------------------------------------------------------------- save / load
class CheckpointWriteError(OSError):
    """A checkpoint that could not be written; the message names the file and the cause."""


def content_digest(state: dict) -> str:
    """sha256 of everything a checkpoint holds but its ``content_sha256``: every tensor's
    dtype, shape and bytes, every number, string, list and mapping (keys in sorted order)."""
    digest = hashlib.sha256()
    _feed(digest, {k: v for k, v in state.items() if k != "content_sha256"})
    return digest.hexdigest()


def _feed(digest, value) -> None:
    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu().contiguous()
        digest.update(f"T{tensor.dtype}{tuple(tensor.shape)}:".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(value, dict):
        digest.update(f"D{len(value)}:".encode())
        for key, item in sorted(value.items(), key=lambda kv: (type(kv[0]).__name__, str(kv[0]))):
            _feed(digest, key)
            _feed(digest, item)
    elif isinstance(value, (list, tuple)):  # a tuple may come back as either
        digest.update(f"L{len(value)}:".encode())
        for item in value:
            _feed(digest, item)
    elif value is None or isinstance(value, (bool, int, float, str)):
        digest.update(f"{type(value).__name__}:{value!r};".encode())
    else:
        raise TypeError(f"a checkpoint holds no {type(value).__name__}")


def save(path: Path, state: dict) -> Path:
    """Write a checkpoint with its `content_digest`, atomically (temporary sibling, fsync,
    rename). `CheckpointWriteError` when the file system refuses it: the previous
    checkpoint at `path`, if any, is left as it was."""
    missing = [key for key in _KEYS if key not in state and key != "content_sha256"]
    if missing:
        raise ValueError(f"checkpoint state lacks {missing}")
    state = {**state, "content_sha256": content_digest(state)}
    try:
        return atomic_write(path, lambda tmp: torch.save(state, tmp))
    except (OSError, RuntimeError) as exc:
        # torch.save reports a full disk as a RuntimeError of its zip writer
        # ("[enforce fail at inline_container.cc:...]"): say what and where instead.
        cause = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CheckpointWriteError(f"checkpoint {path} could not be written: {cause}") from exc


def load(
    path: Path,
    digest: str,
    model: torch.nn.Module,
    optimizer,
    log: Callable[[str], None],
    *,
    n_batches: int,
    max_epochs: int,
) -> dict | None:
    """The checkpoint at `path` if it exists, is readable, was made with `digest` and
    fits `model`, `optimizer` and a run of `max_epochs` epochs of `n_batches` batches
    (`check_matches`); else None. A stale, unreadable or unfitting one is deleted, with a
    log line saying why (the run then starts from epoch 1). Nothing of it is applied
    here: a checkpoint returned can be taken up without an error."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        problem = _malformed(state)
        changed = problem is None and state["content_sha256"] != content_digest(state)
    except Exception as exc:  # any unreadable file: truncated, not a zip, bad pickle...
        problem = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc) else ''}"
    if problem:
        log(f"checkpoint {path} is unreadable ({problem}): discarded, starting from epoch 1")
        discard(path, log)
        return None
    if changed:
        log(
            f"checkpoint {path} was changed after it was written (its content does not "
            f"match its sha256 {state['content_sha256'][:16]}...): discarded, starting "
            "from epoch 1"
        )
        discard(path, log)
        return None
    if state["digest"] != digest:
        log(
            f"checkpoint {path} was made with other settings or code (digest "
            f"{state['digest']}, this run {digest}): discarded, starting from epoch 1"
        )
        discard(path, log)
        return None
    # Its digests match, yet its values may not fit: written by faulty code, or crafted.
    # Taking up such a one fails at the first optimizer step or random draw, or trains a
    # wrong run, and a retry would fail the same way; it is discarded instead.
    try:
        problem = check_matches(state, model, optimizer, n_batches=n_batches,
                                max_epochs=max_epochs)  # fmt: skip
    except Exception as exc:  # a value no check foresaw
        problem = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc) else ''}"
    if problem:
        log(
            f"checkpoint {path} was made with other settings or code ({problem}): "
            "discarded, starting from epoch 1"
        )
        discard(path, log)
        return None
    return state


_NESTED = {
    "partial": ("loss_sum", "second", "n_rows", "seconds"),
    "rng": ("python", "numpy", "torch", "cuda", "shuffle"),
    "early_stopping": ("best", "best_state", "best_epoch", "since_best", "stopped_early"),
}


def _malformed(state) -> str | None:
    """Why a loaded object is not a checkpoint of this format (None if it is one)."""
    if not isinstance(state, dict):
        return f"holds a {type(state).__name__}, not a checkpoint"
    missing = [key for key in _KEYS if key not in state]
    if missing:
        return f"lacks {', '.join(missing)}"
    if state["format"] != FORMAT:
        return f"format {state['format']}, this code reads format {FORMAT}"
    if not isinstance(state["content_sha256"], str):
        return "content_sha256 is not a digest"
    for key, fields in _NESTED.items():
        if not isinstance(state[key], dict) or any(f not in state[key] for f in fields):
            return f"{key} lacks one of {', '.join(fields)}"
    rng = state["rng"]
    reference = torch.get_rng_state()
    for key in ("torch", "shuffle"):
        if not isinstance(rng[key], torch.Tensor) or rng[key].shape != reference.shape:
            return f"rng.{key} is not a generator state"
    keys = rng["numpy"].get("keys") if isinstance(rng["numpy"], dict) else None
    if not isinstance(keys, torch.Tensor) or keys.shape != (624,):
        return "rng.numpy is not a MT19937 state"
    python = rng["python"].get("state") if isinstance(rng["python"], dict) else None
    if not isinstance(python, list) or len(python) != 625:
        return "rng.python is not a Mersenne Twister state"
    optimizer = state["optimizer"]
    if not isinstance(optimizer, dict) or not {"state", "param_groups"} <= set(optimizer):
        return "optimizer is not an optimizer state"
    if not isinstance(state["curve"], list) or not isinstance(state["epoch"], int):
        return "curve or epoch has the wrong type"
    resumes = state.get("resumes", [])
    if not isinstance(resumes, list) or not all(isinstance(r, dict) for r in resumes):
        return "resumes is not a list of mappings"
    return None


def check_matches(
    state: dict, model: torch.nn.Module, optimizer, *, n_batches: int, max_epochs: int
) -> str | None:
    """Why the checkpoint (one `_malformed` passes) cannot be taken up by this run (None
    if it can): its model and best weights against `model` (names, shapes, dtypes), its
    optimizer state against `optimizer` (groups, their settings, each parameter's state
    tensors), its place in training against `max_epochs` epochs of `n_batches` batches,
    the running sums, the early-stopping state and the curve, and whether each random
    state is one its generator takes. Every value `TrainingState.from_checkpoint`,
    ``load_state_dict`` and `set_rng_state` read is checked here, before any is applied."""
    return (
        _weights_problem(state, model)
        or _optimizer_problem(state["optimizer"], optimizer)
        or _progress_problem(state, n_batches, max_epochs)
        or _rng_problem(state["rng"])
    )


def _real(value) -> bool:
    """An int or float (not a bool), NaN and infinities included."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number(value) -> bool:
    """A finite int or float (not a bool)."""
    return _real(value) and math.isfinite(value)


def _count(value) -> bool:
    """An int >= 0 (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _plain(value):
    """`value` with lists as tuples (``torch.load`` may give back either)."""
    return tuple(value) if isinstance(value, (list, tuple)) else value


def _dtype(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _weights_problem(state: dict, model: torch.nn.Module) -> str | None:
    """The model's and the best epoch's weights: the model's tensor names, shapes and
    dtypes (``load_state_dict`` would cast another dtype silently)."""
    expected = model.state_dict()
    for what in ("model", "best_state"):
        weights = state["model"] if what == "model" else state["early_stopping"]["best_state"]
        if weights is None and what == "best_state":
            continue
        if not isinstance(weights, dict):
            return f"its {what} is not a state dict"
        if set(weights) != set(expected):
            names = sorted(set(weights) ^ set(expected))[:3]
            return f"its {what} does not fit the model ({', '.join(names)})"
        for name, tensor in weights.items():
            want = expected[name]
            if not isinstance(tensor, torch.Tensor):
                return f"its {what} holds a {type(tensor).__name__} for {name}, not a tensor"
            if tensor.shape != want.shape:
                return (
                    f"its {what} does not fit the model ({name} has shape "
                    f"{tuple(tensor.shape)}, the model's {tuple(want.shape)})"
                )
            if tensor.dtype != want.dtype:
                return (
                    f"its {what} tensor {name} is {_dtype(tensor.dtype)}, the model's "
                    f"{_dtype(want.dtype)}"
                )
    return None


def _optimizer_problem(saved: dict, optimizer) -> str | None:
    """The optimizer's parameter groups (their number and sizes, and each setting but the
    learning rate, which each epoch sets from ``base_lr``) and the state of each parameter
    (a tensor of the parameter's shape and dtype for each of its tensors, a finite scalar
    ``step``)."""
    groups, ours = saved["param_groups"], optimizer.param_groups
    if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
        return "its optimizer's param_groups is not a list of mappings"
    if len(groups) != len(ours) or any(
        len(g.get("params", ())) != len(o["params"]) for g, o in zip(groups, ours, strict=True)
    ):
        return "its optimizer does not fit the model's parameters"
    parameters = {}
    for index, (group, own) in enumerate(zip(groups, ours, strict=True)):
        for key, value in own.items():
            if key == "params":
                continue
            got = group.get(key)
            if key == "lr":
                if not _number(got):
                    return f"its optimizer group {index} has lr {got!r}, not a number"
                continue
            if key not in group or _plain(got) != _plain(value):
                return f"its optimizer group {index} has {key} {got!r}, this run {value!r}"
        for pid, param in zip(group["params"], own["params"], strict=True):
            if not _count(pid) or pid in parameters:
                return f"its optimizer group {index} lists parameter {pid!r}, not a new index"
            parameters[pid] = param
    states = saved["state"]
    if not isinstance(states, dict):
        return "its optimizer state is not a mapping"
    for pid, entry in states.items():
        if pid not in parameters:
            return f"its optimizer holds a state for parameter {pid!r}, which no group lists"
        if not isinstance(entry, dict):
            return f"its optimizer state for parameter {pid} is not a mapping"
        param = parameters[pid]
        for key, value in entry.items():
            if key == "step":
                if isinstance(value, torch.Tensor) and value.numel() == 1:
                    value = value.item()
                if not _number(value) or value < 0:
                    return (
                        f"its optimizer state for parameter {pid} has step {value!r}, not a count"
                    )
            elif isinstance(value, torch.Tensor):
                if value.shape != param.shape:
                    return (
                        f"its optimizer state for parameter {pid} ({key}) has shape "
                        f"{tuple(value.shape)}, the parameter {tuple(param.shape)}"
                    )
                if value.dtype != param.dtype:
                    return (
                        f"its optimizer state for parameter {pid} ({key}) is "
                        f"{_dtype(value.dtype)}, the parameter {_dtype(param.dtype)}"
                    )
            elif value is not None and not _number(value):
                return f"its optimizer state for parameter {pid} has {key} {value!r}"
    return None


def _progress_problem(state: dict, n_batches: int, max_epochs: int) -> str | None:
    """Where training stands: the epoch (1 to ``max_epochs + 1``, the latter when training
    is done), the batch within it (0 to `n_batches`, the latter when only its validation
    is left), the running sums of that epoch, the curve of the epochs before it, the
    early-stopping state and the training time."""
    epoch, step = state["epoch"], state["step"]
    if not _count(epoch) or epoch < 1:
        return f"its epoch {epoch!r} is not an epoch (they count from 1)"
    if epoch > max_epochs + 1:
        return f"its epoch {epoch} is beyond max_epochs {max_epochs}"
    stopping = state["early_stopping"]
    done = epoch > max_epochs or stopping["stopped_early"] is True
    if not _count(step) or step > n_batches:
        return f"its step {step!r} is not a batch of an epoch of {n_batches} batches"
    if done and step:
        return f"its step {step} is within epoch {epoch}, after its training ended"
    partial = state["partial"]
    for key in NO_BATCHES:
        value = partial[key]
        if key == "n_rows" and not _count(value):
            return f"its partial n_rows {value!r} is not a count of rows"
        if not _number(value):
            return f"its partial {key} {value!r} is not a finite number"
    curve = state["curve"]
    if len(curve) != epoch - 1:
        return f"its curve holds {len(curve)} epochs, not the {epoch - 1} before its epoch {epoch}"
    for number, row in enumerate(curve, start=1):
        if not isinstance(row, dict) or row.get("epoch") != number:
            return f"its curve row {number} is not the row of epoch {number}"
        for key, value in row.items():
            if value is not None and not _real(value):
                return f"its curve row {number} has {key} {value!r}, not a number"
    best = stopping["best"]
    if best is not None and (
        not isinstance(best, (list, tuple))
        or len(best) != 2
        or not _number(best[0])
        or not (_number(best[1]) or (_real(best[1]) and math.isnan(best[1])))
    ):
        # (val loss, val accuracy); a regression's accuracy is NaN
        return f"its early_stopping best {best!r} is not a pair of numbers"
    best_epoch, since_best = stopping["best_epoch"], stopping["since_best"]
    if not _count(best_epoch) or best_epoch >= epoch:
        return f"its early_stopping best_epoch {best_epoch!r} is not an epoch before {epoch}"
    if not _count(since_best):
        return f"its early_stopping since_best {since_best!r} is not a count"
    if not isinstance(stopping["stopped_early"], bool):
        return f"its early_stopping stopped_early {stopping['stopped_early']!r} is not a bool"
    if (best is None) != (stopping["best_state"] is None) or (best is None) != (best_epoch == 0):
        return "its early_stopping best, best_state and best_epoch disagree on a best epoch"
    if done and best is None:
        return f"its training ended (epoch {epoch}, max_epochs {max_epochs}) without a best epoch"
    if not _number(state["train_seconds"]) or state["train_seconds"] < 0:
        return f"its train_seconds {state['train_seconds']!r} is not a duration"
    scores = state.get("test_scores")
    if not isinstance(scores, list) or not all(isinstance(row, dict) for row in scores):
        return "its test_scores is not a list of mappings"
    return None


def _rng_problem(rng: dict) -> str | None:
    """Whether each random state is one its generator takes: the torch and shuffling ones
    uint8 tensors of a generator state's length, the CUDA ones uint8 tensors, python's and
    NumPy's tried on a throwaway generator (`set_rng_state` would fail half-way, or NumPy
    would take out-of-range numbers, otherwise)."""
    reference = torch.get_rng_state()
    for key in ("torch", "shuffle"):
        value = rng[key]
        if value.dtype != torch.uint8 or value.shape != reference.shape:
            return (
                f"its rng.{key} is a {_dtype(value.dtype)} tensor of shape {tuple(value.shape)}, "
                f"not a generator state (uint8, {tuple(reference.shape)})"
            )
    cuda = rng["cuda"]
    if not isinstance(cuda, list) or not all(
        isinstance(t, torch.Tensor) and t.dtype == torch.uint8 and t.dim() == 1 for t in cuda
    ):
        return "its rng.cuda is not a list of CUDA generator states (uint8 tensors)"
    python = rng["python"]
    gauss_next = python.get("gauss_next")
    if gauss_next is not None and not _number(gauss_next):
        return f"its rng.python gauss_next {gauss_next!r} is not a number"
    try:
        random.Random().setstate((python["version"], tuple(python["state"]), gauss_next))
    except Exception as exc:
        return f"its rng.python is not a state random.setstate takes ({type(exc).__name__}: {exc})"
    npy = rng["numpy"]
    keys = npy["keys"]
    if keys.dtype != torch.int64 or bool(((keys < 0) | (keys >= 2**32)).any()):
        return "its rng.numpy keys are not 32-bit unsigned integers"
    pos, has_gauss = npy.get("pos"), npy.get("has_gauss")
    if not _count(pos) or pos > len(keys):
        return f"its rng.numpy pos {pos!r} is not a position in its {len(keys)} keys"
    if has_gauss not in (0, 1) or not _number(npy.get("cached_gaussian")):
        return "its rng.numpy has_gauss or cached_gaussian is not a number"
    try:
        np.random.RandomState().set_state(
            (npy["bit_generator"], keys.numpy().astype(np.uint32), pos, has_gauss,
             npy["cached_gaussian"])
        )  # fmt: skip
    except Exception as exc:
        return f"its rng.numpy is not a state numpy's set_state takes ({type(exc).__name__}: {exc})"
    return None


def discard(path: Path | None, log: Callable[[str], None] = print) -> None:
    """Delete a run's checkpoint (its record is written, or it is not to be resumed). The
    folders stay: another job may be about to write into them. A checkpoint that cannot
    be deleted (a read-only folder) is a warning: nothing depends on its going."""
    if path is None:
        return
    try:
        Path(path).unlink(missing_ok=True)
    except OSError as exc:
        if Path(path).exists():
            log(f"warning: checkpoint {path} could not be deleted ({exc.strerror or exc})")
