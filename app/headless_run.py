"""`puffer-tui train --headless`: start the engine, wait patiently for it, show its progress,
and stop it when the command is told to end.

The engine announces itself (status.json and its socket) before it imports torch and builds
the envs, which on a slow disk can take a minute; the command waits on that and on the answer
to its hello as long as the engine process lives, saying what it waits for.

The engine runs in its own session, so Ctrl-C, SIGTERM (`timeout`, a batch scheduler) and
SIGHUP (a dropped SSH connection) reach this command only: it passes them on as the engine's
`stop` and waits for the final checkpoint (app/stop_signals.py), unless --detach asked for the
engine to outlive the command. Every way out prints one line saying what became of the
engine; output that can no longer be written (the pipe's reader died of the same Ctrl-C, the
terminal hung up) is dropped, never fatal.

Tested in: tests/app/test_headless_progress.py, tests/app/test_headless_signals.py,
tests/app/test_headless_engine_death.py, tests/app/test_headless_earlier_events.py,
tests/app/test_cli_train.py
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from rich.console import Console

from puffer_tui.app.engine_client import EngineClient, EngineClientError, EngineDisconnected
from puffer_tui.app.engine_launcher import (
    EngineHandle,
    EngineStartError,
    start_engine,
    tail,
    terminate,
    wait_for_socket,
)
from puffer_tui.app.headless_display import LOG_EVERY, HeadlessDisplay
from puffer_tui.app.stop_signals import (
    REPORT_EVERY,
    STOP_PATIENCE,
    Interrupted,
    SafeStream,
    StopSignals,
    say_anywhere,
    send_stop,
    signal_label,
    stop_line,
)
from puffer_tui.engine.shared import exit_codes as ec
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.protocol import FINAL_STATES, LIVE_STATES, RunState

HELLO_PATIENCE = 600.0  # seconds an alive engine may take to answer its first hello
START_PATIENCE = 120.0  # seconds for the engine to open its socket
EXIT_GRACE = 5.0  # seconds an engine that ended our connection gets to exit before we decide
FINISHING_PATIENCE = 30.0  # ...and one whose status already says the run ended


class _StartProgress:
    """One line when the wait gets noticeable, then one every REPORT_EVERY seconds: plain
    lines work the same in a terminal and in a log file."""

    def __init__(self, console: Console):
        self.console = console
        self.next_report = 2.0
        self.what = "to start"

    def __call__(self, handle: EngineHandle, seconds: float, what: str = "to start") -> None:
        if what != self.what:  # a new wait, timed from 0: its first line comes at 2 s too
            self.what, self.next_report = what, 2.0
        if seconds >= self.next_report:
            self.console.print(f"waiting for the engine (pid {handle.pid}) {what}: {seconds:.0f} s",
                               highlight=False)
            self.next_report = seconds + REPORT_EVERY


def greet(handle: EngineHandle, progress: _StartProgress,
          patience: float = HELLO_PATIENCE) -> EngineClient:
    """A connected client with the engine's hello, waiting as long as the engine lives."""
    client = EngineClient.connect(handle.run_dir, hello=False)
    try:
        _, waiter = client.send("hello", client="puffer-tui")
        start = time.monotonic()
        while not waiter[0].wait(0.25):
            seconds = time.monotonic() - start
            if handle.poll() is not None:
                raise EngineStartError(
                    f"the engine exited with status {handle.poll()} before it answered:\n"
                    f"{tail(handle.run_dir / rd.ENGINE_OUT_FILE)}")
            if seconds > patience:
                raise TimeoutError(f"the engine did not answer within {patience:g} s")
            progress(handle, seconds, "to answer")
        reply = waiter[1]
        if reply is None:
            raise EngineDisconnected(
                f"the engine ended the connection before it answered ({client.close_reason})")
        if not reply.get("ok"):
            raise EngineClientError(f"the engine refused the hello: {reply}")
        client.hello = reply
        return client
    except BaseException:
        client.close()
        raise


def attach_hint(run_dir, pid: int) -> str:
    return (f"the engine (pid {pid}) goes on training {run_dir.name}; watch it with "
            f"`puffer-tui attach {run_dir}`, stop it with `puffer-tui stop {run_dir}`")


def run_headless(run_dir, resume: bool, fallback: bool, console: Console | None = None,
                 detach: bool = False, progress: str = "auto",
                 log_every: float = LOG_EVERY) -> int:
    """Start (or resume) the engine of `run_dir` and show its progress until it ends; the
    exit status says how (engine/shared/exit_codes.py). `progress`: "panel" (a live panel),
    "lines" (a plain line per `log_every` seconds), "jsonl" (a JSON object per interval on
    stdout, every other line on stderr), "auto" (panel in a terminal, else lines)."""
    records = None
    if progress == "jsonl" and console is None:  # stdout carries the JSON lines only
        records = SafeStream(sys.stdout)
        console = Console(file=SafeStream(sys.stderr))
    console = console or Console(file=SafeStream(sys.stdout))
    with StopSignals() as signals:
        session = _Session(run_dir, console, signals, detach, progress, log_every, records)
        try:
            return session.run(resume, fallback)
        except Interrupted as e:  # a signal outside the display: stop (or leave) the engine
            return session.interrupted(e.name)


class _Session:
    """One headless command: the engine it started, the connection, and how it ends."""

    def __init__(self, run_dir, console: Console, signals: StopSignals, detach: bool,
                 progress: str = "auto", log_every: float = LOG_EVERY, records=None):
        self.run_dir = run_dir
        self.console = console
        self.signals = signals
        self.detach = detach
        self.progress, self.log_every, self.records = progress, log_every, records
        self.handle: EngineHandle | None = None
        self.ready = False  # the engine's socket answers: a stop goes through it
        self.client: EngineClient | None = None

    def say(self, text: str) -> None:
        say_anywhere(self.console, text)

    def run(self, resume: bool, fallback: bool) -> int:
        console, run_dir = self.console, self.run_dir
        console.print(f"run directory: {run_dir}", highlight=False)
        progress = _StartProgress(console)
        try:
            self.handle = start_engine(run_dir, resume=resume, fallback_checkpoint=fallback)
            wait_for_socket(self.handle, START_PATIENCE, progress)
        except EngineStartError as e:
            if self.handle is not None:
                terminate(self.handle)
            console.print("[bold red]the engine failed to start[/]")
            console.print(str(e), markup=False, highlight=False)
            return ec.ERROR
        self.ready = True
        handle = self.handle
        try:
            self.client = greet(handle, progress)
        except EngineStartError as e:
            state = rd.run_state(run_dir)
            if state in (RunState.FINISHED, RunState.STOPPED):  # a short run, over before the hello
                return _report_end(console, run_dir, state, None)
            console.print("[bold red]the engine failed to start[/]")
            console.print(str(e), markup=False, highlight=False)
            return ec.ERROR
        except (EngineClientError, TimeoutError) as e:
            if isinstance(e, EngineClientError):
                _wait_for_exit(handle, run_dir)  # the connection ends a moment before the process
            if handle.poll() is None:
                self.say(f"{e}; " + attach_hint(run_dir, handle.pid))
                return ec.LEFT_RUNNING
            # A short run can end before its engine answers: say how it ended, from the run dir.
            return _report_end(console, run_dir, rd.run_state(run_dir), None, handle=handle)
        if self.detach:
            console.print(f"engine pid {handle.pid}; it outlives this command (--detach): "
                          f"`puffer-tui stop {run_dir}` stops it", highlight=False)
        else:
            console.print(f"engine pid {handle.pid}; Ctrl-C checkpoints and stops it",
                          highlight=False)
        display = HeadlessDisplay(self.client, run_dir, console, signals=self.signals,
                                  detach=self.detach, progress=self.progress,
                                  log_every=self.log_every, records=self.records)
        try:
            state = display.run()
        finally:
            self.client.close()
        if self.signals.first and not display.handled and handle.poll() is None:
            return self.interrupted(self.signals.first)  # it came as the display ended
        if display.detached:
            return self._left_training(display.detached)
        if display.gave_up and handle.poll() is None:
            return _left_stopping(console, run_dir, handle)
        if display.timed_out and handle.poll() is None:
            return self._stop_timed_out(display.patience)
        if state in FINAL_STATES:
            try:
                handle.wait(30)  # reap it; it exits right after closing the socket
            except subprocess.TimeoutExpired:
                pass
        else:  # the connection ended: a dying engine closes it a moment before it is gone
            _wait_for_exit(handle, run_dir)
            if handle.poll() is None:  # the engine lives on
                self.say(attach_hint(run_dir, handle.pid))
                return ec.LEFT_RUNNING
        return _report_end(console, run_dir, state, display, _cause(display.stop_signal),
                           handle)

    def interrupted(self, name: str) -> int:
        """The first signal came outside the display (starting, greeting, reporting)."""
        handle, label = self.handle, signal_label(name)
        if handle is None:
            self.say(f"{label}: stopped before the engine started")
            return ec.STOPPED
        if handle.poll() is not None:
            return _report_end(self.console, self.run_dir, rd.run_state(self.run_dir), None,
                               _cause(name), handle)
        if self.detach:
            return self._left_training(name)
        if not self.ready:  # no socket yet: nothing trained, nothing to checkpoint
            terminate(handle)
            self.say(f"{label}: the engine was stopped before it began training")
            return ec.STOPPED
        try:
            self.client = send_stop(self.run_dir, f"{name} to `puffer-tui train --headless` "
                                                  f"(pid {os.getpid()})", self.client)
        except EngineClientError as e:
            _wait_for_exit(handle, self.run_dir)  # no answer: it may be dying
            if handle.poll() is not None:
                return _report_end(self.console, self.run_dir, rd.run_state(self.run_dir),
                                   None, _cause(name), handle)
            self.say(f"{label}: could not ask the engine to stop ({e}); "
                     + attach_hint(self.run_dir, handle.pid))
            return ec.ERROR
        self.say(f"{label}: asking the engine to checkpoint and stop...")
        try:
            return self._wait_stopped(_cause(name))
        finally:
            self.client.close()

    def _wait_stopped(self, cause: str) -> int:
        """After a stop sent outside the display: wait for the engine to exit, bounded."""
        handle, start = self.handle, time.monotonic()
        next_report = REPORT_EVERY
        while True:
            try:
                handle.wait(0.25)
                break
            except subprocess.TimeoutExpired:
                pass
            seconds = time.monotonic() - start
            if self.signals.again:
                self.say("Ctrl-C again: not waiting any longer")
                return _left_stopping(self.console, self.run_dir, handle)
            if seconds > STOP_PATIENCE:
                return self._stop_timed_out(STOP_PATIENCE)
            if seconds >= next_report:
                self.say(f"waiting for the engine (pid {handle.pid}) to checkpoint and exit: "
                         f"{seconds:.0f} s")
                next_report = seconds + REPORT_EVERY
        return _report_end(self.console, self.run_dir, rd.run_state(self.run_dir), None, cause,
                           handle)

    def _left_training(self, name: str) -> int:
        self.say(f"{signal_label(name)}: left training (--detach): "
                 + attach_hint(self.run_dir, self.handle.pid))
        return ec.LEFT_RUNNING

    def _stop_timed_out(self, patience: float) -> int:
        run = self.run_dir
        self.say(f"the engine (pid {self.handle.pid}) has not stopped {patience:g} s after the "
                 f"stop; it goes on stopping {run.name} on its own: `puffer-tui stop {run}` "
                 f"waits for it again, `puffer-tui runs` shows its state")
        return ec.ERROR


def _cause(name: str | None) -> str:
    return f" on {signal_label(name)}" if name else ""


def _wait_for_exit(handle: EngineHandle, run_dir) -> None:
    """Give an engine that ended our connection the time to exit: EXIT_GRACE seconds, longer
    when its status says the run is over (closing its workers can take a while)."""
    for patience in (EXIT_GRACE, FINISHING_PATIENCE):
        try:
            handle.wait(patience)
            return
        except subprocess.TimeoutExpired:
            if rd.run_state(run_dir) not in FINAL_STATES:
                return  # it lives on: the caller says how to attach to it


def _left_stopping(console: Console, run_dir, handle: EngineHandle) -> int:
    """The second Ctrl-C: the engine is still writing its final checkpoint; say so, not
    "last checkpoint none"."""
    info = rd.run_info(run_dir)
    say_anywhere(
        console,
        f"stopping at {info.global_step or 0:,} steps: the engine (pid {handle.pid}) is saving "
        f"its final checkpoint into {run_dir / rd.CHECKPOINT_DIR} and then exits on its own; "
        f"`puffer-tui stop {run_dir}` waits for it, `puffer-tui runs` shows when it is done")
    say_anywhere(console, f"resume with: puffer-tui train --resume {run_dir} --headless")
    return ec.STOPPED


def _report_death(console: Console, run_dir, handle: EngineHandle, cause: str = "") -> int:
    """The engine exited without saying how its run ended (status.json still live): killed
    (SIGKILL, the OOM killer, its process group) or gone some other way. Say so, with what
    is left to go on from."""
    code = handle.poll()
    how = (f"killed by {_signal_name(-code)}" if code < 0 else f"exited with status {code}")
    info = rd.run_info(run_dir)
    say_anywhere(console, f"the engine (pid {handle.pid}) died{cause}: {how} at "
                          f"{info.global_step or 0:,} steps, with no final checkpoint; last "
                          f"checkpoint {info.last_checkpoint or 'none'}")
    if info.last_checkpoint:
        say_anywhere(console, f"resume with: puffer-tui train --resume {run_dir} --headless")
    else:
        say_anywhere(console, "no checkpoint was written: nothing to resume from; "
                              "start the run again")
    say_anywhere(console, f"its last output: {run_dir / rd.ENGINE_OUT_FILE}")
    return ec.ERROR


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _report_end(console: Console, run_dir, state: str, display: HeadlessDisplay | None,
                cause: str = "", handle: EngineHandle | None = None) -> int:
    if handle is not None and handle.poll() is not None \
            and rd.read_status(run_dir).get("state") in LIVE_STATES:
        return _report_death(console, run_dir, handle, cause)  # it left no word of its end
    if state in (RunState.FINISHED, RunState.STOPPED):
        say_anywhere(console, stop_line(run_dir, cause, state)[0])
        if state == RunState.STOPPED:
            say_anywhere(console, f"resume with: puffer-tui train --resume {run_dir} --headless")
            return ec.STOPPED
        return ec.FINISHED
    info = rd.run_info(run_dir)
    checkpoint = info.last_checkpoint or "none"
    say_anywhere(console, f"{state}{cause}: {info.global_step or 0:,} steps; last checkpoint "
                          f"{checkpoint}")
    if state == RunState.ERROR:
        console.print(f"[bold red]the engine failed[/] (see {run_dir / rd.EVENTS_FILE})")
        if (display is None or not display.errors) and info.detail:
            console.print(info.detail, markup=False)
    return ec.ERROR
