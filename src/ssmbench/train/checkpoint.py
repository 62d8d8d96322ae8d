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
    and this module's source, the dataset's raw-file checksums, torch's version and the
    checkpoint format."""
    settings = {k: v for k, v in spec["settings"].items() if k not in EXECUTION_KEYS}
    identity = {
        "run": run_name(spec),
        "settings": settings,
        "model_params": spec["model_params"],
        "code": spec.get("code"),
        "checkpoint_code": hashlib.sha256(Path(__file__).read_bytes()).hexdigest(),
        "dataset_sha256": spec.get("dataset_sha256"),
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
    path: Path, digest: str, model: torch.nn.Module, optimizer, log: Callable[[str], None]
) -> dict | None:
    """The checkpoint at `path` if it exists, is readable, was made with `digest` and
    fits `model` and `optimizer`; else None. A stale or unreadable one is deleted, with a
    log line saying why (the run then starts from epoch 1)."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        problem = _malformed(state) or (
            None if state["digest"] != digest else check_matches(state, model, optimizer)
        )
    except Exception as exc:  # any unreadable file: truncated, not a zip, bad pickle...
        problem = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc) else ''}"
    if problem:
        log(f"checkpoint {path} is unreadable ({problem}): discarded, starting from epoch 1")
        discard(path, log)
        return None
    if state["content_sha256"] != content_digest(state):
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


def check_matches(state: dict, model: torch.nn.Module, optimizer) -> str | None:
    """Why the checkpoint does not fit `model` and `optimizer` (None if it does): the
    names and shapes of the model's and the best state's tensors, the optimizer's
    parameter groups."""
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    for what in ("model", "best_state"):
        weights = state["model"] if what == "model" else state["early_stopping"]["best_state"]
        if weights is None and what == "best_state":
            continue
        if not isinstance(weights, dict):
            return f"{what} is not a state dict"
        got = {k: tuple(getattr(v, "shape", ())) for k, v in weights.items()}
        if got != expected:
            diff = sorted(set(got) ^ set(expected)) or [k for k in got if got[k] != expected[k]]
            return f"{what} does not fit the model ({', '.join(diff[:3])})"
    groups = state["optimizer"]["param_groups"]
    ours = optimizer.state_dict()["param_groups"]
    if len(groups) != len(ours) or any(
        len(g.get("params", ())) != len(o["params"]) for g, o in zip(groups, ours, strict=True)
    ):
        return "optimizer does not fit the model's parameters"
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
