"""The Python API: train, read, load, evaluate and export from a script or a notebook.

    import puffer_tui

    run = puffer_tui.train("gym:CartPole-v1", total_timesteps=150_000, seed=1)
    print(run.state, run.metrics()[-1]["score"])
    policy = run.policy()                      # or puffer_tui.load("runs/cartpole-...")
    print(puffer_tui.evaluate(policy, episodes=20)["episode_return"])
    action = policy.act(observation)           # a raw Gymnasium observation in, an action out
    policy.export("cartpole.onnx")

`train` makes the same run directory as `puffer-tui train` (app/services/run_service.py: the
flag checks with their "did you mean", the env's preset, the preflight checks) and starts the
same engine process (app/engine_launcher.py), so `puffer-tui attach RUN` and `puffer-tui stop
RUN` work on it from a terminal meanwhile. A refused setting raises `ConfigError` (or
`RunDirError`, `CheckpointError`) with the CLI's one-line message, before anything is created.
With `inline=True` the engine runs in the calling process with the serial backend, so a
breakpoint or an exception in the env's own code lands in the script.

No Textual here: the API sits beside the CLI verbs, not under them.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.checkpoint import CheckpointError
from puffer_tui.engine.shared.config import TYPED_SECTIONS, ConfigError
from puffer_tui.engine.shared.metrics_file import flatten as flatten_row
from puffer_tui.engine.shared.metrics_file import read_metrics
from puffer_tui.engine.shared.protocol import LIVE_STATES, RunState
from puffer_tui.engine.shared.run_dir import RunDirError

__all__ = ["CheckpointError", "ConfigError", "Policy", "Run", "RunDirError",
           "TrainingError", "evaluate", "export_format", "load", "train"]

SECTIONS = (*TYPED_SECTIONS, "env")  # the keyword arguments that take a dict of settings
STOP = "stop"  # what on_epoch returns to end the run (checkpointed, resumable)
POLL = 0.1  # seconds between looks at a run's files while waiting on its engine
STOP_PATIENCE = 300.0  # seconds a stop may take (an epoch's end, the final checkpoint)

OnEpoch = Callable[[dict], Any]

# Stable-Baselines3's PPO arguments that have another name (or meaning) here
SB3_NAMES = {
    "n_steps": "train.horizon (steps each env takes per epoch)",
    "n_epochs": "train.update_epochs",
    "batch_size": "train.minibatch_size (SB3's batch_size is the minibatch; train.batch_size "
                  "here is the whole epoch's rollout, num_envs x horizon)",
    "clip_range": "train.clip_coef",
    "clip_range_vf": "train.vf_clip_coef",
    "n_envs": "vec.num_envs",
    "target_kl": "no such setting yet",
    "normalize_advantage": "always on",
}


class TrainingError(RuntimeError):
    """The run ended in error; the text is the engine's own account (events.log has all)."""


def __getattr__(name: str):
    if name == "ExportError":  # the exporter's own error, without loading torch for it
        # lazy: pulls torch, which importing puffer_tui does not load
        from puffer_tui.engine.evaluation.policy_export import ExportError

        return ExportError
    raise AttributeError(f"module 'puffer_tui.api' has no attribute {name!r}")


def export_format(path: str | os.PathLike, format: str | None = None) -> str:
    """"onnx" or "torchscript": the format asked for, or the one the file's suffix names
    (.onnx, .pt); ExportError says what to do otherwise."""
    # lazy: pulls torch, which importing puffer_tui does not load
    from puffer_tui.engine.evaluation.policy_export import format_for

    return format_for(path, format)


# -- train ------------------------------------------------------------------------------------


def train(env: str | None = None, /, *, preset: str | os.PathLike | None = None,
          total_timesteps: int | None = None, seed: int | None = None,
          runs_dir: str | os.PathLike | None = None, detach: bool = False,
          on_epoch: OnEpoch | None = None, inline: bool = False,
          resume: str | os.PathLike | Run | None = None, **overrides: Any) -> Run:
    """Train `env` (a name from `puffer-tui envs`, `gym:ID`, `MODULE:CALLABLE` or
    `pz:MODULE:CALLABLE`) as `puffer-tui train ENV --headless` does, and return its `Run`.

    `env` is positional, so that `env={...}` can hold the env's own settings.
    Settings: `train={"learning_rate": 3e-4}`, `vec={"num_envs": 16}`, `env={"size": 9}`,
    `eval={"interval": 5}`, or dotted keys (`**{"train.learning_rate": 3e-4}`), over the env's
    preset (and the `preset` file's, as `--preset`). `total_timesteps` and `seed` are
    `train.total_timesteps` and `train.seed`. `resume` continues a run from its latest
    checkpoint instead (only live settings and the budget may change).

    Blocks until the run ends, unless `detach=True`: then the engine trains on in its own
    process (it outlives the script) and `Run.wait()` waits for it. `on_epoch(row)` is called
    with each epoch's row of metrics.jsonl; returning "stop" stops the run with a final
    checkpoint (it stays resumable) and `on_epoch` is not called again. An exception raised
    in `on_epoch` stops the run the same way and is then raised again here. The engine is its
    own process and does not wait for `on_epoch`: on short epochs the stop lands a few
    epochs after the row that asked for it (metrics.jsonl keeps every epoch trained);
    with `inline=True` it lands at that epoch's end. Ctrl-C stops the run with a checkpoint and raises
    KeyboardInterrupt. `inline=True` runs the trainer in this process (serial backend): the
    env's exceptions come back as they were raised.
    """
    # lazy: pulls gymnasium and the env registry, which importing puffer_tui does not load
    from puffer_tui.app.services.run_service import new_run, plan_resume

    if env is None and isinstance(overrides.get("env"), str):  # train(env="squared")
        env = overrides.pop("env")
    settings = settings_from(overrides)
    if total_timesteps is not None:
        settings["train.total_timesteps"] = total_timesteps
    if seed is not None:
        settings["train.seed"] = seed
    _refuse_sb3_names(settings)
    if inline:
        backend = settings.get("vec.backend", "serial")
        if backend != "serial":
            raise ConfigError(f"inline=True runs the envs in this process (vec.backend serial), "
                              f"not {backend}; drop inline or the backend")
        settings["vec.backend"] = "serial"
    if detach and inline:
        raise ConfigError("detach=True starts the engine as its own process; inline=True runs "
                          "it in this one: choose one")
    root = rd.runs_root(runs_dir)
    if resume is not None:
        if preset is not None:
            raise ConfigError("preset is for a new run; a resumed run starts from its "
                              "checkpoint's config (give the changes as settings)")
        source = resume.path if isinstance(resume, Run) else resume
        with _api_wording():
            run_dir, changed = plan_resume(source, settings, root, env)
        if changed is not None:
            # lazy: kept off the import of puffer_tui
            from puffer_tui.engine.shared.config import save

            save(changed, run_dir / rd.CONFIG_FILE)
    else:
        if env is None:
            raise ConfigError("name the env to train (see `puffer-tui envs`), or resume=RUN")
        preset_sections = {}
        if preset is not None:
            # lazy: kept off the import of puffer_tui
            from puffer_tui.engine.shared.presets import read_preset

            preset_sections = read_preset(preset)
        with _api_wording():
            run_dir = new_run(env, settings, root, preset_sections, preset)
    run = Run(run_dir)
    if resume is not None:  # the rows after the checkpoint are trained (and told) again
        latest = ckpt.latest_checkpoint(run_dir)
        run._last_epoch = ckpt.parse_name(latest.name)[1] if latest is not None else 0
    if inline:
        run._train_inline(resume is not None, on_epoch)
        return run
    run._start(resume is not None)
    if detach:
        run._on_epoch = on_epoch
        return run
    run.wait(on_epoch=on_epoch)
    return run


class _api_wording:
    """Refusals worded for a script: `train.learning_rate` where the CLI says
    `--train.learning-rate`, and `run.wait()` beside `puffer-tui attach`."""

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        if isinstance(error, ConfigError | RunDirError | CheckpointError):
            text = re.sub(r"--(vec|train|eval|env)\.([a-z0-9-]+)(?:[ =](?!-)(\S+?))?(?=[,;:)?\s]|$)",
                          _dotted, str(error))
            raise type(error)(text) from None
        return False


def _dotted(match: re.Match) -> str:
    section, name, value = match.group(1), match.group(2).replace("-", "_"), match.group(3)
    return f"{section}.{name}" + (f"={value}" if value is not None else "")


def _refuse_sb3_names(settings: Mapping[str, Any]) -> None:
    """An SB3 argument name is refused with the name it has here."""
    for key in settings:
        section, _, name = key.partition(".")
        if name in SB3_NAMES and not _known(key):
            raise ConfigError(f"{key} is Stable-Baselines3's name; here it is "
                              f"{SB3_NAMES[name]}")


def _known(key: str) -> bool:
    # lazy: kept off the import of puffer_tui
    from puffer_tui.engine.shared import config as cfg

    try:
        cfg.spec_for(key)
        return True
    except ConfigError:
        return False


def settings_from(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """`{"section.name": value}` from `train={...}`-style sections and dotted keys; anything
    else is refused with the keyword that was probably meant."""
    settings: dict[str, Any] = {}
    for key, value in overrides.items():
        if key in SECTIONS:
            if not isinstance(value, Mapping):
                raise ConfigError(f"{key}= takes a dict of settings, e.g. "
                                  f"{key}={{\"name\": value}}; got {value!r}")
            settings.update({f"{key}.{name}": v for name, v in value.items()})
        elif "." in key and key.split(".", 1)[0] in SECTIONS:
            settings[key] = value
        elif isinstance(value, Mapping):
            close = difflib.get_close_matches(key, SECTIONS, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}=?" if close else ""
            raise ConfigError(f"unknown section {key}= (sections: {', '.join(SECTIONS)}){hint}")
        else:
            raise ConfigError(f"unknown keyword {key}={value!r}: settings go in a section, e.g. "
                              f"train={{\"{key}\": {value!r}}} (sections: "
                              f"{', '.join(SECTIONS)}), or as a dotted key \"train.{key}\"")
    return settings


# -- a run ------------------------------------------------------------------------------------


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
        return load(self, checkpoint)

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


# -- a trained policy -------------------------------------------------------------------------

BEST = "best.pt"


def load(target: str | os.PathLike | Run, checkpoint: str | os.PathLike = "latest",
         runs_dir: str | os.PathLike | None = None, device: str = "cpu") -> Policy:
    """The policy of a run (a `Run`, its directory or its name: its "latest" checkpoint,
    "best", or a checkpoint path) or of a checkpoint file."""
    path = _checkpoint_path(target, checkpoint, runs_dir)
    # lazy: pulls torch, which importing puffer_tui does not load
    from puffer_tui.engine.algo.policy import load_policy

    ckpt.load_checkpoint(path)  # a clear CheckpointError naming the file if it is damaged
    try:
        module, config = load_policy(path, device=device)
    except ValueError as e:
        raise CheckpointError(str(e)) from None
    return Policy(module, config, path)


def _checkpoint_path(target, checkpoint, runs_dir) -> Path:
    if isinstance(target, Run):
        run_dir = target.path
    else:
        path = Path(target)
        if path.is_file():
            return path
        run_dir = path if rd.is_run_dir(path) else rd.find_run(target, rd.runs_root(runs_dir))
    if checkpoint == "latest":
        latest = ckpt.latest_checkpoint(run_dir)
        if latest is None:
            raise CheckpointError(f"{run_dir.name} has no checkpoint yet (none in "
                                  f"{ckpt.checkpoint_dir(run_dir)})")
        return latest
    if checkpoint == "best":
        best = ckpt.checkpoint_dir(run_dir) / BEST
        if not best.is_file():
            raise CheckpointError(f"{run_dir.name} has no {BEST}: it is kept by evaluation "
                                  f"during training when eval.interval is set")
        return best
    path = Path(checkpoint)
    if not path.is_absolute() and not path.exists():
        path = ckpt.checkpoint_dir(run_dir) / path
    if not path.is_file():
        raise CheckpointError(f"no checkpoint {checkpoint} in {ckpt.checkpoint_dir(run_dir)} "
                              f"(\"latest\", \"best\" or a file)")
    return path


class Policy:
    """A trained policy: raw observations in, the env's actions out.

    `module` is the underlying `torch.nn.Module` (engine/algo/policy.py), `config` the run's
    settings, `checkpoint` the file it came from."""

    def __init__(self, module, config, checkpoint: Path | None = None):
        self.module = module
        self.config = config
        self.checkpoint = checkpoint
        self.observation_space = module.observation_space
        self.action_space = module.action_space
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        kind = "LSTM" if self.recurrent else "MLP"
        return (f"Policy({self.config.env_name}, {kind}, {self.module.num_parameters():,} "
                f"parameters, checkpoint={str(self.checkpoint) if self.checkpoint else None!r})")

    @property
    def recurrent(self) -> bool:
        return bool(self.module.recurrent)

    @property
    def env_name(self) -> str:
        return self.config.env_name

    def act(self, obs, deterministic: bool = True, state=None, episode_start=None):
        """The action for one observation (as the env gives it) or a batch ([N, *shape]).
        Deterministic by default: the most likely action, or the Gaussian's mean clipped to
        the bounds; `deterministic=False` samples. The run's observation normalization is
        applied. A recurrent policy returns `(actions, state)`: pass `state` back on the next
        call (None at the start), and `episode_start` (a bool per row) where an episode
        begins."""
        batch, single = self._batch(obs)
        starts = None if episode_start is None else \
            (self._as_rows(episode_start, len(batch)) if not single else [bool(episode_start)])
        with self._lock:
            actions, state = self.module.act(batch, state, deterministic=deterministic,
                                             starts=starts)
        action = _unbatch(actions, self.action_space) if single else actions
        return (action, state) if self.recurrent else action

    def value(self, obs, state=None):
        """The critic's estimate V(s) for one observation (a float) or a batch ([N])."""
        import torch

        batch, single = self._batch(obs)
        module = self.module
        device = next(module.parameters()).device
        with torch.no_grad():
            tensor = torch.as_tensor(batch, device=device)
            if module.obs_norm is not None:
                tensor = module.obs_norm(tensor)
            _, values, _ = module.step(tensor, state)
        values = values.cpu().numpy()
        return float(values[0]) if single else values

    def export(self, path: str | os.PathLike, format: str | None = None) -> Path:
        """One ONNX or TorchScript file mapping observations to actions (and the value),
        normalization and the deterministic choice included; see `puffer-tui export`."""
        # lazy: pulls the exporter (and onnx), which importing puffer_tui does not load
        from puffer_tui.engine.evaluation.policy_export import export

        return export(self.module, path, format)

    def _batch(self, obs):
        """(observations as [N, *shape] of the space's dtype, whether one was given)."""
        import numpy as np

        space = self.observation_space
        leaves = getattr(space, "leaves", None)
        if leaves is not None and (isinstance(obs, Mapping) or isinstance(obs, tuple)):
            return flatten_structured(obs, space)[None], True
        if leaves is not None and isinstance(obs, list) and obs and \
                isinstance(obs[0], (Mapping, tuple)):
            return np.stack([flatten_structured(o, space) for o in obs]), False
        if isinstance(obs, tuple) and len(obs) == 2 and isinstance(obs[1], Mapping):
            raise ValueError("got (observation, info), as env.reset() returns it: pass the "
                             "observation alone (obs, info = env.reset())")
        array = np.asarray(obs)
        shape = tuple(space.shape)
        if array.shape == shape:
            return array.astype(space.dtype, copy=False)[None], True
        if array.shape[1:] == shape:
            return array.astype(space.dtype, copy=False), False
        raise ValueError(f"observations of shape {array.shape}: {self.env_name}'s policy takes "
                         f"{shape} (one) or (N, {', '.join(map(str, shape))}) (a batch)")

    @staticmethod
    def _as_rows(values, rows: int):
        import numpy as np

        flags = np.asarray(values, dtype=bool).reshape(-1)
        if flags.size != rows:
            raise ValueError(f"episode_start has {flags.size} flags for {rows} observations")
        return flags


def flatten_structured(obs, space):
    """A Dict/Tuple observation as the flat row the policy takes (the env's own flattening,
    envs/gym_spaces.py)."""
    # lazy: pulls gymnasium, which importing puffer_tui does not load
    from puffer_tui.envs.gym_spaces import flatten_by_leaves

    return flatten_by_leaves(obs, space)


def _unbatch(actions, space):
    """One row's action as the env takes it: a Python int for Discrete, else the array."""
    action = actions[0]
    if getattr(action, "ndim", 1) == 0:
        return int(action) if getattr(space, "dtype", None) is None or \
            space.dtype.kind in "iu" else action.item()
    return action


# -- evaluation -------------------------------------------------------------------------------


def evaluate(policy: Policy | str | os.PathLike | Run, env: str | None = None, *,
             episodes: int = 10, seed: int = 0, deterministic: bool = False,
             num_envs: int | None = None, env_settings: Mapping[str, Any] | None = None) -> dict:
    """Play `episodes` episodes on fresh envs and return what `puffer-tui eval --json`
    prints: `episodes`, `episode_return`, `episode_length`, `score` (means), `env`,
    `checkpoint`; and each episode's `episode_returns`, `episode_lengths` and the returns'
    `episode_return_std`. Actions are sampled unless `deterministic=True`, as eval's are. The same arguments give the same numbers as `puffer-tui eval RUN --seed S
    --episodes N --num-envs E [--deterministic]` (its sampling default included). `env` and
    `env_settings` play a variant of the run's env (its spaces must match the policy's);
    `num_envs` defaults to eval's 64, or fewer when fewer episodes are asked for."""
    import dataclasses

    import numpy as np

    # lazy: pulls torch and the envs, which importing puffer_tui does not load
    from puffer_tui.engine.evaluation.evaluate import Evaluator

    if not isinstance(policy, Policy):
        policy = load(policy)
    if env is not None and not isinstance(env, str):
        raise TypeError(f"env is an env's name, such as 'gym:CartPole-v1' (got a "
                        f"{type(env).__name__}); to play an env object of your own, step it "
                        f"with policy.act(obs)")
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    config = policy.config
    if env is not None or env_settings:
        config = dataclasses.replace(config, env_name=env or config.env_name,
                                     env={**config.env, **dict(env_settings or {})})
    num_envs = num_envs or min(EVAL_ENVS, episodes)
    evaluator = Evaluator(policy.module, config, policy.checkpoint, num_envs, seed,
                          deterministic, episodes)
    try:
        _check_spaces(evaluator, policy)
        while not evaluator.finished:
            evaluator.step()
        returns = [float(r) for r in evaluator.done_returns]
        return {**evaluator.result(), "episode_returns": returns,
                "episode_lengths": [int(n) for n in evaluator.done_lengths],
                "episode_return_std": float(np.std(returns)) if returns else None}
    finally:
        evaluator.close()


EVAL_ENVS = 64  # `puffer-tui eval`'s default --num-envs


def _check_spaces(evaluator, policy: Policy) -> None:
    env = evaluator.envs[0]
    if tuple(env.single_observation_space.shape) != tuple(policy.observation_space.shape):
        raise ValueError(f"{evaluator.env_name} observes {env.single_observation_space.shape}; "
                         f"the policy takes {policy.observation_space.shape}")
    if _space_words(env.single_action_space) != _space_words(policy.action_space):
        raise ValueError(f"{evaluator.env_name} acts in {env.single_action_space}; the policy "
                         f"acts in {policy.action_space}")


def _space_words(space) -> tuple:
    """What must agree between two action spaces: the kind, its sizes and shape."""
    return (type(space).__name__, str(getattr(space, "n", "")),
            str(getattr(space, "nvec", "")), tuple(getattr(space, "shape", ()) or ()))
