"""How the engine rides out faults that need a person instead of crashing or training on.

Engine (engine/runtime/process.py) mixes this in. Non-finite values (engine/shared/health.py) and a full disk
pause the run with an error event saying what happened and how to go on; `resume` then
reloads the last good checkpoint (poisoned weights) or writes what the disk refused (the
pending metrics rows, the due checkpoint), and pauses again if that still fails. A periodic
checkpoint failing for any other reason is reported and training goes on, like the
`checkpoint` command. Poisoned weights are never checkpointed.

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
from pathlib import Path

from puffer_tui.engine.runtime.metrics import MetricsWriter, truncate_after
from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.config import Config
from puffer_tui.engine.shared.health import NonFiniteError, is_disk_full


class FaultHandling:
    """Needs: run_dir, world, trainer, state, commands, events, metrics (None on ranks > 0),
    last_checkpoint, save_checkpoint(), write_status(); sets _poisoned and _checkpoint_due (False at start)."""

    _poisoned = False  # the weights hold NaN/inf: reload the last checkpoint on resume
    _checkpoint_due = False  # a periodic checkpoint the full disk refused
    _finished_epoch = None  # DDP rank 0 mid-epoch: the trainer's state before it (_learner_copy)

    def _persist(self, row: dict) -> None:
        """The epoch's metrics row and periodic checkpoint; a full disk pauses the run."""
        try:
            if self.metrics is not None:  # rank 0's
                self.metrics.write(row)
        except OSError as e:
            if not is_disk_full(e):
                raise
            self._pause_for_disk(rd.METRICS_FILE, e)
        interval = self.config.train.checkpoint_interval
        if interval and self.trainer.epoch % interval == 0:
            self._periodic_checkpoint()

    def _periodic_checkpoint(self) -> None:
        try:
            self.save_checkpoint()
            self._checkpoint_due = False
        except Exception as e:  # like the checkpoint command: a failed save never kills the run
            if is_disk_full(e):
                self._checkpoint_due = True
                self._pause_for_disk("a checkpoint", e)
            else:
                self._checkpoint_due = False
                self.events.error(f"periodic checkpoint failed, training goes on: {e}\n"
                                  f"{traceback.format_exc()}")

    def _pause_for_disk(self, what: str, error: BaseException) -> None:
        if self.state.paused:
            return  # one pause, one message
        self.commands.pause_for(
            f"disk full writing {what}: free space and resume (training is paused at step "
            f"{self.trainer.global_step}; nothing is lost) [{_first_line(error)}]")
        self.write_status(force=True)

    def _pause_for_non_finite(self, error: NonFiniteError) -> None:
        self._poisoned = not error.weights_finite
        _zero_non_finite_state(self.trainer)
        last = self._latest_checkpoint()
        if not self._poisoned:
            how = "resume to go on (the weights are unharmed)"
        elif last is not None:
            how = f"the weights are not finite: resume reloads the last good checkpoint {last.name}"
        else:
            how = "the weights are not finite and there is no checkpoint to go back to: stop the run"
        self.commands.pause_for(f"training paused at step {self.trainer.global_step}: "
                                f"{error.source}; {how}")
        self.write_status(force=True)

    def _recover(self) -> bool:
        """After a resume: reload good weights, write what the full disk refused. False when
        that failed again and the run is paused once more (on any rank: every rank then goes
        back to the epoch boundary together instead of into the next epoch's collectives)."""
        return not self.world.any(not self._recover_here())

    def _recover_here(self) -> bool:
        if self._poisoned:
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
        if self._checkpoint_due:
            self._periodic_checkpoint()
            if self._checkpoint_due:
                return False
        return True

    def _reload_last_good(self) -> None:
        path, state = self._load_latest(True)
        self.trainer.load_state_dict(state)
        self._poisoned = False
        self.last_checkpoint = (self.trainer.global_step, path)
        if self.metrics is None:
            return  # another rank: rank 0 owns the files and says what happened
        self.metrics.close()
        dropped = truncate_after(self.run_dir, self.trainer.epoch)
        self.metrics = MetricsWriter(self.run_dir)
        self.events.info(f"reloaded {path.name} (step {self.trainer.global_step}, epoch "
                         f"{self.trainer.epoch}); {dropped} metric rows after it dropped")

    def _final_checkpoint(self) -> Path | None:
        """Checkpoint at the end; a full disk pauses until space is freed (resume) or the
        person gives up (stop without a checkpoint). Poisoned weights are never saved."""
        while True:
            if self._poisoned:
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
                self.write_status(force=True)
                self.commands.at_boundary()  # waits for resume or stop
                if self.state.stop_requested and not self.state.stop_checkpoint:
                    return None


    def _checkpoint_after_worker_death(self, error, epoch_start: tuple) -> Path | None:
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

    def _learner_copy(self) -> dict | None:
        """Rank 0 under DDP, before each epoch: a copy of the trainer's state. A rank lost
        mid-epoch breaks the next collective, and by then rank 0 may have learnt from some of
        the epoch's minibatches: the checkpoint it saves is this copy, the last finished
        epoch. (One copy of the weights and optimizer moments an epoch; none in one process.)"""
        if not (self.world.enabled and self.world.is_main):
            return None
        return copy.deepcopy(self.trainer.state_dict(episodes_afresh="a learner rank died"))

    def _after_lost_rank(self, error) -> str:
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
            step, epoch = (self.trainer.global_step, self.trainer.epoch) if self.trainer else (0, 0)
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
        if self._finished_epoch is not None:  # mid-epoch: the copy; the envs have moved on
            trainer.global_step, trainer.epoch, trainer.uptime = (
                self._finished_epoch[key] for key in ("global_step", "epoch", "uptime"))
        if trainer.epoch == 0:
            return None
        if self.last_checkpoint and self.last_checkpoint[0] == trainer.global_step \
                and self.last_checkpoint[1].exists():
            return self.last_checkpoint[1]  # a periodic one of that very epoch, and exact
        try:  # between epochs: all of it, the envs' state too
            state = {**self._finished_epoch, "episodes_afresh": why} \
                if self._finished_epoch is not None else trainer.state_dict()
            path = ckpt.save_checkpoint(self.run_dir, state)
        except Exception as e:  # the disk too: say so, the lost rank's error still ends it
            self.events.error(f"could not save a checkpoint after {why}: {e}")
            return None
        self.last_checkpoint = (trainer.global_step, path)
        return path

    def _final_status_for_lost_main(self, message: str) -> None:
        """status.json as rank 0 left it, made final: state error, with why."""
        from puffer_tui.engine.shared.protocol import LIVE_STATES, RunState

        status = rd.read_status(self.run_dir)
        if status.get("state") not in LIVE_STATES or status.get("pid") != self.world.peers[0][0]:
            return  # rank 0 said how it ended, or the status is another engine's
        try:
            rd.write_json_atomic(self.run_dir / rd.STATUS_FILE, {
                **status, "state": RunState.ERROR, "error": message, "updated": time.time()})
        except OSError as e:
            self.events.error(f"could not write {rd.STATUS_FILE}: {e}")

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


def check_memory(config: Config) -> None:
    from puffer_tui.engine.startup.memory_estimate import check_memory as check

    check(config)


def tidy_leftovers(run_dir: Path) -> None:
    """What a killed engine left behind: loose permissions of an older run dir, temp files
    of an interrupted checkpoint, forkserver sockets in the temp directory."""
    from puffer_tui.engine.vec.lifecycle import remove_stale_forkserver_dirs

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
