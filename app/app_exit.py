"""What the terminal shows once the dashboard has closed, and the exit status it ends with.

The dashboard takes the whole screen while it runs, so what became of the run must be said
after it: a stop asked from the dashboard (`s`, or q then "stop") waits here for the engine's
final checkpoint, then prints the step, the checkpoint and the command that resumes it, as
`train --headless` does. SIGTERM or SIGHUP to a dashboard whose engine it started (`train ENV`,
a run started from the launcher) stop that engine the same way; an engine it only attached to
is left training. No Textual here.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from puffer_tui.app.engine_client import EngineClientError
from puffer_tui.app.stop_signals import (
    REPORT_EVERY,
    STOP_PATIENCE,
    SafeStream,
    StopSignals,
    engine_gone,
    say_anywhere,
    send_stop,
    signal_label,
    stop_line,
)
from puffer_tui.engine.shared import exit_codes as ec
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.protocol import RunState

POLL = 0.2  # seconds between looks at the stopping engine's status


@dataclass
class AppExit:
    """How the app ended, as run_app hands it over."""

    run_dir: Path | None = None  # the run on screen when it closed (None: the launcher)
    stop_asked: bool = False  # the dashboard asked the engine to stop, and it agreed
    signal: str | None = None  # SIGTERM / SIGHUP that closed the app
    owns_engine: bool = False  # this command started the run's engine
    ended: bool = False  # the run had ended when the app was told to quit
    message: str = ""  # the app's own farewell (a detach says how to reattach)


def after_exit(done: AppExit, console: Console | None = None,
               patience: float = STOP_PATIENCE) -> int:
    """Say what became of the run, stopping its engine first when a signal asks; returns the
    exit status (engine/shared/exit_codes.py)."""
    console = console or Console(file=SafeStream(sys.stdout), highlight=False)
    run_dir = done.run_dir
    cause = f" on {signal_label(done.signal)}" if done.signal else ""
    if run_dir is not None and done.signal and not done.stop_asked:
        if not done.owns_engine or engine_gone(run_dir):
            say_anywhere(console, f"{signal_label(done.signal)}: the dashboard closed; "
                         + (done.message.replace("\n", "; ") or f"see {run_dir}"))
            return ec.FINISHED if not done.owns_engine else _by_state(run_dir)
        try:
            send_stop(run_dir, f"{done.signal} to the puffer-tui dashboard (pid "
                               f"{os.getpid()})").close()
        except EngineClientError as e:
            say_anywhere(console, f"{signal_label(done.signal)}: could not ask the engine to "
                                  f"stop ({e}); `puffer-tui stop {run_dir}` stops it")
            return ec.ERROR
        say_anywhere(console, f"{signal_label(done.signal)}: asking the engine to checkpoint "
                              f"and stop...")
        done.stop_asked = True
    if run_dir is None or not (done.stop_asked or done.ended):
        if done.message:
            say_anywhere(console, done.message)
        return ec.LEFT_RUNNING if run_dir is not None and done.owns_engine else ec.FINISHED
    if done.stop_asked and not engine_gone(run_dir):
        waited = _wait_stopped(run_dir, console, patience)
        if waited is not None:
            return waited
    line, _ = stop_line(run_dir, cause)
    say_anywhere(console, f"{run_dir.name} {line}")
    state = rd.run_state(run_dir)
    if state == RunState.STOPPED:
        say_anywhere(console, f"resume with: puffer-tui train --resume {run_dir}")
    return _by_state(run_dir)


def _by_state(run_dir: Path) -> int:
    return {RunState.FINISHED: ec.FINISHED, RunState.STOPPED: ec.STOPPED}.get(
        rd.run_state(run_dir), ec.ERROR)


def _wait_stopped(run_dir: Path, console: Console, patience: float) -> int | None:
    """Until the engine has exited (None), or an exit status when the wait ends first."""
    pid = rd.read_status(run_dir).get("pid", "?")
    start = time.monotonic()
    next_report = 1.0  # a stop that lands at once needs no word
    with StopSignals() as signals:
        signals.raising = False  # a second signal only ends the wait
        while not engine_gone(run_dir):
            seconds = time.monotonic() - start
            if signals.first:
                say_anywhere(console, f"{signal_label(signals.first)}: not waiting any "
                                      f"longer; the engine (pid {pid}) checkpoints and exits "
                                      f"on its own, `puffer-tui runs` shows when")
                return ec.STOPPED
            if seconds > patience:
                say_anywhere(console, f"the engine (pid {pid}) has not stopped {patience:g} s "
                                      f"after the stop; `puffer-tui stop {run_dir}` waits for "
                                      f"it again")
                return ec.ERROR
            if seconds >= next_report:
                say_anywhere(console, f"waiting for the engine (pid {pid}) of {run_dir.name} "
                                      f"to checkpoint and exit...")
                next_report = seconds + REPORT_EVERY
            time.sleep(POLL)
    return None
