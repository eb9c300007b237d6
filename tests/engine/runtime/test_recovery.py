"""The engine's Recovery on its own (engine/runtime/recovery.py): no engine process, no envs;
a small trainer, command queue, event log and world stand in for the Engine's parts, and
checkpoints and metrics are real files in a temp run dir. Each test is one decision: what is
paused, said, reloaded or saved after a fault. tests/engine/runtime/test_recovery_*.py check
the same faults end to end, in real engine processes."""

from __future__ import annotations

import errno
import functools
import json

import pytest
import torch

from puffer_tui.engine.algo.distributed import World
from puffer_tui.engine.runtime.metrics import MetricsWriter
from puffer_tui.engine.runtime.recovery import Recovery
from puffer_tui.engine.runtime.run_control import RunControl
from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.health import NonFiniteError
from puffer_tui.engine.shared.metrics_file import read_metrics
from puffer_tui.engine.shared.protocol import RunState
from puffer_tui.engine.vec.errors import WorkerError

STEPS = 100  # agent steps an epoch of the fake trainer


class Trainer:
    """What Recovery reads of the trainer: step, epoch, uptime, state in and out."""

    def __init__(self, epoch: int = 0):
        self.global_step, self.epoch, self.uptime = epoch * STEPS, epoch, float(epoch)
        self.weights = torch.full((3,), float(epoch))
        self.lstm_state = None

    def run_epoch(self, weights: float | None = None) -> dict:
        self.global_step += STEPS
        self.epoch += 1
        self.uptime += 1.0
        self.weights = torch.full((3,), float(self.epoch if weights is None else weights))
        return {"epoch": self.epoch, "global_step": self.global_step, "uptime": self.uptime}

    def state_dict(self, episodes_afresh: str | None = None) -> dict:
        state = {"global_step": self.global_step, "epoch": self.epoch, "uptime": self.uptime,
                 "weights": self.weights.clone()}
        if episodes_afresh:
            state["episodes_afresh"] = episodes_afresh
        return state

    def load_state_dict(self, state: dict) -> None:
        self.global_step, self.epoch = state["global_step"], state["epoch"]
        self.uptime, self.weights = state["uptime"], state["weights"].clone()


class Events:
    def __init__(self):
        self.said: list[tuple[str, str]] = []

    def info(self, text):
        self.said.append(("info", text))

    def warning(self, text):
        self.said.append(("warning", text))

    def error(self, text):
        self.said.append(("error", text))

    def texts(self, level: str) -> list[str]:
        return [text for lvl, text in self.said if lvl == level]


class Commands:
    """The queue's pause (as CommandQueue.pause_for: the state pauses, an error event says
    why); at_boundary plays the person's answer to a paused final checkpoint."""

    def __init__(self, state: RunControl, events: Events, person=None):
        self.state, self.events, self.person = state, events, person
        self.pauses: list[str] = []

    def pause_for(self, text: str) -> None:
        self.state.pause()
        self.pauses.append(text)
        self.events.error(text)

    def at_boundary(self) -> None:
        self.person(self.state)


class Metrics(MetricsWriter):
    """The real writer (metrics.jsonl in the run dir), whose disk fills on request."""

    full = False

    def flush_pending(self):
        if Metrics.full:
            raise OSError(errno.ENOSPC, "No space left on device")
        super().flush_pending()


class LostPeers(World):
    """Two learner ranks, the other one gone: this rank's view."""

    def __init__(self, rank: int, lost: list[tuple[int, int, str]]):
        super().__init__(rank=rank, size=2)
        self.peers = [(4242, "host0"), (4343, "host0")]
        self._lost = lost

    def lost_peers(self, wait: float = 0.0):
        return self._lost

    def broadcast(self, value):
        return value

    def any(self, flag: bool) -> bool:
        return flag


@pytest.fixture(autouse=True)
def _disk_has_room():
    Metrics.full = False
    yield
    Metrics.full = False


def build(tmp_path, trainer=None, world=None, person=None):
    run_dir = tmp_path / "run"
    run_dir.mkdir(parents=True)
    trainer = trainer or Trainer()
    events, state = Events(), RunControl()
    state.enter(RunState.RUNNING)
    commands = Commands(state, events, person)
    statuses = []
    recovery = Recovery(run_dir, world or World(), events, state, commands,
                        trainer=lambda: trainer, write_status=lambda: statuses.append(state.paused),
                        open_metrics=functools.partial(Metrics, tensorboard=False))
    recovery.open_metrics_writer()
    return recovery, trainer, events, commands, statuses


def train(recovery, trainer, epochs: int, interval: int = 0) -> None:
    for _ in range(epochs):
        recovery.before_epoch()
        row = trainer.run_epoch()
        recovery.epoch_finished()
        recovery.persist(row, interval)


def epochs_in_metrics(run_dir) -> list[int]:
    return [row["epoch"] for row in read_metrics(run_dir)]


def test_a_non_finite_loss_pauses_and_resume_goes_on_with_the_same_weights(tmp_path):
    recovery, trainer, events, commands, statuses = build(tmp_path)
    train(recovery, trainer, 2, interval=1)
    recovery.pause_for_non_finite(NonFiniteError("value_loss is nan", weights_finite=True))
    assert recovery.state.paused and statuses[-1] is True  # status.json says paused at once
    assert commands.pauses == ["training paused at step 200: value_loss is nan; resume to go "
                               "on (the weights are unharmed)"]
    assert not recovery.poisoned
    recovery.state.resume()
    assert recovery.recover()  # nothing to reload
    assert trainer.epoch == 2 and not events.texts("warning")


def test_poisoned_weights_reload_the_last_good_checkpoint_on_resume(tmp_path):
    recovery, trainer, events, commands, _ = build(tmp_path)
    train(recovery, trainer, 2, interval=2)  # a checkpoint at epoch 2
    good = ckpt.latest_checkpoint(recovery.run_dir)
    train(recovery, trainer, 1)  # epoch 3: its row written, no checkpoint
    trainer.weights[0] = float("nan")
    recovery.pause_for_non_finite(NonFiniteError("gradients are inf", weights_finite=False))
    assert recovery.poisoned
    assert commands.pauses[-1] == (f"training paused at step 300: gradients are inf; the weights "
                                   f"are not finite: resume reloads the last good checkpoint "
                                   f"{good.name}")
    # the poisoned weights are never saved: not on a checkpoint command, not at the end
    assert recovery.final_checkpoint() is None
    assert ckpt.list_checkpoints(recovery.run_dir) == [good]
    recovery.state.resume()
    assert recovery.recover()
    assert (trainer.global_step, trainer.epoch) == (200, 2)
    assert torch.equal(trainer.weights, torch.full((3,), 2.0)) and not recovery.poisoned
    assert recovery.last_checkpoint == (200, good)
    # the rows after the checkpoint are dropped, and the new writer appends after it
    assert epochs_in_metrics(recovery.run_dir) == [1, 2]
    assert f"reloaded {good.name} (step 200, epoch 2); 1 metric rows after it dropped" in \
        events.texts("info")
    train(recovery, trainer, 1)
    assert epochs_in_metrics(recovery.run_dir) == [1, 2, 3]


def test_poisoned_weights_with_no_checkpoint_stay_paused(tmp_path):
    recovery, trainer, events, commands, _ = build(tmp_path)
    train(recovery, trainer, 1)
    recovery.pause_for_non_finite(NonFiniteError("env rows 3", weights_finite=False))
    assert commands.pauses[-1].endswith("there is no checkpoint to go back to: stop the run")
    recovery.state.resume()
    assert not recovery.recover()  # paused again: there is nothing to go back to
    assert recovery.state.paused and recovery.poisoned and len(commands.pauses) == 2
    assert recovery.final_checkpoint() is None
    assert events.texts("warning")[-1].endswith("the last good checkpoint is none")


def test_recurrent_state_made_non_finite_starts_afresh(tmp_path):
    recovery, trainer, *_ = build(tmp_path)
    hidden = torch.ones(4, 2)
    hidden[1, 0] = float("nan")
    trainer.lstm_state = (hidden, torch.ones(4, 2))
    recovery.pause_for_non_finite(NonFiniteError("env rows 1", weights_finite=True))
    assert torch.equal(hidden[1], torch.zeros(2)) and torch.equal(hidden[0], torch.ones(2))


def test_a_full_disk_keeps_the_rows_and_pauses_once_until_there_is_room(tmp_path):
    recovery, trainer, events, commands, _ = build(tmp_path)
    train(recovery, trainer, 1)
    Metrics.full = True
    train(recovery, trainer, 2)  # the second failure while paused says nothing new
    assert len(commands.pauses) == 1 and commands.pauses[0].startswith(
        f"disk full writing {rd.METRICS_FILE}: free space and resume (training is paused at "
        f"step 200; nothing is lost) [OSError: [Errno {errno.ENOSPC}]")
    recovery.state.resume()
    assert not recovery.recover()  # still full: paused again
    assert recovery.state.paused and len(commands.pauses) == 2
    Metrics.full = False
    recovery.state.resume()
    assert recovery.recover()
    assert epochs_in_metrics(recovery.run_dir) == [1, 2, 3]  # none lost, in order


def test_a_checkpoint_the_full_disk_refused_is_written_on_resume(tmp_path, monkeypatch):
    recovery, trainer, events, commands, _ = build(tmp_path)
    save = ckpt.save_checkpoint

    def full(run_dir, state, **kwargs):  # as torch says ENOSPC, wrapped in its own error
        raise RuntimeError("[enforce fail at inline_container.cc:603] . unexpected pos: "
                           "No space left on device")

    monkeypatch.setattr(ckpt, "save_checkpoint", full)
    train(recovery, trainer, 2, interval=2)
    assert recovery.checkpoint_due and recovery.state.paused
    assert commands.pauses[0].startswith("disk full writing a checkpoint: free space and resume")
    recovery.state.resume()
    assert not recovery.recover() and recovery.checkpoint_due  # still full
    monkeypatch.setattr(ckpt, "save_checkpoint", save)
    recovery.state.resume()
    assert recovery.recover() and not recovery.checkpoint_due
    assert [p.name for p in ckpt.list_checkpoints(recovery.run_dir)] == \
        [ckpt.checkpoint_name(200, 2)]


def test_a_periodic_checkpoint_failing_otherwise_is_reported_and_training_goes_on(
        tmp_path, monkeypatch):
    recovery, trainer, events, commands, _ = build(tmp_path)

    def broken(run_dir, state, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(ckpt, "save_checkpoint", broken)
    train(recovery, trainer, 1, interval=1)
    assert not recovery.state.paused and not recovery.checkpoint_due and not commands.pauses
    assert events.texts("error")[0].startswith(
        "periodic checkpoint failed, training goes on: [Errno 13] Permission denied")


def _full_disk(run_dir, state, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_at_the_final_checkpoint_waits_for_room_or_a_stop(tmp_path, monkeypatch):
    save = ckpt.save_checkpoint
    answers = []

    def free_space_and_resume(state):
        answers.append("resume")
        monkeypatch.setattr(ckpt, "save_checkpoint", save)
        state.resume()

    recovery, trainer, events, commands, _ = build(tmp_path, person=free_space_and_resume)
    train(recovery, trainer, 1)
    recovery.state.request_stop(checkpoint=True)
    monkeypatch.setattr(ckpt, "save_checkpoint", _full_disk)
    path = recovery.final_checkpoint()
    assert answers == ["resume"] and path == ckpt.latest_checkpoint(recovery.run_dir)
    assert commands.pauses[0].startswith("disk full writing the final checkpoint: free space "
                                         "and resume, or stop without a checkpoint")

    def give_up(state):
        state.request_stop(checkpoint=False)

    recovery, trainer, events, commands, _ = build(tmp_path / "b", trainer=Trainer(3),
                                                   person=give_up)
    monkeypatch.setattr(ckpt, "save_checkpoint", _full_disk)
    assert recovery.final_checkpoint() is None and recovery.state.stop_requested


def test_a_lost_env_worker_leaves_a_checkpoint_of_the_last_finished_epoch(tmp_path):
    recovery, trainer, events, _, _ = build(tmp_path)
    train(recovery, trainer, 2)
    epoch_start = trainer.global_step, trainer.epoch, trainer.uptime
    trainer.global_step += 37  # mid-collection of epoch 3, which is dropped
    path = recovery.after_worker_death(WorkerError(1, "exited with SIGKILL"), epoch_start)
    assert path.name == ckpt.checkpoint_name(200, 2)
    saved = ckpt.load_checkpoint(path)
    assert saved["episodes_afresh"] == "env worker 1 died"
    assert recovery.last_checkpoint == (200, path)
    assert events.texts("error") == [
        f"env worker 1 died: exited with SIGKILL; checkpoint of epoch 2 (step 200) "
        f"saved: {path.name}; resume with `puffer-tui train --resume {recovery.run_dir}`"]


def test_a_worker_lost_in_the_first_epoch_leaves_no_checkpoint(tmp_path):
    recovery, trainer, events, _, _ = build(tmp_path)
    # a Ray actor's error names no worker
    assert recovery.after_worker_death(RuntimeError("actor gone"), (0, 0, 0.0)) is None
    assert events.texts("error") == ["an env worker died: actor gone; no checkpoint (no epoch "
                                     "had finished)"]
    assert ckpt.latest_checkpoint(recovery.run_dir) is None


GLOO = ("[/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:534] Read error "
        "[127.0.0.1]:4765: Connection reset by peer. This is typically caused by a crash")


def test_a_rank_lost_mid_epoch_leaves_rank_0_a_checkpoint_of_the_epoch_before(tmp_path):
    world = LostPeers(rank=0, lost=[(1, 4343, "host0")])
    recovery, trainer, events, _, _ = build(tmp_path, trainer=Trainer(3), world=world)
    recovery.before_epoch()  # the copy of epoch 3, before epoch 4 starts learning
    trainer.run_epoch(weights=-1.0)  # some of epoch 4's minibatches learnt, then the error
    message = recovery.after_lost_rank(RuntimeError(GLOO))
    path = ckpt.latest_checkpoint(recovery.run_dir)
    assert path.name == ckpt.checkpoint_name(300, 3)
    saved = ckpt.load_checkpoint(path)
    assert torch.equal(saved["weights"], torch.full((3,), 3.0))  # not epoch 4's
    assert saved["episodes_afresh"] == "rank 1 died (pid 4343 on host0)"
    assert message == (f"another learner rank failed: rank 1 died (pid 4343 on host0) [Read "
                       f"error [127.0.0.1]:4765: Connection reset by peer]; checkpoint of epoch "
                       f"3 (step 300) saved: {path.name}; resume with `puffer-tui train "
                       f"--resume {recovery.run_dir}`")


def test_a_rank_lost_between_epochs_reuses_that_epochs_periodic_checkpoint(tmp_path):
    world = LostPeers(rank=0, lost=[])
    recovery, trainer, events, _, _ = build(tmp_path, world=world)
    train(recovery, trainer, 2, interval=2)
    periodic = ckpt.latest_checkpoint(recovery.run_dir)
    message = recovery.after_lost_rank(RuntimeError("Connection closed by peer"))
    assert ckpt.list_checkpoints(recovery.run_dir) == [periodic]
    assert message.startswith("another learner rank failed: a learner rank failed or its "
                              "connection broke [Connection closed by peer]; checkpoint of "
                              f"epoch 2 (step 200) saved: {periodic.name}")


def test_a_lost_rank_0_makes_status_final_on_a_surviving_rank(tmp_path):
    world = LostPeers(rank=1, lost=[(0, 4242, "host0")])
    recovery, trainer, *_ = build(tmp_path, trainer=Trainer(2), world=world)
    run_dir = recovery.run_dir
    last = ckpt.save_checkpoint(run_dir, trainer.state_dict())
    rd.write_json_atomic(run_dir / rd.STATUS_FILE, {"state": RunState.RUNNING, "pid": 4242})
    message = recovery.after_lost_rank(RuntimeError(GLOO))
    assert message == (f"rank 0 died (pid 4242 on host0): the run ended; the last checkpoint is "
                       f"{last.name}: resume with `puffer-tui train --resume {run_dir}`")
    status = json.loads((run_dir / rd.STATUS_FILE).read_text())
    assert (status["state"], status["error"], status["pid"]) == (RunState.ERROR, message, 4242)
    # another rank's loss: rank 0 lives and says how the run ended
    other = LostPeers(rank=1, lost=[(2, 4444, "host0")])
    recovery, *_ = build(tmp_path / "b", trainer=Trainer(2), world=other)
    assert recovery.after_lost_rank(RuntimeError("reset")).startswith(
        "another learner rank failed: rank 2 died")
