"""Helpers for the sweep tests: tiny bandit sweeps through the real command line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared import sweep_settings as st

# bandit learns in a few epochs; 3 epochs of 4096 steps, a narrow policy, no checkpoints
TINY = ["--train.total-timesteps", "12288", "--vec.num-envs", "64",
        "--train.minibatch-size", "1024", "--train.checkpoint-interval", "0",
        "--sweep.train.hidden-size", "16,64,log"]
# two drivers on one machine each believe they own every core: one torch thread per trial
ONE_THREAD = ["--train.torch-threads", "1"]


def cli(*args: str, timeout: float = 240.0) -> subprocess.CompletedProcess:
    """`puffer-tui ARGS` in a subprocess, as a person types it."""
    return subprocess.run([sys.executable, "-m", "puffer_tui.app.cli", *args],
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def _sigint_as_a_terminal_has_it() -> None:
    # A suite started in the background of a script (`pytest ... &`, nohup, some CI runners)
    # inherits SIGINT ignored, and Python then leaves it ignored: the watcher's Ctrl-C tests
    # failed every time so (the sweep ran to its end). A person's Ctrl-C reaches a foreground
    # command with SIGINT at its default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cli_background(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "puffer_tui.app.cli", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            stdin=subprocess.DEVNULL, preexec_fn=_sigint_as_a_terminal_has_it)


def load_study(sweep_dir: Path):
    import optuna

    settings = st.load_settings(sweep_dir)
    return optuna.load_study(study_name=settings.name,
                             storage=settings.storage_url(sweep_dir))


def by_state(study) -> dict[str, list]:
    out: dict[str, list] = {}
    for t in study.get_trials():
        out.setdefault(t.state.name, []).append(t)
    return out


def wait_until(predicate, timeout: float = 120.0, what: str = "it"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.2)


def engine_starts(run_dir: Path) -> int:
    """How many engines ever ran in this run dir (one "starting" event each)."""
    text = (Path(run_dir) / rd.EVENTS_FILE).read_text()
    return sum(" starting " in line for line in text.splitlines())


def kill_everything(root: Path) -> None:
    """Teardown: no driver or engine of a test outlives it."""
    for pid_file in Path(root).rglob(st.PID_FILE):
        _kill(pid_file)
    for pid_file in Path(root).rglob(rd.PID_FILE):
        _kill(pid_file)


def _kill(pid_file: Path) -> None:
    try:
        pid = int(pid_file.read_text())
        os.killpg(pid, signal.SIGKILL)  # each runs in its own session: group id == pid
    except (OSError, ValueError):
        pass


def no_live_engine(root: Path) -> bool:
    return not any(rd.engine_alive(rd.read_status(p.parent))
                   for p in Path(root).rglob(rd.STATUS_FILE))


def assert_shared(study, trials: int) -> None:
    """`trials` done, each run once in its own run dir, by both drivers; any surplus trial
    (both asked for the last one at once) failed without running."""
    states = by_state(study)
    done = states.get("COMPLETE", []) + states.get("PRUNED", [])
    assert len(done) == trials, {s: len(t) for s, t in states.items()}
    assert len({t.user_attrs["driver"] for t in done}) == 2
    run_dirs = [t.user_attrs["run_dir"] for t in done]
    assert len(set(run_dirs)) == trials
    assert all(engine_starts(rd.Path(r)) == 1 for r in run_dirs)
    for trial in states.get("FAIL", []):
        assert "run_dir" not in trial.user_attrs and "not run" in trial.user_attrs["error"]
