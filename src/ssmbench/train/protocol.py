"""The training protocol of the MS4N paper (section 4), one run at a time.

* Adam, lr 1e-3 (params.yaml `protocol`; AdamW on request), over the parameter groups
  of ``ssmbench.train.optim`` (no weight decay where a layer's ``_optim`` hint says so).
* A stratified validation split of `val_fraction` of the TRAINING part of the fold, drawn
  with `val_split_seed` (the MS4N authors' fixed 1234, or each run's own seed) and
  `val_split_fallback` where no stratified split of that size exists; the test fold is
  never seen before the final evaluation.
* `max_epochs` epochs, validated every `val_interval`-th epoch and at the last; with an
  `early_stopping_patience` it stops after that many epochs without a strictly better
  validation score (null: no early stop, as the authors' trainer).
* The checkpoint with the best validation score is the one tested.
* With ``epoch_test_scores`` (off by default) the test rows are also scored at each
  validated epoch, into a file of their own that nothing here reads
  (``ssmbench.train.epoch_test_scores``): what selecting on the test split would have
  bought, measured apart.
* Seeded (seed = seed_base + fold) and deterministic on CPU.

The run publishes its per-epoch curve and its record as one unit, the record last
(``ssmbench.train.record``): a record exists only if the run finished, and a curve
is trusted only beside the record that holds its sha256. A checkpoint that cannot be
written is a warning, never the end of a run.

On a cluster a run may be stopped before it finishes: on SIGTERM or SIGUSR1 it abandons
the training batch or validation pass in flight (``ssmbench.train.rewind``: the state
before it is restored), writes a checkpoint and exits with status 75
(``ssmbench.train.checkpoint.RESUME_EXIT_CODE``) within seconds, however long a batch
takes; it also writes one every ``checkpoint_every`` epochs. The next attempt resumes from
it, batch for batch, writes the record an uninterrupted run would have written
(ssmbench.train.checkpoint), and the record lists each resume (``resumed``: the epoch,
batch and checkpoint sha256 it resumed from).

A run's steps: `run_setup.set_up` (seed, data, split, model), then
`estimator_run.run_estimator` for a non-deep model, or `_DeepTraining`'s `resume`, `train`,
`test` and `write_record`.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from pathlib import Path

import torch

from ssmbench.models import is_estimator, model_inputs
from ssmbench.models.scan_paths import scan_of
from ssmbench.train import checkpoint as ckpt
from ssmbench.train.batch_order import plan_order
from ssmbench.train.checkpoint import StopRequest, TrainingInterrupted
from ssmbench.train.checks import LossLimit, check_loss
from ssmbench.train.epoch_test_scores import score_epoch
from ssmbench.train.estimator_run import run_estimator
from ssmbench.train.evaluation import batches_of, score_test_sets
from ssmbench.train.micro_batches import (
    backward_batch,
    check_micro_batching,
    effective_micro_batch_rows,
    micro_batches_record,
)
from ssmbench.train.optim import build_optimizer, lr_factor_at, set_epoch_lr
from ssmbench.train.probes import run_probes
from ssmbench.train.record import write_run
from ssmbench.train.rewind import BatchRewind
from ssmbench.train.run_setup import RunSetup, set_up
from ssmbench.train.stop import BatchAbandoned


def _is_better(
    monitor: str, val_loss: float, val_acc: float, best: tuple[float, float] | None
) -> bool:
    if best is None:
        return True
    best_loss, best_acc = best
    if monitor == "val_accuracy":
        # Ties on accuracy (common on small validation sets) are broken by the loss.
        return val_acc > best_acc or (val_acc == best_acc and val_loss < best_loss)
    return val_loss < best_loss


def run_job(
    spec: dict,
    record_path: str | Path,
    threads: int = 1,
    log: Callable[[str], None] = print,
    checkpoint_path: str | Path | None = None,
    stop: StopRequest | None = None,
) -> dict:
    """Train one model on one fold of one dataset; write its curve and record.

    With `checkpoint_path` (``ssmbench train`` passes ``paths.checkpoints/...``), the run
    resumes from the checkpoint there if it was made with these settings and code, writes
    one every ``checkpoint_every`` epochs and deletes it once the record is written. SIGTERM
    and SIGUSR1 stop the run within seconds (the batch or validation in flight abandoned and
    undone), with a checkpoint when it has a location: `TrainingInterrupted` (exit status
    75) is raised. `stop`: the caller's active `StopRequest`, which has caught the signals
    since before this call (``ssmbench train``: a signal during its start-up stops the run
    before training); without it the run catches them itself, from here on."""
    checkpoint = Path(checkpoint_path) if checkpoint_path is not None else None
    if stop is not None:
        stop.disarm()  # from here on the run decides where it stops
        stop.when = ""
        return _run_job(spec, Path(record_path), threads, log, checkpoint, stop)
    with StopRequest(log) as stop:
        return _run_job(spec, Path(record_path), threads, log, checkpoint, stop)


def _run_job(spec, record_path: Path, threads, log, checkpoint_path: Path | None, stop) -> dict:
    """The run's steps: set up its data and model, then fit an estimator, or train a deep
    model epoch by epoch, test its best weights and write the record."""
    run = set_up(spec, threads)
    for warning in run.spec["data_warnings"]:
        log(f"warning: {warning} (the record says so: data_warnings)")
    if is_estimator(run.model):  # QUANT, Hydra, ExtraTrees
        return run_estimator(
            run.spec, record_path, run.model, run.data.dataset, run.data.objective,
            (run.data.train_idx, run.data.val_idx, run.data.test_idx), run.data.test_sets,
            run.seed, threads, log, stop, run.data.val_split,
        )  # fmt: skip
    training = _DeepTraining(run, log, stop, checkpoint_path)
    training.resume()
    training.train()
    tested = training.test()
    return training.write_record(record_path, tested)


def validate_job(
    spec: dict,
    threads: int = 1,
    log: Callable[[str], None] = print,
    stop: StopRequest | None = None,
    on_validated: Callable[[int, float, float], None] | None = None,
) -> dict:
    """Train one run as `run_job` does, but score it on its validation rows only, and
    write nothing: a tuning trial (``ssmbench.train.tune``). The fold's test rows are never
    read (`run_setup.set_up` with ``validation_only``). Returns the best epoch's
    ``val_loss`` and ``val_accuracy`` (None for regression), ``best_epoch``, ``epochs_run``
    and ``train_seconds``. A signal raises `TrainingInterrupted` (no checkpoint: the trial is
    run again)."""
    run = set_up(spec, threads, validation_only=True)
    if is_estimator(run.model):
        raise ValueError(
            f"{spec['model']} is not trained epoch by epoch (an estimator): it has no "
            "validation curve to tune on; remove it from params.yaml tuning.searches"
        )

    def fit(stop: StopRequest) -> dict:
        training = _DeepTraining(run, log, stop, None)
        training.on_validated = on_validated
        training.train()
        best_loss, best_acc = training.state.best
        return {
            "val_loss": float(best_loss),
            "val_accuracy": None if run.data.objective.task != "classification" else best_acc,
            "best_epoch": training.state.best_epoch,
            "epochs_run": len(training.state.curve),
            "train_seconds": training.train_seconds,
        }

    if stop is not None:
        stop.disarm()
        stop.when = ""
        return fit(stop)
    with StopRequest(log) as own:
        return fit(own)


class _DeepTraining:
    """A deep model's run on one fold, as steps: `resume` (from a checkpoint, if any),
    `train` (the epoch loop: early stopping, checkpoints, stop on a signal), `test` (the
    best weights on the test fold and each test set) and `write_record`."""

    def __init__(self, run: RunSetup, log, stop, checkpoint_path: Path | None):
        from ssmbench.complexity import count_params, mmac

        self.run, self.data, self.model = run, run.data, run.model
        self.log, self.stop, self.checkpoint_path = log, stop, checkpoint_path
        settings = run.spec["settings"]
        meta = self.data.dataset.meta
        n_channels, length = int(meta["C"]), int(meta["L"])
        self.n_params = count_params(self.model)
        # "paper": counted as the MS4N paper's tables count (comparable with them); "full":
        # with the S4D convolution (ssmbench.complexity explains both).
        self.mmac = mmac(self.model, n_channels, length, convention="paper")
        self.mmac_full = mmac(self.model, n_channels, length, convention="full")
        self.model.to(run.device)
        if self.data.steps_source == self.data.dataset.STEPS_UNIT:
            self.log(
                f"warning: {run.spec['model']} takes time steps but {run.spec['dataset']} has "
                "no timestamps (no T.npy): it is given Δ = 1 at every step (the record says so)"
            )
        if self.data.mask_source == self.data.dataset.OBSERVED_ALL:
            self.log(
                f"warning: {run.spec['model']} takes the observation mask but "
                f"{run.spec['dataset']} has none (no M.npy): every value is marked observed "
                "(the record says so)"
            )
        self.optimizer = build_optimizer(self.model, settings)
        self.shuffle = torch.Generator().manual_seed(run.seed)
        self.rewind = BatchRewind(self.model)  # undoes a batch abandoned on a signal
        self.monitor = settings["monitor"]
        self.max_epochs = int(settings["max_epochs"])
        patience = settings["early_stopping_patience"]
        self.patience = None if patience is None else int(patience)
        self.val_interval = int(settings["val_interval"])
        self.clip = settings["grad_clip_norm"]
        # the test rows scored at each validated epoch, kept apart (a tuning trial has none)
        self.score_test = bool(settings["epoch_test_scores"]) and len(self.data.test_idx) > 0
        # a finite training loss this far above a know-nothing model's stops the run too
        self.loss_limit = LossLimit.for_task(
            settings["max_loss_ratio"], self.data.objective.task,
            self.data.dataset.meta.get("n_classes"),
            self.data.target_var(self.data.train_idx),
        )  # fmt: skip
        # rows per forward/backward within a batch (None: the whole batch): same gradient.
        # Refused for a model it would change wherever the run is; applied on the CPU only.
        asked = settings["micro_batch_rows"]
        check_micro_batching(self.model, asked, ckpt.run_name(run.spec))
        self.micro_batch_rows, not_applied = effective_micro_batch_rows(asked, run.device)
        self.micro_batches = micro_batches_record(asked, not_applied)
        # A checkpoint at the end of every `every`-th epoch, but not within `min_seconds` of
        # the last one (runs whose epochs take milliseconds would spend their time writing).
        self.every = int(settings["checkpoint_every"])
        self.min_seconds = float(settings["checkpoint_min_seconds"])
        self.n_batches = math.ceil(len(self.data.train_idx) / run.batch_size)
        self.name = ckpt.run_name(run.spec)
        self.digest = ckpt.settings_digest(run.spec) if checkpoint_path is not None else None
        self.state = ckpt.TrainingState()
        self.resumed = False
        self.started = time.perf_counter()  # training time is counted from here (`train`)
        self.last_save = self.started  # when the last checkpoint was written
        self.save_problem: str | None = None  # why the last checkpoint could not be written
        self.train_seconds = self.test_seconds = 0.0
        # called after each validated epoch with (epoch, val_loss, val_accuracy): a tuning
        # trial's heartbeat
        self.on_validated: Callable[[int, float, float], None] | None = None
        log(
            f"[{self.name}] seed={run.seed} device={run.device} train={len(self.data.train_idx)} "
            f"val={len(self.data.val_idx)} test={len(self.data.test_idx)} "
            f"batch={run.batch_size} params={self.n_params} MMac={self.mmac:.3f} "
            f"max_epochs={self.max_epochs} patience={self.patience} "
            f"val_interval={self.val_interval} val_split={self.data.val_split}"
        )
        if not_applied:
            log(f"warning: [{self.name}] {not_applied}; the record says so (micro_batches)")
        if self.score_test:
            log(
                f"[{self.name}] epoch_test_scores: the test split is scored at each validated "
                "epoch into its own file, which no selection, stopping rule or table reads"
            )
        data = self.data
        if data.reading is not None:
            trial = " (a tuning trial: through the memory map)" if not data.into_memory else ""
            log(f"[{self.name}] {data.reading.message()}{trial}")
        if data.val_split in ("shuffle", "per_class"):
            n_rows, val_classes = (
                len(data.train_idx) + len(data.val_idx),
                data.classes_in(data.val_idx),
            )
            log(
                f"warning: [{self.name}] no stratified validation split of "
                f"{settings['val_fraction']:g} of the {n_rows} training rows exists; "
                f"val_split_fallback {data.val_split!r} drew {len(data.val_idx)} rows "
                f"({len(val_classes)} of {meta.get('n_classes')} classes). The record says so."
            )

    # ------------------------------------------------------------------------- resume
    def resume(self) -> None:
        """Take up the state of this run's checkpoint, when there is one made with these
        settings and code (`ssmbench.train.checkpoint.load` discards any other)."""
        if self.checkpoint_path is None:
            return
        saved = ckpt.load(
            self.checkpoint_path, self.digest, self.model, self.optimizer, self.log,
            n_batches=self.n_batches, max_epochs=self.max_epochs,
        )  # fmt: skip
        if saved is None:
            return
        self.model.load_state_dict(saved["model"])
        self.optimizer.load_state_dict(saved["optimizer"])
        self.state = ckpt.TrainingState.from_checkpoint(saved)
        ckpt.set_rng_state(saved["rng"], self.shuffle, self.log)
        self.resumed = True
        state = self.state
        state.resumes.append(
            {"epoch": state.epoch, "step": state.step, "checkpoint_sha256": saved["content_sha256"]}
        )
        self.log(
            f"resumed from {self.checkpoint_path}: epoch {state.epoch}, batch {state.step}/"
            f"{self.n_batches} ({len(state.curve)} epochs done, best epoch {state.best_epoch})"
        )

    def _save(self, shuffle_state, rng: dict | None = None) -> bool:
        """Write the checkpoint of `self.state`, with the shuffling generator's state at
        the start of the state's epoch (and the random states `rng` where given, else the
        current ones). A checkpoint is optional work: one the file system refuses (full
        disk, read-only folder) is a warning in the log, and the run goes on. Returns
        whether it was written."""
        self.state.train_seconds = time.perf_counter() - self.started
        if rng is None:
            rng = ckpt.rng_state(self.shuffle)
            rng["shuffle"] = shuffle_state
        checkpoint = self.state.checkpoint(
            digest=self.digest, run=self.name, model=self.model, optimizer=self.optimizer,
            rng=rng,
        )  # fmt: skip
        try:
            ckpt.save(self.checkpoint_path, checkpoint)
        except ckpt.CheckpointWriteError as exc:
            self.save_problem = str(exc)
            earlier = self.checkpoint_path.is_file()
            self.log(
                f"warning: {exc}; "
                + ("the earlier checkpoint there is kept" if earlier else "no checkpoint kept")
                + ", training goes on (a stopped run resumes from "
                + ("that one)" if earlier else "the start)")
            )
            return False
        self.save_problem = None
        return True

    def _interrupted(self, saved=True, where=None) -> TrainingInterrupted:
        """The exception that stops the run on a signal, after logging what was kept."""
        where = where or self._where()
        path = self.checkpoint_path
        if path is None:
            what = "no checkpoint location, the next attempt starts over"
        elif saved and self.save_problem:
            what = f"{self.save_problem}, the next attempt " + (
                "resumes from the earlier one" if path.is_file() else "starts over"
            )
        elif saved:
            what = f"checkpoint written to {path}, the next attempt resumes from it"
        elif path.is_file():
            what = f"no new checkpoint; the checkpoint {path} is kept"
        else:
            what = "no checkpoint; the next attempt starts over"
        self.log(
            f"{self.stop.signal_name} at {where}: {what}; exiting with status "
            f"{ckpt.RESUME_EXIT_CODE}"
        )
        kept = path is not None and path.is_file()
        return TrainingInterrupted(self.stop.signum, path if kept else None)

    # -------------------------------------------------------------------------- train
    def train(self) -> None:
        """Epochs until `max_epochs` or early stopping, from where `self.state` stands."""
        state = self.state
        self.started = time.perf_counter() - state.train_seconds
        self.last_save = time.perf_counter()  # the last checkpoint (or training's start)
        last_saved = (state.epoch, state.step) if self.resumed else None  # what it holds
        if self.stop.requested:  # before any work: an existing checkpoint stays as it is
            raise self._interrupted(saved=False)
        first = True
        while state.epoch <= self.max_epochs and not state.stopped_early:
            train_loss, train_acc, epoch_start = self._train_epoch()
            if first:  # the scan the layers chose on this device (the record's "scan")
                self.log(f"[{self.name}] scan: {scan_of(self.model) or 'none (no scan layer)'}")
                first = False
            saved = self._end_epoch(train_loss, train_acc, epoch_start)
            if saved:
                last_saved = (state.epoch, 0)
            if self.stop.requested:
                raise self._interrupted()
        self.train_seconds = time.perf_counter() - self.started
        # Training is done: checkpoint that too, so a job stopped while testing (or reported
        # failed after writing its record, its outputs then removed by Snakemake) only tests
        # again on its next attempt.
        if self.checkpoint_path is not None and last_saved != (state.epoch, 0):
            self._save(self.shuffle.get_state())

    def _train_epoch(self) -> tuple[float, float, float]:
        """The training batches of `state.epoch` from batch `state.step` on: (train loss,
        train accuracy, the epoch's start time). On a signal it checkpoints after the batch
        in progress and raises `TrainingInterrupted`."""
        state, data, device = self.state, self.data, self.run.device
        batch_size = self.run.batch_size
        settings = self.run.spec["settings"]
        set_epoch_lr(self.optimizer, lr_factor_at(
            state.epoch - 1, self.max_epochs, settings["lr_schedule"], settings["warmup_epochs"],
        ))  # fmt: skip
        epoch_start = time.perf_counter()
        epoch_shuffle_state = self.shuffle.get_state()
        # a function of the generator's state at the epoch's start: a resumed epoch
        # rebuilds it (full shuffle in memory, block-shuffled from disk: batch_order)
        order = plan_order(data.reading, data.train_idx, self.shuffle)
        step = state.step
        if step and state.partial is not None:
            partial = state.partial
            loss_sum, second, n_rows = partial["loss_sum"], partial["second"], partial["n_rows"]
            epoch_start -= partial["seconds"]
        else:
            loss_sum, second, n_rows = 0.0, 0.0, 0
        self.model.train()
        batches = batches_of(
            data.objective, data.train_X(order), data.train_y(), data.mask,
            order[step * batch_size :], batch_size, inputs=data.inputs,
        )  # fmt: skip
        batches = iter(batches)
        self.rewind.start_epoch()
        while True:
            self.rewind.start_batch()
            try:  # a signal in here abandons the batch: nothing it did is kept
                with self.stop.abandoning():
                    batch = next(batches, None)
                    if batch is None:
                        break
                    xb, yb, mb, extra = batch
                    xb, yb = xb.to(device), yb.to(device)
                    mb = mb.to(device) if mb is not None else None
                    extra = {k: v.to(device) for k, v in extra.items()}
                    self.optimizer.zero_grad(set_to_none=True)
                    batch_loss, batch_second = backward_batch(
                        self.model, data.objective, xb, yb, mb, extra, self.micro_batch_rows,
                        # before the backward: a NaN gradient would reach the weights
                        lambda loss, inputs, _step=step: check_loss(
                            loss, f"[{self.name}] training, epoch {state.epoch}", _step,
                            self.n_batches, inputs, self.model, self.loss_limit),
                    )  # fmt: skip
            except BatchAbandoned:
                state.step = step
                state.partial = {"loss_sum": loss_sum, "second": second, "n_rows": n_rows,
                                 "seconds": time.perf_counter() - epoch_start}  # fmt: skip
                rng = self.rewind.undo(self.shuffle, epoch_shuffle_state)
                raise self._abandoned(epoch_shuffle_state, rng, "its batch in flight") from None
            if self.clip:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
            self.optimizer.step()
            loss_sum += batch_loss
            second += batch_second
            n_rows += len(yb)
            step += 1
            if self.stop.requested:  # the batch is done: save where the epoch stands, stop
                state.step = step
                state.partial = {"loss_sum": loss_sum, "second": second, "n_rows": n_rows,
                                 "seconds": time.perf_counter() - epoch_start}  # fmt: skip
                if self.checkpoint_path is not None:
                    self._save(epoch_shuffle_state)
                raise self._interrupted()
        train_loss, train_acc = data.objective.summarise(loss_sum, second, n_rows)
        # what a stop during the epoch's validation saves: every batch done
        self.epoch_done = (epoch_shuffle_state, {"loss_sum": loss_sum, "second": second,
                                                 "n_rows": n_rows})  # fmt: skip
        return train_loss, train_acc, epoch_start

    def _abandoned(self, shuffle_state, rng: dict | None, what: str) -> TrainingInterrupted:
        """The exception that stops the run on a signal that abandoned `what`, after
        checkpointing `self.state` (where it stood before it) with the random states `rng`
        (None: they cannot be restored to that point, so no checkpoint is written)."""
        if self.checkpoint_path is None:
            return self._interrupted(saved=False)
        if rng is None:
            self.log(
                f"warning: [{self.name}] Python's or NumPy's random state moved during the "
                f"epoch: the state before {what} cannot be restored exactly, no checkpoint "
                "written for it"
            )
            return self._interrupted(saved=False, where=self._where() + f", {what} abandoned")
        self._save(shuffle_state, rng)
        return self._interrupted(where=self._where() + f", {what} abandoned")

    def _where(self) -> str:
        return f"epoch {self.state.epoch}, batch {self.state.step}/{self.n_batches}"

    def _end_epoch(self, train_loss: float, train_acc: float, epoch_start: float) -> bool:
        """Validate the finished epoch when it is due (every `val_interval`-th and the
        last; the curve leaves the validation columns empty otherwise), note it in the
        curve and the early-stopping state, move the state to the next epoch and
        checkpoint it when due (on a signal, or periodically). Returns whether it wrote a
        checkpoint."""
        epoch = self.state.epoch
        if epoch % self.val_interval and epoch != self.max_epochs:
            return self._next_epoch(train_loss, train_acc, None, None, epoch_start)
        try:  # scoring draws no random number and changes no weight or statistic
            with self.stop.abandoning():
                val_loss, val_acc = self.data.score(
                    self.model, self.data.val_idx, self.run.batch_size, self.run.device,
                    f"[{self.name}] validation, epoch {epoch}",
                )  # fmt: skip
                if self.score_test:  # after validation, read by nothing that decides the run
                    scores = score_epoch(self.data, self.model, self.run.batch_size,
                                         self.run.device, epoch, self.name)  # fmt: skip
        except BatchAbandoned:  # saved as after the epoch's last batch: resumes validating
            shuffle_state, sums = self.epoch_done
            self.state.step = self.n_batches
            self.state.partial = {**sums, "seconds": time.perf_counter() - epoch_start}
            rng = ckpt.rng_state(self.shuffle)
            rng["shuffle"] = shuffle_state
            raise self._abandoned(shuffle_state, rng, "its validation") from None
        if self.score_test:
            self.state.test_scores.append(scores)
        return self._next_epoch(train_loss, train_acc, val_loss, val_acc, epoch_start)

    def _next_epoch(self, train_loss, train_acc, val_loss, val_acc, epoch_start) -> bool:
        """`_end_epoch`'s bookkeeping, with the epoch's validation scores (None: not
        validated this epoch)."""
        state, epoch = self.state, self.state.epoch
        row = {
            "epoch": epoch,
            "train_loss": train_loss,
            "train_accuracy": train_acc,
            "val_loss": val_loss,
            "val_accuracy": val_acc,
            "seconds": time.perf_counter() - epoch_start,
        }
        state.curve.append(row)
        validated = val_loss is not None
        if validated and _is_better(self.monitor, val_loss, val_acc, state.best):
            state.best, state.best_epoch, state.since_best = (val_loss, val_acc), epoch, 0
            state.best_state = copy.deepcopy(self.model.state_dict())
        else:
            state.since_best += 1
        if validated and self.on_validated is not None:
            self.on_validated(epoch, val_loss, val_acc)
        scores = f"val_loss={val_loss:.4f} val_acc={val_acc:.3f} " if validated else ""
        self.log(
            f"epoch {epoch:>4}/{self.max_epochs} train_loss={row['train_loss']:.4f} "
            f"train_acc={row['train_accuracy']:.3f} {scores}"
            f"best_epoch={state.best_epoch} ({row['seconds']:.2f}s)"
        )
        if validated and self.patience is not None and state.since_best >= self.patience:
            state.stopped_early = True
            self.log(
                f"early stop: no better {self.monitor} for {self.patience} epochs "
                f"(best epoch {state.best_epoch})"
            )
        state.epoch, state.step, state.partial = epoch + 1, 0, dict(ckpt.NO_BATCHES)
        periodic = (
            self.every
            and epoch % self.every == 0
            and time.perf_counter() - self.last_save >= self.min_seconds
        )
        if self.checkpoint_path is not None and (self.stop.requested or periodic):
            self._save(self.shuffle.get_state())
            self.last_save = time.perf_counter()
            return True
        return False

    # --------------------------------------------------------------------------- test
    def test(self) -> dict:
        """The best epoch's weights on the test fold and each separate test set."""
        self.model.load_state_dict(self.state.best_state)
        test_start = time.perf_counter()
        target_var = self.data.target_var if self.data.objective.task == "regression" else None
        tested = score_test_sets(self.data.objective, self._score, self.data.test_idx,
                       self.data.test_sets, self.log, target_var)  # fmt: skip
        self.test_seconds = time.perf_counter() - test_start
        self.log(f"test (best epoch {self.state.best_epoch}): loss={tested['test_loss']:.4f} "
                 f"error={tested['test_error']:.4f}")  # fmt: skip
        return tested

    def _score(self, rows) -> tuple[float, ...]:
        if self.stop.requested:  # stop before each test set; the record is not written
            where = f"testing (training done: {len(self.state.curve)} epochs)"
            raise self._interrupted(where=where)
        stage = f"[{self.name}] test (best epoch {self.state.best_epoch})"
        return self.data.score(self.model, rows, self.run.batch_size, self.run.device, stage,
                               with_mae=True)  # fmt: skip

    # ------------------------------------------------------------------------- record
    def write_record(self, record_path: Path, tested: dict) -> dict:
        """Write the curve and the record; then the checkpoint is deleted (kept when a
        signal came while the record was written)."""
        state, data, device = self.state, self.data, self.run.device
        record = write_run(
            self.run.spec, record_path, state.curve, data.objective,
            {
                **tested,
                "best_epoch": state.best_epoch,
                "best_val_loss": state.best[0],
                "best_val_accuracy": (
                    state.best[1] if data.objective.task == "classification" else None
                ),
                "epochs_run": len(state.curve),
                "max_epochs": self.max_epochs,
                "stopped_early": state.stopped_early,
                "batch_size": self.run.batch_size,
                "n_train": len(data.train_idx),
                "n_val": len(data.val_idx),
                "n_test": len(data.test_idx),
                "val_split": data.val_split,
                # how X was read: memory (full shuffle) or blocks (block-shuffled epochs)
                "reading": data.reading.describe() if data.reading is not None else None,
                "inputs": list(model_inputs(self.model)),
                "steps_source": data.steps_source,
                "mask_source": data.mask_source,
                "probes": run_probes(self.model, data.dataset.meta),
                "train_seconds": self.train_seconds,
                "test_seconds": self.test_seconds,
                "params": self.n_params,
                "mmac": self.mmac,
                "mmac_full": self.mmac_full,
                "device": str(device),
                "device_name": torch.cuda.get_device_name() if device.type == "cuda" else None,
                "threads": torch.get_num_threads(),
                # the scan path(s) the model's layers ran (ssmbench.models.scan_paths); null:
                # no scan layer
                "scan": scan_of(self.model),
                "micro_batches": self.micro_batches,
                # each resume of this run: the epoch and batch it resumed at and the sha256
                # of the checkpoint it read ([]: it ran from start to end in one go)
                "resumed": state.resumes,
            },
            test_scores=state.test_scores if self.score_test else None,
        )  # fmt: skip
        if self.stop.requested and self.checkpoint_path is not None:
            # Stopped while the record was being written: the job may still be reported as
            # failed (the signal reaches its shell too) and its outputs removed; the retry
            # then resumes from the finished training instead of starting over.
            self.log(
                f"{self.stop.signal_name} while the record was written: checkpoint "
                f"{self.checkpoint_path} kept, so a retry of this job only tests again"
            )
        else:
            ckpt.discard(self.checkpoint_path, self.log)
        return record
