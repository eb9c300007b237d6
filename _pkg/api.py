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

No Textual here: the API sits beside the CLI verbs, not under them. The parts: the settings a
script gives (_pkg/api_settings.py), `Run` (_pkg/api_run.py), `Policy` and `load`
(_pkg/api_policy.py); this module holds `train` and `evaluate` and is the one to import.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from puffer_tui.api_policy import Policy, policy_of
from puffer_tui.api_run import OnEpoch, Run, TrainingError
from puffer_tui.api_settings import api_wording, refuse_sb3_names, settings_from
from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.checkpoint import CheckpointError
from puffer_tui.engine.shared.config import ConfigError
from puffer_tui.engine.shared.run_dir import RunDirError

__all__ = ["CheckpointError", "ConfigError", "Policy", "Run", "RunDirError",
           "TrainingError", "evaluate", "export_format", "load", "train"]


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
    refuse_sb3_names(settings)
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
        with api_wording():
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
        with api_wording():
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


def load(target: str | os.PathLike | Run, checkpoint: str | os.PathLike = "latest",
         runs_dir: str | os.PathLike | None = None, device: str = "cpu") -> Policy:
    """The policy of a run (a `Run`, its directory or its name: its "latest" checkpoint,
    "best", or a checkpoint path) or of a checkpoint file."""
    return policy_of(target.path if isinstance(target, Run) else target, checkpoint,
                     runs_dir, device)


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
