"""How the engine rides out faults that need a person instead of crashing or training on.

The Engine (engine/runtime/process.py) builds one `Recovery` and calls it; it owns what the
faults are about: the run's files at epoch ends (the metrics rows, the checkpoints and the
last one written) and its own flags (poisoned weights, a checkpoint the disk refused, the
copy of the last finished epoch). Everything else it is handed through its constructor.

Non-finite values (engine/shared/health.py) and a full disk pause the run with an error
event saying what happened and how to go on; `resume` then reloads the last good checkpoint
(poisoned weights) or writes what the disk refused (the pending metrics rows, the due
checkpoint), and pauses again if that still fails. A periodic checkpoint failing for any
other reason is reported and training goes on, like the `checkpoint` command. Poisoned
weights are never checkpointed. An env worker lost mid-collection, or a learner rank lost
mid-epoch, leaves a checkpoint of the last finished epoch and the command that resumes it.

Several learner ranks (engine/algo/distributed.py): only rank 0 writes (metrics, checkpoints), so a
full disk pauses rank 0 alone and the others wait for it in the next broadcast; non-finite
values stop every rank at once (the trainer's checks agree), and what rank 0 finds on disk
(is there a checkpoint, which) is handed to the others, so all take the same branch.
"""

from __future__ import annotations

import copy
import re
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from puffer_tui.engine.runtime.metrics import MetricsWriter, truncate_after
from puffer_tui.engine.runtime.wandb_tracker import TrackerError
from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.health import NonFiniteError, is_disk_full
from puffer_tui.engine.shared.protocol import LIVE_STATES, RunState


class Pauses(Protocol):
    """What Recovery asks of the command queue (engine/runtime/commands.py)."""

    def pause_for(self, text: str) -> None: ...

    def at_boundary(self) -> None: ...


class Recovery:
    """`trainer()` is None until the Engine has built it; `write_status()` writes status.json
    now; `open_metrics(run_dir, **options)` opens the metrics writer (rank 0's)."""

    def __init__(self, run_dir: Path, world, events, state, commands: Pauses,
                 trainer: Callable[[], object | None], write_status: Callable[[], None],
                 open_metrics: Callable[..., MetricsWriter] = MetricsWriter):
        self.run_dir = run_dir
        self.world = world
        self.events = events
        self.state = state  # RunControl: paused, stop_requested, stop_checkpoint, withdraw_stop
        self.commands = commands
        self._trainer = trainer
        self._write_status = write_status
        self._open_metrics = open_metrics
        self.metrics: MetricsWriter | None = None  # rank 0's, from open_metrics_writer()
        self._metrics_options: dict = {}  # how it was opened: a reload reopens it the same way
        self.last_checkpoint: tuple[int, Path] | None = None  # (global_step, path)
        self.poisoned = False  # the weights hold NaN/inf: reload the last checkpoint on resume
        self.checkpoint_due = False  # a periodic checkpoint the full disk refused
        self.finished_epoch: dict | None = None  # DDP rank 0 mid-epoch: see before_epoch

    @property
    def trainer(self):
        return self._trainer()

    # -- the files of a healthy run -----------------------------------------------------------

    def open_metrics_writer(self, **options) -> MetricsWriter | None:
        """Rank 0 writes the metrics; the other ranks have none."""
        if self.world.is_main:
            self.metrics = self._open_metrics(self.run_dir, **options)
            self._metrics_options = options
        return self.metrics

    def restore(self, fallback: bool) -> Path:
        """Load the latest checkpoint into the trainer (`fallback`: the previous one when the
        latest is corrupt); rank 0 drops the metric rows after it and says so."""
        def skipped(path, error):
            self.events.warning(f"{error}; falling back to the previous checkpoint")

        trainer = self.trainer
        path, state = self._load_latest(fallback, skipped)
        trainer.load_state_dict(state)
        self.last_checkpoint = (trainer.global_step, path)
        if not self.world.is_main:
            return path
        dropped = truncate_after(self.run_dir, trainer.epoch)
        note = f" ({dropped} metric rows after it dropped)" if dropped else ""
        self.events.info(f"resumed from {path.name} at step {trainer.global_step}, "
                         f"epoch {trainer.epoch}{note}")
        if getattr(trainer, "inexact_resume", None):  # e.g. Gymnasium envs
            self.events.warning(f"resume is not exact: {trainer.inexact_resume}; "
                                "episodes start afresh (docs/exact-resume.md)")
        if getattr(trainer, "fresh_moments", None):  # an old encoding's checkpoint
            self.events.warning(trainer.fresh_moments)
        return path

    def save_checkpoint(self) -> Path | None:
        """Write a checkpoint of the trainer now (main thread, at an epoch boundary). Rank 0
        writes; the other ranks have nothing to write (None)."""
        if not self.world.is_main:
            return None
        trainer = self.trainer
        step = trainer.global_step
        if self.last_checkpoint and self.last_checkpoint[0] == step \
                and self.last_checkpoint[1].exists():
            return self.last_checkpoint[1]  # nothing changed since the last one
        path = ckpt.save_checkpoint(self.run_dir, trainer.state_dict())
        self.last_checkpoint = (step, path)
        self.events.info(f"checkpoint saved: {path.name} (step {step}, epoch {trainer.epoch})")
        self._write_status()
        return path

    def persist(self, row: dict, checkpoint_interval: int) -> None:
        """The epoch's metrics row and periodic checkpoint; a full disk pauses the run."""
        try:
            if self.metrics is not None:  # rank 0's
                self.metrics.write(row)
        except OSError as e:
            if not is_disk_full(e):
                raise
            self._pause_for_disk(rd.METRICS_FILE, e)
        if checkpoint_interval and self.trainer.epoch % checkpoint_interval == 0:
            self._periodic_checkpoint()

    def close(self, exit_code: int) -> None:
        if self.metrics is not None:
            self.metrics.close(exit_code=exit_code)  # W&B marks a crash failed

    # -- paused faults: non-finite values, a full disk ----------------------------------------

    def _periodic_checkpoint(self) -> None:
        try:
            self.save_checkpoint()
            self.checkpoint_due = False
        except Exception as e:  # like the checkpoint command: a failed save never kills the run
            if is_disk_full(e):
                self.checkpoint_due = True
                self._pause_for_disk("a checkpoint", e)
            else:
                self.checkpoint_due = False
                self.events.error(f"periodic checkpoint failed, training goes on: {e}\n"
                                  f"{traceback.format_exc()}")

    def _pause_for_disk(self, what: str, error: BaseException) -> None:
        if self.state.paused:
            return  # one pause, one message
        self.commands.pause_for(
            f"disk full writing {what}: free space and resume (training is paused at step "
            f"{self.trainer.global_step}; nothing is lost) [{_first_line(error)}]")
        self._write_status()

    def pause_for_non_finite(self, error: NonFiniteError) -> None:
        self.poisoned = not error.weights_finite
        _zero_non_finite_state(self.trainer)
        last = self._latest_checkpoint()
        if not self.poisoned:
            how = "resume to go on (the weights are unharmed)"
        elif last is not None:
            how = f"the weights are not finite: resume reloads the last good checkpoint {last.name}"
        else:
            how = "the weights are not finite and there is no checkpoint to go back to: stop the run"
        self.commands.pause_for(f"training paused at step {self.trainer.global_step}: "
                                f"{error.source}; {how}")
        self._write_status()

    def recover(self) -> bool:
        """After a resume: reload good weights, write what the full disk refused. False when
        that failed again and the run is paused once more (on any rank: every rank then goes
        back to the epoch boundary together instead of into the next epoch's collectives)."""
        return not self.world.any(not self._recover_here())

    def _recover_here(self) -> bool:
        if self.poisoned:
            if self._latest_checkpoint() is None:
                self.commands.pause_for("the weights are not finite and there is no checkpoint "
                                        "to go back to: stop the run")
                return False
            self._reload_last_good()
        try:
            if self.metrics is not None:
                self.metrics.flush_pending()
        except OSError as e:
            if not is_disk_full(e):
                raise
            self._pause_for_disk(rd.METRICS_FILE, e)
            return False
        if self.checkpoint_due:
            self._periodic_checkpoint()
            if self.checkpoint_due:
                return False
        return True

    def _reload_last_good(self) -> None:
        trainer = self.trainer
        path, state = self._load_latest(True)
        trainer.load_state_dict(state)
        self.poisoned = False
        self.last_checkpoint = (trainer.global_step, path)
        if self.metrics is None:
            return  # another rank: rank 0 owns the files and says what happened
        self.metrics.close()
        dropped = truncate_after(self.run_dir, trainer.epoch)
        self.metrics = self._reopen_metrics()
        self.events.info(f"reloaded {path.name} (step {trainer.global_step}, epoch "
                         f"{trainer.epoch}); {dropped} metric rows after it dropped")

    def _reopen_metrics(self) -> MetricsWriter:
        """The writer as the engine first opened it (its config: W&B resumes the same run);
        W&B failing to come back (e.g. the network gone) drops it, not the run."""
        options = self._metrics_options
        try:
            return self._open_metrics(self.run_dir, **options)
        except TrackerError as e:
            self.events.warning(f"Weights & Biases could not resume after the reload ({e}); "
                                f"metrics.jsonl and TensorBoard go on")
            return self._open_metrics(self.run_dir, **{**options, "config": None})

    def final_checkpoint(self) -> Path | None:
        """Checkpoint at the end; a full disk pauses until space is freed (resume) or the
        person gives up (stop without a checkpoint). Poisoned weights are never saved."""
        while True:
            if self.poisoned:
                last = self._latest_checkpoint()
                self.events.warning("no final checkpoint: the weights are not finite; the last "
                                    f"good checkpoint is {last.name if last else 'none'}")
                return None
            try:
                return self.save_checkpoint()
            except Exception as e:
                if not is_disk_full(e):
                    raise
                self.state.withdraw_stop()
                self.commands.pause_for(
                    f"disk full writing the final checkpoint: free space and resume, or stop "
                    f"without a checkpoint [{_first_line(e)}]")
                self._write_status()
                self.commands.at_boundary()  # waits for resume or stop
                if self.state.stop_requested and not self.state.stop_checkpoint:
                    return None

    # -- lost processes: an env worker, a learner rank ----------------------------------------

    def after_worker_death(self, error, epoch_start: tuple) -> Path | None:
        """An env worker or Ray actor died mid-collection: the weights, optimizer and
        normalization are those of the last finished epoch, intact. Save them (as of that
        epoch: the partial collection is dropped; the envs' state cannot be asked of a dead
        worker, so a resume starts episodes afresh) and say which worker and how to go on.
        One rank's envs only: under DDP the other ranks learn nothing of it here."""
        trainer = self.trainer
        trainer.global_step, trainer.epoch, trainer.uptime = epoch_start
        who = f"env worker {error.worker}" if hasattr(error, "worker") else "an env worker"
        path = None
        if self.world.is_main and trainer.epoch > 0:
            try:
                path = ckpt.save_checkpoint(
                    self.run_dir, trainer.state_dict(episodes_afresh=f"{who} died"))
                self.last_checkpoint = (trainer.global_step, path)
            except Exception as e:  # the disk too: say so, the worker's error still ends it
                self.events.error(f"could not save a checkpoint after {who} died: {e}")
        saved = (f"checkpoint of epoch {trainer.epoch} (step {trainer.global_step:,}) saved: "
                 f"{path.name}; resume with `puffer-tui train --resume {self.run_dir}`"
                 if path else "no checkpoint (no epoch had finished)")
        self.events.error(f"{who} died: {getattr(error, 'message', error)}; {saved}")
        return path

    def before_epoch(self) -> None:
        """Rank 0 under DDP: a copy of the trainer's state. A rank lost mid-epoch breaks the
        next collective, and by then rank 0 may have learnt from some of the epoch's
        minibatches: the checkpoint it saves is this copy, the last finished epoch. (One copy
        of the weights and optimizer moments an epoch; none in one process.)"""
        if not (self.world.enabled and self.world.is_main):
            self.finished_epoch = None
            return
        self.finished_epoch = copy.deepcopy(
            self.trainer.state_dict(episodes_afresh="a learner rank died"))

    def epoch_finished(self) -> None:
        self.finished_epoch = None  # the trainer is at a finished epoch again

    def after_lost_rank(self, error) -> str:
        """Another learner rank is gone (killed, crashed, its machine lost) and the collectives
        cannot go on: the error to end with, naming the rank. Rank 0 saves a checkpoint of the
        last finished epoch (DDP kept every rank's weights identical: nothing of the learning
        went with the lost rank). When rank 0 is the one lost, a surviving rank makes
        status.json final, since rank 0 can no longer say how the run ended."""
        lost = self.world.lost_peers()
        who = "; ".join(f"rank {rank} died (pid {pid} on {node})" for rank, pid, node in lost) \
            or "a learner rank failed or its connection broke"
        why = f"{who} [{_transport_detail(error)}]"
        resume = f"`puffer-tui train --resume {self.run_dir}`"
        if self.world.is_main:
            path = self._checkpoint_of_last_epoch(who)
            trainer = self.trainer
            step, epoch = (trainer.global_step, trainer.epoch) if trainer else (0, 0)
            saved = (f"checkpoint of epoch {epoch} (step {step:,}) saved: {path.name}; resume "
                     f"with {resume}" if path else "no checkpoint (no epoch had finished)")
            return f"another learner rank failed: {why}; {saved}"
        if not any(rank == 0 for rank, _, _ in lost):
            return f"another learner rank failed: {why}"
        last = ckpt.latest_checkpoint(self.run_dir)
        how = f"the last checkpoint is {last.name}: resume with {resume}" if last \
            else "no checkpoint was saved"
        message = f"{who}: the run ended; {how}"
        self._final_status_for_lost_main(message)
        return message

    def _checkpoint_of_last_epoch(self, why: str) -> Path | None:
        trainer = self.trainer
        if trainer is None:
            return None
        finished = self.finished_epoch
        if finished is not None:  # mid-epoch: the copy; the envs have moved on
            trainer.global_step, trainer.epoch, trainer.uptime = (
                finished[key] for key in ("global_step", "epoch", "uptime"))
        if trainer.epoch == 0:
            return None
        if self.last_checkpoint and self.last_checkpoint[0] == trainer.global_step \
                and self.last_checkpoint[1].exists():
            return self.last_checkpoint[1]  # a periodic one of that very epoch, and exact
        try:  # between epochs: all of it, the envs' state too
            state = {**finished, "episodes_afresh": why} if finished is not None \
                else trainer.state_dict()
            path = ckpt.save_checkpoint(self.run_dir, state)
        except Exception as e:  # the disk too: say so, the lost rank's error still ends it
            self.events.error(f"could not save a checkpoint after {why}: {e}")
            return None
        self.last_checkpoint = (trainer.global_step, path)
        return path

    def _final_status_for_lost_main(self, message: str) -> None:
        """status.json as rank 0 left it, made final: state error, with why."""
        status = rd.read_status(self.run_dir)
        if status.get("state") not in LIVE_STATES or status.get("pid") != self.world.peers[0][0]:
            return  # rank 0 said how it ended, or the status is another engine's
        try:
            rd.write_json_atomic(self.run_dir / rd.STATUS_FILE, {
                **status, "state": RunState.ERROR, "error": message, "updated": time.time()})
        except OSError as e:
            self.events.error(f"could not write {rd.STATUS_FILE}: {e}")

    # -- what rank 0 finds on disk, handed to every rank --------------------------------------

    def _latest_checkpoint(self) -> Path | None:
        """The newest checkpoint as rank 0 sees it (every rank gets the same answer)."""
        world = self.world
        return world.broadcast(ckpt.latest_checkpoint(self.run_dir) if world.is_main else None)

    def _load_latest(self, fallback: bool, on_skip=None):
        """(path, state) of the latest checkpoint: rank 0 reads it and hands it to the others
        (they need not see the run dir's disk)."""
        world = self.world
        loaded = ckpt.load_latest(self.run_dir, fallback=fallback, on_skip=on_skip) \
            if world.is_main else None
        return world.broadcast(loaded)


def tidy_leftovers(run_dir: Path) -> None:
    """What a killed engine left behind: loose permissions of an older run dir, temp files
    of an interrupted checkpoint, forkserver sockets in the temp directory."""
    # lazy: pulls gymnasium, the vectorizer, which this module does not load
    from puffer_tui.engine.vec.mp.worker_exit import remove_stale_forkserver_dirs

    rd.restrict_permissions(run_dir)
    directory = ckpt.checkpoint_dir(run_dir)
    if directory.is_dir():
        ckpt.remove_stale_temp_files(directory)
    remove_stale_forkserver_dirs()


def _zero_non_finite_state(trainer) -> None:
    """NaN observations leave NaN in the recurrent state of those agents: start them afresh."""
    state = getattr(trainer, "lstm_state", None)
    if state is None:
        return
    import torch

    for tensor in state:
        bad = ~torch.isfinite(tensor).all(-1)
        tensor[bad] = 0.0


def _transport_detail(error: BaseException) -> str:
    """gloo's error, less its source path and its boilerplate advice: "Read error
    [127.0.0.1]:4765: Connection reset by peer"."""
    text = re.sub(r"^\[[^\]]*\]\s*", "", str(error).strip().split("\n")[0])
    return text.split(". This is typically caused")[0][:200]


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"
