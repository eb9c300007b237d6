"""Start the engine as a detached process and wait until its control socket answers.

    handle = launch_engine(run_dir)                  # python -m puffer_tui.engine RUN_DIR
    handle = launch_engine(run_dir, resume=True)     # ... --resume
    client = EngineClient.connect(run_dir)

The engine runs in its own session and process group (`start_new_session=True`): Ctrl-C in
the terminal and the app exiting or crashing do not reach it; a headless command that should
stop it on Ctrl-C, SIGTERM or a hangup passes them on (app/stop_signals.py). Its stdout and
stderr go to RUN_DIR/engine.out. Whoever launched it should call `handle.wait()` or `handle.poll()` once it
has exited, so it is reaped (if the launcher exits first, init reaps it).

With `train.nproc` > 1 the engine is started through torchrun (`python -m torch.distributed.run
--standalone --nproc-per-node N -m puffer_tui.engine RUN_DIR`): the handle's process is then
torchrun's agent, which starts the ranks and stops them all when one dies; rank 0 serves the
socket and echoes the launch id this module gives it, so the wait knows the engine is ours.

Tested in: tests/engine/runtime/test_process.py (launch, start errors, terminate),
tests/app/test_cli_stop.py, tests/app/test_attach_stop_choice.py (engine_running)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.config import load
from puffer_tui.engine.shared.protocol import LAUNCH_ID_ENV, LIVE_STATES


class EngineStartError(RuntimeError):
    """The engine exited or did not open its socket; the text carries the end of engine.out."""


@dataclass
class EngineHandle:
    run_dir: Path
    process: subprocess.Popen
    launch_id: str | None = None  # echoed in status.json by the engine (rank 0) it started

    @property
    def pid(self) -> int:
        return self.process.pid

    def poll(self) -> int | None:
        return self.process.poll()

    def wait(self, timeout: float | None = None) -> int:
        return self.process.wait(timeout)


def engine_running(run_dir: str | os.PathLike) -> bool:
    """Whether an engine is alive on this run: its status says so and its process exists, or
    its socket answers (an engine that has not written its status yet)."""
    path = rd.socket_path(run_dir)
    return rd.run_state(run_dir) in LIVE_STATES or (path.exists() and rd.socket_answers(path))


def launch_engine(
    run_dir: str | os.PathLike,
    resume: bool = False,
    fallback_checkpoint: bool = False,
    timeout: float = 120.0,
    python: str | None = None,
    on_wait=None,
) -> EngineHandle:
    """Start the engine on a prepared run dir and return once its socket accepts connections.
    `on_wait(handle, seconds)` is called about once a second while it is not ready yet.
    An engine that fails to get ready, or a Ctrl-C during the wait, is stopped."""
    handle = start_engine(run_dir, resume, fallback_checkpoint, python)
    try:
        wait_for_socket(handle, timeout, on_wait)
    except BaseException:
        terminate(handle)
        raise
    return handle


def start_engine(run_dir: str | os.PathLike, resume: bool = False,
                 fallback_checkpoint: bool = False, python: str | None = None) -> EngineHandle:
    """Start the engine on a prepared run dir and return at once (see `wait_for_socket`)."""
    run_dir = Path(run_dir).resolve()
    if not rd.is_run_dir(run_dir):
        raise EngineStartError(f"{run_dir} is not a run directory (no {rd.CONFIG_FILE})")
    if engine_running(run_dir):
        status = rd.read_status(run_dir)
        raise EngineStartError(f"an engine (pid {status.get('pid')}) is already running "
                               f"{run_dir.name}; attach to it instead")
    command = [python or sys.executable, *_launcher(run_dir), "-m", "puffer_tui.engine",
               str(run_dir)]
    if resume:
        command.append("--resume")
    if fallback_checkpoint:
        command.append("--fallback-checkpoint")
    launch_id = uuid.uuid4().hex
    out_path = run_dir / rd.ENGINE_OUT_FILE
    # The old status and socket belong to a previous engine; the new one writes its own.
    (run_dir / rd.STATUS_FILE).unlink(missing_ok=True)
    with out_path.open("ab") as out:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, close_fds=True, cwd=os.getcwd(),
            env={**os.environ, "PYTHONUNBUFFERED": "1", LAUNCH_ID_ENV: launch_id},
        )
    return EngineHandle(run_dir, process, launch_id)


def terminate(handle: EngineHandle) -> None:
    """End an engine that never got ready: SIGTERM (before its socket is up, that ends it at
    once), SIGKILL after 10 s."""
    process = handle.process
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_for_socket(handle: EngineHandle, timeout: float, on_wait=None) -> None:
    """Until this engine has written its status and its socket accepts connections;
    EngineStartError if the engine dies first."""
    path = rd.socket_path(handle.run_dir)
    start = time.monotonic()
    deadline = start + timeout
    next_report = start + 1.0
    while True:
        code = handle.poll()
        if code is not None:
            raise EngineStartError(f"the engine exited with status {code} before it was ready:\n"
                                   f"{tail(handle.run_dir / rd.ENGINE_OUT_FILE)}")
        status = rd.read_status(handle.run_dir)
        ours = status.get("pid") == handle.pid or (
            handle.launch_id is not None and status.get("launch_id") == handle.launch_id)
        if ours and path.exists() and rd.socket_answers(path):
            return
        if time.monotonic() > deadline:
            raise EngineStartError(f"the engine did not open {path} within {timeout:g} s:\n"
                                   f"{tail(handle.run_dir / rd.ENGINE_OUT_FILE)}")
        if on_wait is not None and time.monotonic() >= next_report:
            on_wait(handle, time.monotonic() - start)
            next_report += 1.0
        time.sleep(0.05)


def _launcher(run_dir: Path) -> list[str]:
    """Interpreter arguments before `-m puffer_tui.engine`: torchrun's when the run's config
    asks for several learner processes (train.nproc), else none."""
    try:
        nproc = load(run_dir / rd.CONFIG_FILE).train.nproc
    except Exception:
        return []  # the engine reports a config it cannot load, in its own words
    if nproc <= 1:
        return []
    return ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]


def tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"({path} is missing)"
    return "\n".join(text.rstrip().splitlines()[-lines:]) or f"({path} is empty)"
