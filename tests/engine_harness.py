"""Helpers for the tests that drive a real engine process through its socket."""

from __future__ import annotations

import time

from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.protocol import LIVE_STATES

# Small and quick on 2 shared cores: 64 envs, 4096-step epochs, one torch thread.
TINY = {
    "vec.num_envs": 64,
    "train.horizon": 16,
    "train.minibatch_size": 256,
    "train.hidden_size": 32,
    "train.torch_threads": 1,
    "train.checkpoint_interval": 0,
}


def make_run(root, env="squared", **overrides) -> rd.Path:
    """A prepared run directory (config.toml written), as `puffer-tui train` leaves it."""
    config = cfg.load_config(env, {**TINY, **overrides})
    run = rd.create_run_dir(env, root)
    cfg.save(config, run / rd.CONFIG_FILE)
    return run


def wait_until(predicate, timeout: float = 20.0, interval: float = 0.05, what: str = "it"):
    """Poll `predicate` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def first_push(client, kind: str, timeout: float = 5.0, where=lambda push: True):
    """The first push of `kind` (matching `where`) within `timeout` seconds, or None.
    Telemetry queued before the call is skipped: it may describe an older state."""
    deadline = time.monotonic() + timeout
    now = time.time()
    for push in client.pushes(timeout=timeout):
        if kind == "telemetry" and push.get("time", now) < now:
            continue
        if push.get("type") == kind and where(push):
            return push
        if time.monotonic() > deadline:
            break
    return None


def process_cpu_seconds(pids) -> float:
    import psutil

    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


def kill_engine(run) -> None:
    """Make sure no engine is left training on `run` (cleanup after a failed test)."""
    import os
    import signal

    status = rd.read_status(run)
    if rd.run_state(run, status) not in LIVE_STATES:
        return  # finished, stopped, crashed, or never started: nothing to clean up
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.kill(status["pid"], sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not rd.engine_alive(status):
                return
            time.sleep(0.1)
