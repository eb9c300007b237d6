"""The command queue between the control server's thread and the trainer's main thread.

The server puts `Command`s; the trainer applies them at its safe points
(`Trainer(config, safe_point=queue.safe_point)`: between env steps and minibatches) and
the engine loop applies the rest between epochs (`queue.at_boundary()`). Every trainer call
happens on the main thread; the server thread only reads `trainer.progress`. The queue only
queues and dispatches: the run state and flags it changes are the engine's `RunControl`
(engine/runtime/run_control.py), the frames it captures at safe points its `FrameSource`
(engine/runtime/frame_source.py), both given to the constructor.

- pause: blocks inside the safe point on the queue itself (no polling, no CPU spent) until
  resume or stop arrives; `set` and `render` are still served while paused.
- set: the server checked the change once (engine/shared/protocol.py `check_set`); the
  typed `LiveChange` goes to `trainer.apply_live`, and the reply says when it applies.
- checkpoint: written at the next epoch boundary (a consistent state for exact resume),
  then answered with the path; if training is paused mid-epoch the reply says it is pending.
- stop: ends the current epoch (cut at the next safe point when it has not ended half a second
  after the request: engine/algo/epoch_cut.py), then the engine checkpoints (unless told not to)
  and exits.

With several learner ranks (torchrun, engine/algo/distributed.py) only rank 0 has a control socket;
at every safe point common to all ranks (between minibatches, at epoch boundaries; not between
env steps, whose count differs per rank) rank 0 broadcasts the commands it dequeued and every
rank applies the same list, so the ranks change state at the same point and never diverge.
While paused, rank 0 blocks on its queue and the others wait in that broadcast.
"""

from __future__ import annotations

import queue
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from puffer_tui.engine.runtime.frame_source import FrameSource
from puffer_tui.engine.runtime.run_control import RunControl
from puffer_tui.engine.shared.config import Config
from puffer_tui.engine.shared.health import is_disk_full
from puffer_tui.engine.shared.protocol import LiveChange


class LiveTrainer(Protocol):
    """What the commands ask of the trainer (engine/algo/trainer.py's Trainer)."""

    config: Config
    global_step: int

    def apply_live(self, change: LiveChange) -> tuple[object, str]:
        """(the value now in use, when it applies) of a change the schema has checked;
        ConfigError (a ValueError) refuses what this run cannot take."""


@dataclass
class Command:
    name: str
    args: dict = field(default_factory=dict)
    # called once with the reply's fields ({"ok": True, ...} or {"ok": False, "error": ...}),
    # from the main thread; the server adds the request id and sends it
    reply: Callable[[dict], None] = lambda result: None


class CommandQueue:
    """Commands waiting for the trainer, handed in by `attach` once it is built;
    `checkpoint()` writes one and returns its path."""

    def __init__(self, state: RunControl, frames: FrameSource, events=None,
                 checkpoint: Callable[[], object] | None = None, world=None):
        self._queue: queue.SimpleQueue[Command] = queue.SimpleQueue()
        self.state = state
        self.frames = frames
        self.events = events
        self.trainer: LiveTrainer | None = None  # from attach(); commands wait for it
        self._checkpoint = checkpoint
        self._pending_checkpoints: list[Command] = []
        self.world = world  # engine/algo/distributed.py World; None: one process
        # name -> handler(command, boundary) -> reply fields, or None when it replies itself
        # (later); "_frames" is the server's own request for a frame, never a client's
        self.handlers: dict[str, Callable[[Command, bool], dict | None]] = {
            "_frames": self._cmd_frames, "pause": self._cmd_pause, "resume": self._cmd_resume,
            "set": self._cmd_set, "checkpoint": self._cmd_checkpoint, "stop": self._cmd_stop,
        }

    def attach(self, trainer: LiveTrainer) -> None:
        """Main thread, once the trainer is built (the Trainer's constructor is handed
        `safe_point` and may call it before this: a `set` then is refused, not lost)."""
        self.trainer = trainer

    def handle(self, name: str, handler: Callable[[Command, bool], dict | None]) -> None:
        """Another part of the engine answers `name` (the doctor: `diagnosis`)."""
        self.handlers[name] = handler

    # -- server thread --------------------------------------------------------------------

    def put(self, command: Command) -> None:
        self._queue.put(command)

    def want_frames(self, envs: frozenset[int], policy: dict | None = None) -> None:
        """Set which envs to capture frames of (and, `policy`, of which the policy's view);
        wakes a paused trainer to grab one now."""
        self.frames.want(envs, policy)
        if self.state.paused and envs:
            self._queue.put(Command("_frames"))

    # -- main thread ----------------------------------------------------------------------

    def safe_point(self, between_steps: bool = False) -> None:
        """Called by the trainer between env steps and minibatches: cheap unless there is work.
        Several ranks: `between_steps` points only capture frames, the others all broadcast."""
        if self._together and not between_steps:
            self._drain(boundary=False)
        elif not self._together and not self._queue.empty():
            self._drain(boundary=False)
        if self.frames.due():
            self.frames.capture()

    def at_boundary(self) -> None:
        """Between epochs: write requested checkpoints, then apply what is queued."""
        self._write_pending_checkpoints()
        self._drain(boundary=True)
        self._write_pending_checkpoints()

    @property
    def _together(self) -> bool:
        return self.world is not None and self.world.enabled

    def _drain(self, boundary: bool) -> None:
        if self._together:
            self._drain_together(boundary)
            return
        while True:
            try:
                # While paused, block on the queue itself: no spinning, no timeouts.
                command = self._queue.get() if self.state.paused else self._queue.get_nowait()
            except queue.Empty:
                return
            self._apply(command, boundary)

    def _drain_together(self, boundary: bool) -> None:
        """Rank 0 broadcasts each batch it dequeues (blocking for one while paused); every
        rank applies it. An empty batch ends the drain on all ranks at once."""
        world = self.world
        while True:
            batch = self._take_batch() if world.is_main else []
            wire = world.broadcast([(c.name, c.args) for c in batch] if world.is_main else None)
            if not wire:
                return
            if not world.is_main:  # replies go from rank 0; frames are rank 0's envs
                batch = [Command(name, args) for name, args in wire if not name.startswith("_")]
            for command in batch:
                self._apply(command, boundary)

    def _take_batch(self) -> list[Command]:
        batch = [self._queue.get()] if self.state.paused else []
        while True:
            try:
                batch.append(self._queue.get_nowait())
            except queue.Empty:
                return batch

    def _apply(self, command: Command, boundary: bool) -> None:
        handler = self.handlers.get(command.name)
        if handler is None:
            command.reply({"ok": False, "error": f"unknown command {command.name!r}"})
            return
        try:
            result = handler(command, boundary)
        except Exception as e:
            self._event("warning", f"{command.name} failed: {e}\n{traceback.format_exc()}")
            command.reply({"ok": False, "error": f"{command.name} failed: {e}"})
            return
        if result is not None:
            command.reply({"ok": True, **result})

    def pause_for(self, text: str) -> None:
        """Pause because something went wrong (non-finite values, disk full): an error event
        says what and how to go on; `resume` or `stop` from a client continues. Once a stop
        is under way there is no one to wait for: the event alone is emitted."""
        self.state.pause()  # no-op once a stop is under way, or when already paused
        self._event("error", text)

    def _cmd_frames(self, command, boundary):
        self.frames.capture()
        return None

    def _cmd_pause(self, command, boundary):
        if self.state.pause():
            if self.frames.wanted:
                self.frames.capture()
            self._event("info", f"paused at step {self._step()}")
        return {"state": self.state.run_state}

    def _cmd_resume(self, command, boundary):
        if self.state.resume():
            self._event("info", f"resumed at step {self._step()}")
        return {"state": self.state.run_state}

    def _cmd_set(self, command, boundary):
        change: LiveChange = command.args["change"]
        trainer = self.trainer
        if trainer is None:
            command.reply({"ok": False, "error": f"{change.key} cannot be set yet: the "
                                                "trainer is still being built; try again"})
            return None
        old = getattr(getattr(trainer.config, change.section), change.name)
        try:
            value, applies = trainer.apply_live(change)
        except ValueError as e:  # ConfigError is a ValueError: a refusal, not a failure
            command.reply({"ok": False, "error": str(e)})
            return None
        self._event("info", f"{change.key} changed from {old} to {value} ({applies}, at step "
                            f"{self._step()})")
        return {"key": change.key, "value": value, "applies": applies}

    def _cmd_checkpoint(self, command, boundary):
        self._pending_checkpoints.append(command)
        if boundary:
            self._write_pending_checkpoints()
            return None
        if self.state.paused:
            # The consistent state to save is at the end of the epoch: say so now, write later.
            self._pending_checkpoints[-1] = Command("checkpoint")
            return {"path": None, "pending": True,
                    "applies": "at the end of the current epoch (training is paused mid-epoch)"}
        return None  # answered with the path once written, at the end of this epoch

    def _cmd_stop(self, command, boundary):
        self.state.request_stop(bool(command.args.get("checkpoint", True)))
        self._event("info", f"stop requested at step {self._step()}"
                    + ("" if self.state.stop_checkpoint else " (no checkpoint)"))
        return {"state": self.state.run_state}

    def _write_pending_checkpoints(self) -> None:
        if not self._pending_checkpoints:
            return
        waiting, self._pending_checkpoints = self._pending_checkpoints, []
        try:
            path = str(self._checkpoint())
        except Exception as e:
            if is_disk_full(e):
                text = f"disk full writing a checkpoint: free space and resume ({e})"
                for command in waiting:
                    command.reply({"ok": False, "error": text})
                if not self.state.stop_requested:
                    self.pause_for(f"training paused: {text}")
                return
            self._event("error", f"checkpoint failed: {e}\n{traceback.format_exc()}")
            for command in waiting:
                command.reply({"ok": False, "error": f"checkpoint failed: {e}"})
            return
        for command in waiting:
            command.reply({"ok": True, "path": path})

    def _step(self) -> int:
        trainer = self.trainer
        return trainer.global_step if trainer is not None else 0

    def _event(self, level: str, text: str) -> None:
        if self.events is not None:
            self.events.emit(level, text)
