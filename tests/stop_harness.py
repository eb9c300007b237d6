"""Helpers for the tests of stopping engines: `train --headless` as a child process whose
output is read without ever blocking, and cleanup that leaves no engine behind."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

from engine_harness import kill_engine, wait_until

from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.protocol import LIVE_STATES

CLI = [sys.executable, "-m", "puffer_tui.app.cli"]
PATCHES = Path(__file__).parent / "engine_patches"
# 4096-step epochs on 64 envs and one torch thread: quick on 2 shared cores; no periodic
# checkpoint, so the only one is the final one
TINY = ["--vec.num-envs", "64", "--train.horizon", "16", "--train.minibatch-size", "256",
        "--train.hidden-size", "32", "--train.torch-threads", "1",
        "--train.checkpoint-interval", "0"]
FOREVER = ["--train.total-timesteps", str(10**9)]


def child_env(**values) -> dict:
    """The environment for the CLI (and the engine it starts): tests/engine_patches loaded,
    for PUFFER_TEST_* values that slow the engine down on request."""
    path = os.pathsep.join(filter(None, [str(PATCHES), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1", **values}


def train(runs: Path, *flags: str, **popen) -> subprocess.Popen:
    """`puffer-tui train squared --headless` with a budget it will not reach."""
    popen.setdefault("env", child_env())
    return subprocess.Popen([*CLI, "train", "squared", "--headless", "--runs-dir", str(runs),
                             *TINY, *FOREVER, *flags], **popen)


def read_until(fd: int, text: str, seen: bytearray, limit: float = 120.0) -> str:
    """Read from `fd` into `seen` until `text` is in it; fail after `limit` seconds or at EOF."""
    deadline = time.monotonic() + limit
    while text.encode() not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"gave up waiting for {text!r}; output so far:\n{seen.decode()}"
        ready, _, _ = select.select([fd], [], [], min(left, 1.0))
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # a pty whose other side is gone
                chunk = b""
            assert chunk, f"output ended before {text!r}:\n{seen.decode()}"
            seen += chunk
    return seen.decode(errors="replace")


def the_run(runs: Path) -> Path:
    return wait_until(lambda: rd.list_runs(runs) and rd.list_runs(runs)[-1], 60,
                      what="the run directory")


def wait_training(run: Path) -> None:
    """Until the engine has trained an epoch (a stop then has something to checkpoint)."""
    wait_until(lambda: rd.read_status(run).get("epoch", 0) >= 1, 120, interval=0.1,
               what="the first epoch")


def engine_gone(run: Path) -> bool:
    status = rd.read_status(run)
    return rd.run_state(run, status) not in LIVE_STATES and not rd.engine_alive(status)


def cleanup(runs: Path, *procs: subprocess.Popen) -> None:
    """Kill the commands, then any engine still training under `runs`."""
    for proc in procs:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
    for run in rd.list_runs(runs):
        kill_engine(run)


def events(run: Path) -> str:
    return (run / rd.EVENTS_FILE).read_text()
