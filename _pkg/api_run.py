"""`Run`: a run directory and, while it trains, its engine, for a script (_pkg/api.py's
`train` returns one; `Run(path)` opens any run): its state, metrics and checkpoints, waiting
on it with an `on_epoch` callback, stopping it with a checkpoint, changing live settings, and
the inline engine (`train(inline=True)`) that runs in the calling process.

Tested in: tests/test_api.py"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from puffer_tui.api_policy import BEST, Policy, policy_of
from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.config import ConfigError
from puffer_tui.engine.shared.metrics_file import flatten as flatten_row
from puffer_tui.engine.shared.metrics_file import read_metrics
from puffer_tui.engine.shared.protocol import LIVE_STATES, RunState

STOP = "stop"  # what on_epoch returns to end the run (checkpointed, resumable)
POLL = 0.1  # seconds between looks at a run's files while waiting on its engine
STOP_PATIENCE = 300.0  # seconds a stop may take (an epoch's end, the final checkpoint)

OnEpoch = Callable[[dict], Any]


class TrainingError(RuntimeError):
    """The run ended in error; the text is the engine's own account (events.log has all)."""


class Run:
    """A run directory and, while it trains, its engine.

    `Run(path)` (or `Run("squared-20261201-101500")`, a name under the runs root) opens an
    existing run, whoever started it."""

    def __init__(self, path: str | os.PathLike, runs_dir: str | os.PathLike | None = None):
        self.path = rd.find_run(path, rd.runs_root(runs_dir)) if not rd.is_run_dir(Path(path)) \
            else Path(path).resolve()
        self._handle = None  # the engine process, when this Run started it
        self._on_epoch: OnEpoch | None = None
        self._last_epoch = last_epoch(read_metrics(self.path))  # on_epoch sees later ones
        self._inline_engine = None
        self._stopping = False  # on_epoch asked for the stop

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r}, state={self.state!r})"

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def state(self) -> str:
        """new, starting, running, paused, stopping, finished, stopped or error."""
        return str(rd.run_state(self.path))

    @property
    def global_step(self) -> int:
        return int(rd.run_info(self.path).global_step or 0)

    def metrics(self, frame: str | None = None):
        """Every epoch's row of metrics.jsonl, as dicts, as the file holds them: `epoch`,
        `global_step`, `sps`, the losses (`policy_loss`, `entropy`, ...), the episodes'
        means (`episode_return`, `score`, ...; absent in an epoch where none ended),
        `timing_*`, `eval/*`. `frame="pandas"` or `"polars"`: the same rows as a data frame,
        if that package is installed."""
        rows = read_metrics(self.path)
        if frame is None:
            return rows
        if frame in ("pandas", "polars"):
            import importlib

            try:
                library = importlib.import_module(frame)
            except ImportError:
                raise ImportError(f"metrics(frame={frame!r}) needs {frame}: pip install "
                                  f"{frame}") from None
            return library.DataFrame(rows)
        raise ValueError(f"frame={frame!r}: choose None (dicts), 'pandas' or 'polars'")

    def checkpoints(self) -> list[Path]:
        """The run's checkpoints, oldest first; best.pt (kept by evaluation) last if any."""
        found = list(ckpt.list_checkpoints(self.path))
        best = ckpt.checkpoint_dir(self.path) / BEST
        return found + ([best] if best.is_file() else [])

    def policy(self, checkpoint: str | os.PathLike = "latest") -> Policy:
        """The trained policy of a checkpoint: "latest", "best" (evaluation's best.pt) or a
        path."""
        return policy_of(self.path, checkpoint)

    # -- the engine ---------------------------------------------------------------------------

    def _start(self, resume: bool) -> None:
        # lazy: kept off the import of puffer_tui
        from puffer_tui.app.engine_launcher import EngineStartError, launch_engine

        try:
            self._handle = launch_engine(self.path, resume=resume)
        except EngineStartError as e:
            raise TrainingError(f"{self.name}: the engine failed to start: {e}") from None

    @property
    def running(self) -> bool:
        return self.state in LIVE_STATES

    def wait(self, timeout: float | None = None, on_epoch: OnEpoch | None = None) -> str:
        """Wait until the run ends (or `timeout` seconds), calling `on_epoch` (or the one
        given to `train`) with each new epoch's row; returns the run's state. Raises
        TrainingError if it ended in error."""
        on_epoch = on_epoch or self._on_epoch
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                self._deliver_rows(on_epoch)
                if not self._engine_alive():
                    self._deliver_rows(on_epoch)
                    break
                if deadline is not None and time.monotonic() > deadline:
                    return self.state
                time.sleep(POLL)
        except KeyboardInterrupt:
            self.stop(reason="Ctrl-C in the script")
            self._say_stopped("Ctrl-C")
            raise
        except BaseException:  # on_epoch raised: stop with a checkpoint, then say why
            self.stop(reason="an exception in on_epoch")
            raise
        self._reap()
        return self._final_state()

    def stop(self, timeout: float = STOP_PATIENCE, reason: str = "Run.stop()") -> str:
        """Ask the engine to finish its epoch, checkpoint and exit; wait for it. Returns the
        run's state ("stopped", or "finished" if it ended first)."""
        if self._inline_engine is not None:
            self._inline_engine.state.request_stop(checkpoint=True)
            return self.state
        if not self._engine_alive():
            return self.state
        # lazy: kept off the import of puffer_tui
        from puffer_tui.app.engine_client import EngineClientError
        from puffer_tui.app.stop_signals import send_stop

        try:
            client = send_stop(self.path, f"puffer_tui: {reason} (pid {os.getpid()})")
        except EngineClientError:
            client = None  # it went away meanwhile
        deadline = time.monotonic() + timeout
        try:
            while self._engine_alive():
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{self.name}: the engine has not stopped {timeout:g} s "
                                       f"after the stop; `puffer-tui stop {self.path}` waits "
                                       f"for it again")
                time.sleep(POLL)
        finally:
            if client is not None:
                client.close()
        self._reap()
        return self.state

    def set(self, **fields: Any) -> dict[str, Any]:
        """Change live settings of the training engine now, as the dashboard's `h` does:
        `run.set(learning_rate=1e-3)` or `run.set(**{"train.ent_coef": 0.01})`. Returns
        {key: value as the engine applied it}; ConfigError if the engine refuses one."""
        # lazy: kept off the import of puffer_tui
        from puffer_tui.app.engine_client import EngineClient, EngineClientError

        if self._inline_engine is not None:
            raise RuntimeError("set() talks to an engine process; an inline run is in this "
                               "process: change its settings from on_epoch's thread instead")
        if not self.running:
            raise RuntimeError(f"{self.name} is not training ({self.state}): live settings "
                               f"change a running engine; resume it to train with others")
        keys = {live_key(name, self.path): value for name, value in fields.items()}
        applied = {}
        try:
            with EngineClient.connect(self.path) as client:
                for key, value in keys.items():
                    reply = client.request("set", key=key, value=value)
                    if not reply.get("ok"):
                        raise ConfigError(str(reply.get("error", reply)))
                    applied[reply.get("key", key)] = reply.get("value", value)
        except EngineClientError as e:
            raise RuntimeError(f"{self.name} is not training ({self.state}): {e}") from None
        return applied

    # -- waiting, inside ----------------------------------------------------------------------

    def _engine_alive(self) -> bool:
        if self._handle is not None:
            return self._handle.poll() is None
        return self.state in LIVE_STATES

    def _reap(self) -> None:
        if self._handle is not None:
            try:
                self._handle.wait(30)
            except Exception:
                pass

    def _say_stopped(self, cause: str) -> None:
        print(f"{cause}: {self.name} {self.state} at {self.global_step:,} steps; resume it with "
              f"puffer_tui.train(resume={str(self.path)!r})", file=sys.stderr, flush=True)

    def _deliver_rows(self, on_epoch: OnEpoch | None) -> None:
        # by epoch, not by line: a resume first drops the rows written after its checkpoint
        new = [row for row in read_metrics(self.path)
               if isinstance(row.get("epoch"), int) and row["epoch"] > self._last_epoch]
        if new:
            self._last_epoch = new[-1]["epoch"]
        if on_epoch is None or self._stopping:
            return
        for row in new:
            if on_epoch(row) == STOP:
                self._stopping = True  # not called again: the rows after it are the stop's
                self.stop(reason=f"on_epoch returned 'stop' at epoch {row['epoch']}")
                return

    def _final_state(self) -> str:
        state = self.state
        if state == RunState.ERROR:
            info = rd.run_info(self.path)
            raise TrainingError(f"{self.name} ended in error at {info.global_step or 0:,} "
                                f"steps: {info.detail or 'see ' + str(self.path / rd.EVENTS_FILE)}")
        return state

    def _train_inline(self, resume: bool, on_epoch: OnEpoch | None) -> None:
        """The engine in this process, on this thread: env code raises into the caller."""
        # lazy: pulls torch and the trainer, which importing puffer_tui does not load
        from puffer_tui.engine.runtime.process import Engine

        engine = Engine(self.path, resume=resume, echo=_echo_warnings)
        raised: list[BaseException] = []

        def deliver(row: dict) -> None:
            if raised or on_epoch is None:
                return
            try:
                if on_epoch(flatten_row(row)) == STOP:  # the row as metrics.jsonl has it
                    engine.state.request_stop(checkpoint=True)
            except BaseException as e:  # stop with a checkpoint, then raise it to the caller
                raised.append(e)
                engine.state.request_stop(checkpoint=True)

        engine.row_listeners.append(deliver)
        self._inline_engine = engine
        try:
            engine.run()
        finally:
            self._inline_engine = None
        self._last_epoch = last_epoch(read_metrics(self.path))
        if raised:
            raise raised[0]
        if engine.exception is not None and not isinstance(engine.exception, KeyboardInterrupt):
            raise engine.exception
        if self.state == RunState.STOPPED and engine._signals:
            self._say_stopped("Ctrl-C")
            raise KeyboardInterrupt
        self._final_state()


def _echo_warnings(event: dict) -> None:
    """An inline run's events for the script's terminal: warnings only, on stderr (errors
    come back as the exception itself; events.log has every event)."""
    if event.get("level") == "warning":
        print(f"puffer-tui: warning: {event.get('text', '')}", file=sys.stderr, flush=True)


def last_epoch(rows: list[dict]) -> int:
    return max((row["epoch"] for row in rows if isinstance(row.get("epoch"), int)), default=0)


def live_key(name: str, run_dir: Path) -> str:
    """"train.learning_rate" for "learning_rate" (the one live field of that name) or for the
    dotted key itself; ConfigError naming the live fields otherwise."""
    # lazy: kept off the import of puffer_tui
    from puffer_tui.engine.shared import config as cfg

    if "." in name:
        return name
    env_name = rd.run_info(run_dir).env
    live = [s.key for s in cfg.schema(env_name) if s.live]
    matches = [key for key in live if key.split(".", 1)[1] == name]
    if len(matches) == 1:
        return matches[0]
    raise ConfigError(f"{name} is not a live setting; live settings: "
                      f"{', '.join(k.split('.', 1)[1] for k in live)}")
