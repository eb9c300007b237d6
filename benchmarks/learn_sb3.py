"""The SB3 side of `puffer-tui bench learn`, run in its own process:

    python -m puffer_tui.benchmarks.learn_sb3 train ENV --seed S --steps N --out DIR
    python -m puffer_tui.benchmarks.learn_sb3 eval ENV --seed S --out DIR

`train` builds PPO from the zoo's settings for ENV (translate(), as rl_zoo3's ExperimentManager
does: "lin_X" schedules, VecNormalize with the algorithm's gamma, policy_kwargs, the env
wrapper, frame stacking, n_envs DummyVecEnv copies each under a Monitor; a PettingZoo env:
n_envs games through SuperSuit, every agent a row), trains N steps and
writes DIR/result.json (the per-rollout episode returns and the loop's time), DIR/model.zip
and DIR/vecnormalize.pkl; while it trains, DIR/progress.json holds the returns so far
(every PROGRESS_EVERY_S), so a run killed at its time limit still shows its curve. `eval`
plays the saved policy on one fresh env (normalization statistics frozen, rewards raw) for
the env's eval episodes, in sequence, and writes DIR/eval.json. The parent
(benchmarks/learn.py) times each process and reads the files.

Tested in: tests/benchmarks/test_bench_learn.py (threads, device, one tiny real run)
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

from puffer_tui.benchmarks.learn_zoo_settings import ENVS, ZOO_PPO
from puffer_tui.benchmarks.validation import VALIDATION
from puffer_tui.engine.shared.atomic_write import write_atomic

SCHEDULED = ("learning_rate", "clip_range", "clip_range_vf")  # the keys the zoo schedules
NOT_PPO = ("n_envs", "n_timesteps", "normalize", "env_wrapper", "frame_stack", "policy")
PROGRESS_EVERY_S = 5.0  # how often a training run rewrites DIR/progress.json


def linear_schedule(initial: float):
    """SB3's progress_remaining goes 1 -> 0 over training: the value decays linearly to 0."""
    def schedule(progress_remaining: float) -> float:
        return progress_remaining * initial
    schedule.initial = initial  # for the report and the tests
    return schedule


def translate(entry: dict) -> dict:
    """A ZOO_PPO entry as {policy, ppo (PPO keyword arguments), n_envs, normalize (VecNormalize
    keyword arguments, or None), env_wrapper (dotted name or None), frame_stack (or None),
    n_timesteps}."""
    import torch.nn as nn

    ppo = {k: v for k, v in entry.items() if k not in NOT_PPO}
    for key in SCHEDULED:
        value = ppo.get(key)
        if isinstance(value, str):
            if not value.startswith("lin_"):
                raise ValueError(f"unknown schedule {value!r} for {key}")
            ppo[key] = linear_schedule(float(value[4:]))
    if isinstance(ppo.get("policy_kwargs"), str):
        # the zoo evaluates this string too; ours are constants in learn_zoo_settings.py
        ppo["policy_kwargs"] = eval(ppo["policy_kwargs"], {"__builtins__": {}},  # noqa: S307
                                    {"dict": dict, "nn": nn})
    normalize = entry.get("normalize", False)
    if isinstance(normalize, str):  # e.g. "{'norm_obs': False, 'norm_reward': True}"
        normalize = eval(normalize, {"__builtins__": {}}, {"dict": dict})  # noqa: S307
    elif normalize:
        normalize = {}
    else:
        normalize = None
    if normalize is not None and "gamma" in entry:  # the zoo: "same discount factor"
        normalize["gamma"] = entry["gamma"]
    for key in ("batch_size", "n_steps", "n_epochs", "sde_sample_freq"):
        if key in ppo:
            ppo[key] = int(ppo[key])
    return {"policy": entry["policy"], "ppo": ppo, "n_envs": int(entry.get("n_envs", 1)),
            "normalize": normalize, "env_wrapper": entry.get("env_wrapper"),
            "frame_stack": entry.get("frame_stack"), "n_timesteps": int(entry["n_timesteps"])}


def _wrapper_class(dotted: str | None):
    if dotted is None:
        return None
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _import_needed(env) -> None:
    for module in env.needs:
        importlib.import_module(module)
    if env.sb3_id and env.sb3_id.startswith("ALE/") or env.zoo == "atari":
        import ale_py
        import gymnasium

        gymnasium.register_envs(ale_py)
    if "minigrid" in env.needs:
        import minigrid  # noqa: F401  (registers MiniGrid-* ids)


def make_venv(env, setup: dict, n_envs: int, seed: int, normalize_training: bool,
              stats: Path | None = None):
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack, VecNormalize

    _import_needed(env)
    if _is_pettingzoo(env):
        venv = _pettingzoo_venv(env.ours, n_envs, seed)
    else:
        venv = make_vec_env(env.sb3_id or env.name, n_envs=n_envs, seed=seed,
                            env_kwargs=dict(env.sb3_env_kwargs) or None,
                            wrapper_class=_wrapper_class(setup["env_wrapper"]),
                            vec_env_cls=DummyVecEnv)
    if setup["frame_stack"]:
        venv = VecFrameStack(venv, setup["frame_stack"])
    if setup["normalize"] is not None:
        if stats is not None:
            venv = VecNormalize.load(str(stats), venv)
            venv.training, venv.norm_reward = False, False  # frozen; raw rewards
        else:
            venv = VecNormalize(venv, **setup["normalize"])
    return venv


def _is_pettingzoo(env) -> bool:
    return env.ours.startswith("pz:")


def _pettingzoo_venv(spec: str, games: int, seed: int):
    """A parallel PettingZoo env ("pz:MODULE:CALLABLE") as SB3 trains one, the way
    PettingZoo's own SB3 tutorials do: SuperSuit makes each agent a row of a vector env (one
    policy shared by all agents, as ours) and concatenates `games` copies; a VecMonitor records
    each agent's episodes."""
    import supersuit
    from stable_baselines3.common.vec_env import VecMonitor

    _, module, factory = spec.split(":")
    parallel = getattr(importlib.import_module(module), factory)()
    rows = supersuit.pettingzoo_env_to_vec_env_v1(parallel)
    venv = supersuit.concat_vec_envs_v1(rows, games, num_cpus=0, base_class="stable_baselines3")
    # SuperSuit's vector env has no seed() for SB3 to call: its copies take seed + i here, once
    venv.venv.reset(seed=seed)
    return VecMonitor(venv)


def sb3_threads(given: int) -> int:
    """torch threads: the cores other processes leave free (as ours picks them), at least 1;
    SB3's default (one per core) beside other load oversubscribes the cores."""
    if given > 0:
        return given
    # lazy: pulls gymnasium, the vectorizer, which this module does not load
    from puffer_tui.engine.algo.cpu_load import busy_cores_of_others
    from puffer_tui.engine.vec.sizing import available_cores

    return max(1, available_cores() - int(busy_cores_of_others() + 0.5))


def train(env, seed: int, steps: int, out: Path, threads: int, device: str = "cpu") -> dict:
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback

    threads = sb3_threads(threads)
    torch.set_num_threads(threads)
    setup = translate(ZOO_PPO[env.zoo])
    venv = make_venv(env, setup, setup["n_envs"], seed, True)
    chunks: list[list] = []  # [step at the rollout's end, mean return, episodes] per rollout

    class Returns(BaseCallback):
        def _on_training_start(self) -> None:
            self.returns: list[float] = []

        def _on_step(self) -> bool:
            for info in self.locals.get("infos", ()):
                if "episode" in info:  # Monitor's record: the raw return
                    self.returns.append(float(info["episode"]["r"]))
            return True

        def _on_rollout_end(self) -> None:
            n = len(self.returns)
            step = int(self.model.num_timesteps)
            chunks.append([step, sum(self.returns) / n if n else None, n])
            self.returns = []
            nonlocal saved_at
            if time.perf_counter() - saved_at >= PROGRESS_EVERY_S:
                saved_at = time.perf_counter()
                # whole or not at all: a kill mid-write leaves the last one
                write_atomic(out / "progress.json", json.dumps(
                    {"steps": step, "chunks": chunks, "train_s": saved_at - start}))
            if step * 10 // max(steps, 1) > (step - self.model.n_steps * venv.num_envs) * 10 \
                    // max(steps, 1):  # about every 10%: a long run in the log shows its pace
                print(f"{step:,} steps, {time.perf_counter() - start:.0f} s", flush=True)

    own_seed = _is_pettingzoo(env)  # seeded in _pettingzoo_venv; PPO would call venv.seed()
    if own_seed:
        from stable_baselines3.common.utils import set_random_seed

        set_random_seed(seed)
    model = PPO(setup["policy"], venv, seed=None if own_seed else seed, device=device,
                verbose=0, **setup["ppo"])
    start = saved_at = time.perf_counter()
    model.learn(total_timesteps=steps, callback=Returns())
    seconds = time.perf_counter() - start
    model.save(out / "model.zip")
    if setup["normalize"] is not None:
        venv.save(str(out / "vecnormalize.pkl"))
    venv.close()
    return {"steps": int(model.num_timesteps), "train_s": seconds, "chunks": chunks,
            "torch_threads": threads, "device": device}


def evaluate(env, seed: int, out: Path, episodes: int) -> dict:
    """The final policy on one env, eval_episodes in sequence (no bias to short episodes);
    a multi-agent env's agents each count their episodes, as ours does."""
    import numpy as np
    import torch
    from stable_baselines3 import PPO

    torch.set_num_threads(1)
    setup = translate(ZOO_PPO[env.zoo])
    stats = out / "vecnormalize.pkl"
    venv = make_venv(env, setup, 1, seed, False, stats if stats.exists() else None)
    model = PPO.load(out / "model.zip", device="cpu")
    returns, lengths = [], []
    obs = venv.reset()
    while len(returns) < episodes:
        action, _ = model.predict(obs, deterministic=env.eval_deterministic)
        obs, _, dones, infos = venv.step(action)
        for done, info in zip(dones, infos):
            if done and "episode" in info and len(returns) < episodes:
                returns.append(float(info["episode"]["r"]))
                lengths.append(int(info["episode"]["l"]))
    venv.close()
    return {"episodes": len(returns), "episode_return": float(np.mean(returns)),
            "episode_length": float(np.mean(lengths)), "returns": returns}


def peer_envs() -> dict:
    """The validation set's envs without a published figure: SB3 runs them (validation.py)."""
    return {h.name: h.env for h in VALIDATION.values() if h.runs_peer}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m puffer_tui.benchmarks.learn_sb3")
    p.add_argument("mode", choices=("train", "eval"))
    # bench learn's envs, and the validation set's that SB3 is run on (no published figure)
    known = {**ENVS, **peer_envs()}
    p.add_argument("env", choices=sorted(known))
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--steps", type=int, default=0)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--device", default="cpu", help="train: torch's device for the policy")
    p.add_argument("--episodes", type=int, default=None, help="eval: default the env's")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    env = known[args.env]
    if env.zoo is None:
        raise SystemExit(f"{env.name} has no SB3 peer")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.mode == "train":
        result = train(env, args.seed, args.steps, args.out, args.threads, args.device)
        name = "result.json"
    else:
        episodes = env.eval_episodes if args.episodes is None else args.episodes
        result, name = evaluate(env, args.seed, args.out, episodes), "eval.json"
    write_atomic(args.out / name, json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
