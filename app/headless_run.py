"""`puffer-tui train --headless`: start the engine, wait patiently for it, show its progress.

The engine announces itself (status.json and its socket) before it imports torch and builds
the envs, which on a slow disk can take a minute; the command waits on that and on the answer
to its hello as long as the engine process lives, saying what it waits for. Whenever the
command ends while the engine it started still runs, it says how to attach to it.
"""

from __future__ import annotations

import subprocess
import time

from rich.console import Console

from puffer_tui.app.engine_client import EngineClient, EngineClientError, EngineDisconnected
from puffer_tui.app.engine_launcher import EngineHandle, EngineStartError, launch_engine, tail
from puffer_tui.app.headless_display import HeadlessDisplay
from puffer_tui.engine import run_dir as rd
from puffer_tui.engine.protocol import FINAL_STATES, RunState

HELLO_PATIENCE = 600.0  # seconds an alive engine may take to answer its first hello
REPORT_EVERY = 5.0  # seconds between "still starting" lines
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
            f"`puffer-tui attach {run_dir}`, stop it with `kill -INT {pid}`")


def run_headless(run_dir, resume: bool, fallback: bool, console: Console | None = None) -> int:
    console = console or Console()
    console.print(f"run directory: {run_dir}", highlight=False)
    progress = _StartProgress(console)
    try:
        handle = launch_engine(run_dir, resume=resume, fallback_checkpoint=fallback,
                               on_wait=progress)
    except EngineStartError as e:
        console.print("[bold red]the engine failed to start[/]")
        console.print(str(e), markup=False, highlight=False)
        return 1
    except KeyboardInterrupt:  # launch_engine has stopped the engine it started
        console.print("interrupted: the engine was stopped before it began training")
        return 130
    try:
        client = greet(handle, progress)
    except EngineStartError as e:
        state = rd.run_state(run_dir)
        if state in (RunState.FINISHED, RunState.STOPPED):  # a short run, over before the hello
            return _report_end(console, run_dir, state, None)
        console.print("[bold red]the engine failed to start[/]")
        console.print(str(e), markup=False, highlight=False)
        return 1
    except (EngineClientError, TimeoutError, KeyboardInterrupt) as e:
        if isinstance(e, EngineClientError):
            _wait_for_exit(handle, run_dir)  # the connection ends a moment before the process
        if handle.poll() is None:
            console.print(f"{e or 'interrupted'}; " + attach_hint(run_dir, handle.pid),
                          markup=False, highlight=False)
            return 130 if isinstance(e, KeyboardInterrupt) else 1
        if isinstance(e, KeyboardInterrupt):
            return 130
        # A short run can end before its engine answers: say how it ended, from the run dir.
        return _report_end(console, run_dir, rd.run_state(run_dir), None)
    console.print(f"engine pid {handle.pid}; Ctrl-C checkpoints and stops it", highlight=False)
    display = HeadlessDisplay(client, run_dir, console)
    try:
        state = display.run()
    except BaseException:
        if handle.poll() is None:
            console.print(attach_hint(run_dir, handle.pid), markup=False, highlight=False)
        raise
    finally:
        client.close()
    if display.gave_up and handle.poll() is None:
        return _left_stopping(console, run_dir, handle)
    if state in FINAL_STATES:
        try:
            handle.wait(30)  # reap it; it exits right after closing the socket
        except Exception:
            pass
    elif handle.poll() is None:  # the connection ended, the engine did not
        console.print(attach_hint(run_dir, handle.pid), markup=False, highlight=False)
    return _report_end(console, run_dir, state, display)


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
        except KeyboardInterrupt:
            return


def _left_stopping(console: Console, run_dir, handle: EngineHandle) -> int:
    """The second Ctrl-C: the engine is still writing its final checkpoint; say so, not
    "last checkpoint none"."""
    info = rd.run_info(run_dir)
    console.print(
        f"stopping at {info.global_step or 0:,} steps: the engine (pid {handle.pid}) is saving "
        f"its final checkpoint into {run_dir / rd.CHECKPOINT_DIR} and then exits on its own; "
        f"`puffer-tui runs` shows when it is done", highlight=False)
    console.print(f"resume with: puffer-tui train --resume {run_dir} --headless", highlight=False)
    return 130


def _report_end(console: Console, run_dir, state: str, display: HeadlessDisplay | None) -> int:
    info = rd.run_info(run_dir)
    checkpoint = info.last_checkpoint.name if info.last_checkpoint else "none"
    console.print(f"{state}: {info.global_step or 0:,} steps; last checkpoint {checkpoint}",
                  highlight=False)
    if state == RunState.STOPPED:
        console.print(f"resume with: puffer-tui train --resume {run_dir} --headless",
                      highlight=False)
    if state == RunState.ERROR:
        console.print(f"[bold red]the engine failed[/] (see {run_dir / rd.EVENTS_FILE})")
        if (display is None or not display.errors) and info.detail:
            console.print(info.detail, markup=False)
        return 1
    return 0 if state in (RunState.FINISHED, RunState.STOPPED) else 1
