"""The run state and the pause/stop flags of the engine: where the run is and what a person
asked of it, owned by the Engine (engine/runtime/process.py).

Written on the main thread only (the command queue's handlers, the engine loop, fault
handling); the control server's thread reads `run_state` for hello and telemetry. The
methods say which changes are allowed, so no caller flips a flag without its state.
"""

from __future__ import annotations

import time

from puffer_tui.engine.shared.protocol import RunState


class RunControl:
    def __init__(self):
        self.run_state = RunState.STARTING
        self.paused = False
        self.stop_requested = False
        self.stop_checkpoint = True  # with a stop: write a final checkpoint first
        self.stop_requested_at = 0.0  # time.monotonic() of the stop request

    def enter(self, run_state: RunState) -> None:
        """A state the engine loop reaches by itself: running, finished, stopped, error."""
        self.run_state = run_state

    def pause(self) -> bool:
        """Pause unless already paused or stopping; True when this call paused the run."""
        if self.paused or self.stop_requested:
            return False
        self.paused = True
        self.run_state = RunState.PAUSED
        return True

    def resume(self) -> bool:
        """True when this call resumed a paused run."""
        if not self.paused:
            return False
        self.paused = False
        self.run_state = RunState.RUNNING
        return True

    def request_stop(self, checkpoint: bool) -> None:
        """Stop at the end of this epoch; a paused run is released so it can get there."""
        if not self.stop_requested:
            self.stop_requested_at = time.monotonic()
        self.stop_requested = True
        self.stop_checkpoint = checkpoint
        self.paused = False
        self.run_state = RunState.STOPPING

    def stop_overdue(self, grace: float) -> bool:
        """A stop has waited `grace` seconds for the epoch's end: end it now."""
        return self.stop_requested and time.monotonic() - self.stop_requested_at > grace

    def withdraw_stop(self) -> None:
        """The final checkpoint could not be written: wait for resume or stop once more."""
        self.stop_requested = False
