"""One trial as an ordinary run: its own run directory and engine process.

The engine is started exactly as `puffer-tui train` starts it (`python -m puffer_tui.engine
RUN_DIR`, own session, output in engine.out); app/engine_launcher.py cannot be imported here
(the engine never imports the app), and the driver does not wait for the socket anyway: it
follows the run through metrics.jsonl and status.json and stops it through its socket.

Tested in: tests/engine/sweep/test_sweep_driver_logic.py
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.protocol import LIVE_STATES, RunState
from puffer_tui.engine.shared.sweep_control import ControlError, request

STOP_GRACE = 30.0  # seconds a stopped engine gets before SIGKILL


class TrialRun:
    def __init__(self, number: int, run_dir: Path, process: subprocess.Popen):
        self.number = number
        self.run_dir = run_dir
        self.process = process
        self.started = time.time()
        self.ended: float | None = None
        self.rows: list[dict] = []
        self.stop_reason: str | None = None  # "pruned" / "interrupted" / a failure text
        self._stop_sent: float | None = None
        self._offset = 0

    @staticmethod
    def prepare(number: int, config: cfg.Config, trials_dir: Path) -> Path:
        """The trial's run directory with its config.toml (as `puffer-tui train` leaves it)."""
        run_dir = rd.create_run_dir(f"{config.env_name}-t{number:04d}", trials_dir)
        cfg.save(config, run_dir / rd.CONFIG_FILE)
        return run_dir

    @classmethod
    def launch(cls, number: int, run_dir: Path, cores: list[int] | None = None) -> TrialRun:
        with (run_dir / rd.ENGINE_OUT_FILE).open("ab") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "puffer_tui.engine", str(run_dir)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True, close_fds=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        if cores:
            try:  # threads and workers the engine starts later inherit its cores
                os.sched_setaffinity(process.pid, cores)
            except (OSError, AttributeError):
                pass
        return cls(number, run_dir, process)

    @classmethod
    def adopt(cls, number: int, run_dir: Path, started: float) -> TrialRun:
        """Follow the engine a dead driver started (it still trains, or has ended since):
        its rows are read from the start of metrics.jsonl, and its results kept."""
        run = cls(number, run_dir, EngineProcess(rd.read_status(run_dir)))
        run.started = started
        run.poll()  # rows the dead driver already reported to the study: not again
        return run

    @property
    def seconds(self) -> float:
        return (self.ended or time.time()) - self.started

    def poll(self) -> list[dict]:
        """Metrics rows written since the last call (a torn last line waits for its end)."""
        try:
            with (self.run_dir / rd.METRICS_FILE).open("rb") as f:
                f.seek(self._offset)
                data = f.read()
        except OSError:
            return []
        end = data.rfind(b"\n") + 1
        self._offset += end
        rows = []
        for line in data[:end].splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict):
                rows.append(row)
        self.rows += rows
        return rows

    def exited(self) -> bool:
        if self.process.poll() is None:
            if self._stop_sent and time.time() - self._stop_sent > STOP_GRACE:
                self._signal(signal.SIGKILL)
            return False
        if self.ended is None:
            self.ended = time.time()
        return True

    def stop(self, reason: str) -> None:
        """Ask the engine to stop without a checkpoint (its socket; SIGTERM if that fails)."""
        if self.stop_reason is None:
            self.stop_reason = reason
        if self._stop_sent is not None or self.process.poll() is not None:
            return
        self._stop_sent = time.time()
        try:
            request(rd.socket_path(self.run_dir), "stop", {"checkpoint": False}, timeout=3.0)
        except ControlError:
            self._signal(signal.SIGTERM)

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def state(self) -> str:
        return rd.run_state(self.run_dir)

    def settle_status(self) -> None:
        """A killed engine (SIGKILL, OOM) could not write its final state: status.json still
        says running. Make it final (error, with how the process ended)."""
        status = rd.read_status(self.run_dir)
        if status.get("state") not in LIVE_STATES or rd.engine_alive(status):
            return
        code = self.process.returncode
        how = (f"killed by {signal.Signals(-code).name}" if isinstance(code, int) and code < 0
               else f"exited with status {code}" if code is not None else "ended unseen")
        status.update(state=RunState.ERROR, error=f"the engine was {how} before it could say "
                                                    f"why (see engine.out)")
        rd.write_json_atomic(self.run_dir / rd.STATUS_FILE, status)

    def fault(self) -> str | None:
        """The error that paused this run (NaN, full disk), if the engine waits on a person."""
        if rd.read_status(self.run_dir).get("state") != RunState.PAUSED:
            return None
        lines = _tail_lines(self.run_dir / rd.EVENTS_FILE, 1)
        return lines[-1] if lines and "[error]" in lines[-1] else None

    def error_text(self) -> str:
        """What went wrong, for the trial's `error` attribute: the engine's error events (with
        their tracebacks) or the end of engine.out."""
        status = rd.read_status(self.run_dir)
        out = "\n".join(_tail_lines(self.run_dir / rd.ENGINE_OUT_FILE, 40))
        head = status.get("error") or f"engine exited with status {self.process.returncode}"
        return f"{head}\n{out}".strip()[-8000:]


def _tail_lines(path: Path, count: int) -> list[str]:
    try:
        return path.read_text(errors="replace").rstrip().splitlines()[-count:]
    except OSError:
        return []


class EngineProcess:
    """The part of subprocess.Popen a TrialRun uses, for an engine it did not start (its pid
    and start time from status.json): running while that process lives."""

    def __init__(self, status: dict):
        self.pid = status.get("pid") if isinstance(status.get("pid"), int) else -1
        self._status = status
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and not rd.engine_alive(self._status):
            self.returncode = 0  # not our child: how it ended is in its status.json
        return self.returncode
