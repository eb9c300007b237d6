"""Stopping an engine from a command: the signals that ask for it, the `stop` request over the
control socket, and output that survives the terminal going away.

    with StopSignals() as signals:           # SIGINT, SIGTERM, SIGHUP -> Interrupted
        ...
    client = send_stop(run_dir, "SIGTERM to `puffer-tui train --headless` (pid 4242)")
    console = Console(file=SafeStream(sys.stdout))

The engine runs in its own session (app/engine_launcher.py), so neither the terminal's
Ctrl-C nor a hangup nor `timeout`'s SIGTERM reaches it: the command that started it is
the one told, and it must pass the stop on. It does so with the engine's ordinary `stop`
(finish the epoch, checkpoint, exit), and says why in the run's events.log.

Tested in: tests/app/test_headless_signals.py, tests/app/test_cli_stop.py.
"""

from __future__ import annotations

import signal
import sys

from puffer_tui.app.engine_client import EngineClient
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.events import EventLog
from puffer_tui.engine.shared.protocol import LIVE_STATES

STOP_PATIENCE = 300.0  # seconds an engine gets to finish its epoch, checkpoint and exit
REPORT_EVERY = 5.0  # seconds between "still stopping" lines


class Interrupted(KeyboardInterrupt):
    """A signal that asks the command to end; `name` is SIGINT, SIGTERM or SIGHUP."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


def signal_label(name: str | None) -> str:
    return "Ctrl-C" if name == "SIGINT" else name or "interrupted"


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP while a command looks after an engine. The first raises
    Interrupted (a KeyboardInterrupt, so every wait gives way to it), or only sets `first`
    while `raising` is off (a loop that polls it); later ones only set
    `again` for the waits to poll, and only a person's second Ctrl-C does: `timeout` sends
    its SIGTERM twice (to the command, then to its group) and a hangup comes from the kernel
    and again from the shell, while the stop they ask for is already under way."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self):
        self.first: str | None = None
        self.again: str | None = None
        self.raising = True  # False: the first only sets `first`, for a loop to poll
        self._previous: dict = {}

    def __enter__(self) -> StopSignals:
        for sig in self.SIGNALS:
            try:
                self._previous[sig] = signal.signal(sig, self._on_signal)
            except ValueError:  # not the main thread (a test calling in): leave them be
                break
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}

    def _on_signal(self, signum, frame) -> None:
        name = signal.Signals(signum).name
        if self.first is None:
            self.first = name
            if self.raising:
                raise Interrupted(name)
            return
        if signum == signal.SIGINT:
            self.again = name


class TermAsCtrlC:
    """SIGTERM and SIGHUP read as Ctrl-C while a command plays or watches (eval, the sweep
    watch): the first raises KeyboardInterrupt, which those commands answer with their
    "stopped" ending; later ones are dropped (`timeout` sends its SIGTERM twice)."""

    SIGNALS = (signal.SIGTERM, signal.SIGHUP)

    def __init__(self):
        self.seen: str | None = None
        self._previous: dict = {}

    def __enter__(self) -> TermAsCtrlC:
        for sig in self.SIGNALS:
            try:
                self._previous[sig] = signal.signal(sig, self._on_signal)
            except ValueError:  # not the main thread (a test calling in): leave them be
                break
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}

    def _on_signal(self, signum, frame) -> None:
        if self.seen is None:
            self.seen = signal.Signals(signum).name
            raise KeyboardInterrupt(self.seen)


class SafeStream:
    """A text stream whose writes never raise: once the reader of a pipe is gone (EPIPE:
    `| tee` died of the same Ctrl-C) or the terminal hung up (EIO), output is dropped and
    `broken` is set, so the command goes on stopping its engine instead of dying of it
    (rich answers a broken pipe with SystemExit, which is what left engines training)."""

    def __init__(self, stream):
        self._stream = stream
        self.broken = False

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                self._stream.write(text)
                self._stream.flush()  # an error shows now, not at exit
            except (OSError, ValueError):  # ValueError: the stream was closed
                self.broken = True
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                self.broken = True

    def isatty(self) -> bool:
        try:
            return self._stream.isatty()
        except (OSError, ValueError):
            return False

    def __getattr__(self, name):  # fileno, encoding... as the stream has them
        return getattr(self._stream, name)


def say_anywhere(console, text: str) -> None:
    """Print a line that must be seen: to the console, and to stderr as well when the
    console's output is gone (`| tee log` after Ctrl-C: stderr is still the terminal)."""
    console.print(text, markup=False, highlight=False, soft_wrap=True)
    if getattr(console.file, "broken", False):
        try:
            print(text, file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass  # nobody is left to tell


def note_stop(run_dir, reason: str) -> None:
    """Say in the run's events.log who asked for the stop and why (the engine's own event,
    "stop requested at step N", follows it)."""
    try:
        EventLog(run_dir).info(f"stop asked by {reason}")
    except OSError:
        pass  # a full disk must not keep the stop from being sent


def send_stop(run_dir, reason: str, client: EngineClient | None = None) -> EngineClient:
    """Ask the engine of `run_dir` to finish its epoch, checkpoint and exit; returns the
    connection it went over (open until the engine exits: its end is a sign of the exit).
    EngineClientError when the engine cannot be reached."""
    if client is None or client.closed.is_set():
        client = EngineClient.connect(run_dir, hello=False)
    note_stop(run_dir, reason)  # once the engine is reached: the stop will go out
    client.send("stop", checkpoint=True)
    return client


def engine_gone(run_dir) -> bool:
    """Whether the run's engine has ended: its status says so (or it died without saying)."""
    status = rd.read_status(run_dir)
    return rd.run_state(run_dir, status) not in LIVE_STATES and not rd.engine_alive(status)


def stop_line(run_dir, cause: str = "", state: str | None = None) -> tuple[str, bool]:
    """(the one line saying how the engine of `run_dir` ended, whether that is a clean end
    with a checkpoint). `cause` (" on SIGTERM") goes after the state."""
    info = rd.run_info(run_dir)
    info.state = state or info.state
    status = rd.read_status(run_dir)
    saved = status.get("last_checkpoint") or (str(info.last_checkpoint)
                                              if info.last_checkpoint else None)
    steps = f"{info.global_step or 0:,} steps"
    if info.state == "error":
        detail = info.detail.splitlines()[0] if info.detail else "see events.log"
        return (f"error{cause}: {steps}; the engine failed ({detail}; "
                f"{run_dir / rd.EVENTS_FILE})", False)
    where = f"checkpoint {saved}" if saved else "no checkpoint"
    return f"{info.state}{cause}: {steps}; {where}", saved is not None
