"""Atari (gym:ALE/Pong-v5) training SPS: puffer-tui's trainer against a plain loop.

    python -m puffer_tui.benchmarks.atari_vs_plain_loop [--rounds 3] [--batches 2]

By default ours is what `puffer-tui train gym:ALE/Pong-v5` runs (its preset: inline worker,
precision auto, torch threads chosen by the trainer).

Both train the same CNN policy (make_policy, envs/gym_presets/ALE.toml's sizes) on the same
preprocessing (envs/atari_preprocessing.py: noop reset, frame skip 4 max-pooled, 84x84 gray,
4 frames) with the same PPO work per batch (num_envs x horizon steps, inference on every
step, update_epochs x minibatches gradient steps):
  * ours: Trainer on the multiprocessing backend (`--workers` worker processes, shared
    memory, the policy's uint8 -> float on the device);
  * plain: Gymnasium's vector env (SyncVectorEnv as CleanRL's ppo_atari; `--plain async`
    for AsyncVectorEnv) + the same model, a clipped-PPO update per batch written out here.
Agent-steps/s is wall-clock steps over wall-clock time of whole batches (collection + update),
after one warm-up batch each. Rounds alternate ours / plain so that load from elsewhere on a
shared machine falls on both; the medians are reported with their ratio.

CPU time per agent step is recorded too (this process, and the env worker processes), as it
barely depends on other load: `idle_sps` projects each side's speed on idle cores from it,
assuming synchronous steps (the main process waits while the workers step in parallel):
1 / (main CPU + worker CPU / workers) per step.

Tested in: tests/envs/test_atari_preprocessing.py (both sides with tiny sizes)
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import time
import warnings

import numpy as np
import psutil
import torch

from puffer_tui.engine.shared.config import load_config
from puffer_tui.engine.shared.presets import preset_overrides, read_preset

ENV_ID = "ALE/Pong-v5"
PRESET = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "envs", "gym_presets", "ALE.toml")


def atari_config(args):
    """The Atari preset for gym:ALE/Pong-v5 with the benchmark's sizes."""
    overrides = preset_overrides(read_preset(PRESET), "gym:" + ENV_ID, PRESET)
    # unset: what `puffer-tui train gym:ALE/Pong-v5` picks (the preset, then the defaults)
    chosen = {"vec.inline": args.inline, "train.precision": args.precision}
    overrides.update({key: value for key, value in chosen.items() if value is not None})
    overrides.update({
        "vec.backend": "multiprocessing", "vec.num_workers": args.workers,
        "vec.num_envs": args.num_envs, "vec.batch_size": args.vec_batch,
        "train.horizon": args.horizon, "train.minibatch_size": args.minibatch,
        "train.update_epochs": args.update_epochs, "train.torch_threads": args.threads,
        "train.total_timesteps": 10**12, "train.anneal_lr": False,
    })
    return load_config("gym:" + ENV_ID, overrides)


class Ours:
    def __init__(self, config):
        # lazy: pulls gymnasium, the trainer, the policy, the vectorizer, which this module does not load
        from puffer_tui.engine.algo.trainer import Trainer

        self.trainer = Trainer(config)

    def worker_pids(self) -> list[int]:
        return self.trainer.worker_pids

    def batch(self) -> int:
        torch.set_num_threads(self.trainer.torch_threads[0])  # the plain loop's rounds set theirs
        before = self.trainer.global_step
        self.trainer.run_epoch()
        return self.trainer.global_step - before

    def close(self):
        self.trainer.close()


class OursCollect:
    """Collection only: our vec env (the trainer's make_vecenv) + inference on every step."""

    def __init__(self, config, policy):
        # lazy: pulls gymnasium, the trainer, the policy, the vectorizer, which this module does not load
        from puffer_tui.engine.algo.trainer import make_vecenv

        self.vecenv, self.policy, self.steps = make_vecenv(config), policy, config.train.horizon
        self.vecenv.async_reset(config.train.seed)

    def worker_pids(self) -> list[int]:
        return list(self.vecenv.worker_pids)

    def batch(self) -> int:
        stepped = 0
        for _ in range(self.steps * self.vecenv.num_envs // self.vecenv.agents_per_batch):
            obs, _, _, _, _, _, masks = self.vecenv.recv()
            with torch.no_grad():
                params, _, _ = self.policy.step(torch.from_numpy(obs))
                actions, _ = self.policy.actor.sample(params)
            stepped += int(np.count_nonzero(masks))
            self.vecenv.send(actions.numpy())
        return stepped

    def close(self):
        self.vecenv.close()


class PlainLoop:
    """Gymnasium vector env + the same policy + a textbook PPO update (CleanRL-style)."""

    def __init__(self, config, kind: str = "sync"):
        import gymnasium

        # lazy: pulls gymnasium, the policy, which this module does not load
        from puffer_tui.engine.algo.policy import make_policy
        from puffer_tui.envs.atari_preprocessing import atari_env

        train, n = config.train, config.vec.num_envs
        self.train, self.num_envs = train, n
        fns = [functools.partial(atari_env, ENV_ID) for _ in range(n)]
        mode = {"autoreset_mode": gymnasium.vector.AutoresetMode.SAME_STEP}
        if kind == "async":
            self.envs = gymnasium.vector.AsyncVectorEnv(fns, context="forkserver", **mode)
        else:
            self.envs = gymnasium.vector.SyncVectorEnv(fns, **mode)
        self.policy = make_policy(self.envs.single_observation_space,
                                  self.envs.single_action_space, train)
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=train.learning_rate,
                                          eps=train.adam_eps,
                                          betas=(train.adam_beta1, train.adam_beta2))
        self.obs, _ = self.envs.reset(seed=train.seed)

    def worker_pids(self) -> list[int]:
        return [process.pid for process in getattr(self.envs, "processes", [])]

    def batch(self, learn: bool = True) -> int:
        train, policy, n, horizon = self.train, self.policy, self.num_envs, self.train.horizon
        obs = torch.empty((horizon, n, *self.obs.shape[1:]), dtype=torch.uint8)
        actions = torch.empty((horizon, n), dtype=torch.int64)
        logprobs, values = torch.empty((horizon, n)), torch.empty((horizon, n))
        rewards, dones = torch.empty((horizon, n)), torch.empty((horizon, n))
        for t in range(horizon):
            obs[t] = torch.from_numpy(self.obs)
            with torch.no_grad():
                params, value, _ = policy.step(obs[t])
                action, logprob = policy.actor.sample(params)
            actions[t], logprobs[t], values[t] = action, logprob, value
            self.obs, reward, terminated, truncated, _ = self.envs.step(action.numpy())
            rewards[t] = torch.from_numpy(np.clip(reward, -1, 1).astype(np.float32))
            dones[t] = torch.from_numpy((terminated | truncated).astype(np.float32))
        if not learn:
            return horizon * n
        with torch.no_grad():
            next_value = policy.step(torch.from_numpy(self.obs))[1]
        advantages, last = torch.zeros_like(rewards), torch.zeros(n)
        for t in reversed(range(horizon)):
            following = next_value if t == horizon - 1 else values[t + 1]
            keep = 1.0 - dones[t]
            delta = rewards[t] + train.gamma * following * keep - values[t]
            last = delta + train.gamma * train.gae_lambda * keep * last
            advantages[t] = last
        returns = advantages + values
        flat = [x.reshape(horizon * n, *x.shape[2:]) for x in
                (obs, actions, logprobs, values, advantages, returns)]
        size = horizon * n
        for _ in range(train.update_epochs):
            order = torch.randperm(size)
            for start in range(0, size, train.minibatch_size):
                idx = order[start : start + train.minibatch_size]
                b_obs, b_act, b_logp, b_val, b_adv, b_ret = (x[idx] for x in flat)
                params, new_value, _ = policy.step(b_obs)
                new_logp, entropy = policy.actor.evaluate(params, b_act)
                ratio = (new_logp - b_logp).exp()
                b_adv = (b_adv - b_adv.mean()) / (b_adv.std() + 1e-8)
                pg = torch.max(-b_adv * ratio, -b_adv * ratio.clamp(1 - train.clip_coef,
                                                                    1 + train.clip_coef)).mean()
                clipped = b_val + (new_value - b_val).clamp(-train.vf_clip_coef,
                                                            train.vf_clip_coef)
                v_loss = 0.5 * torch.max((new_value - b_ret) ** 2, (clipped - b_ret) ** 2).mean()
                loss = pg + train.vf_coef * v_loss - train.ent_coef * entropy.mean()
                self.optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(policy.parameters(), train.max_grad_norm)
                self.optimizer.step()
        return size

    def close(self):
        self.envs.close()


def _cpu(processes) -> float:
    return sum(sum(p.cpu_times()[:2]) for p in processes)


def timed_round(runner, batches: int) -> dict:
    """sps, and CPU microseconds per agent step in this process and in the workers."""
    workers = [psutil.Process(pid) for pid in runner.worker_pids()]
    start, cpu, worker_cpu, steps = time.perf_counter(), time.process_time(), _cpu(workers), 0
    for _ in range(batches):
        steps += runner.batch()
    wall = time.perf_counter() - start
    main_us = (time.process_time() - cpu) / steps * 1e6
    workers_us = (_cpu(workers) - worker_cpu) / steps * 1e6
    idle_us = main_us + workers_us / max(1, len(workers))
    return {"sps": steps / wall, "main_cpu_us": main_us, "worker_cpu_us": workers_us,
            "idle_sps": 1e6 / idle_us}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3, help="alternating timed rounds per side")
    p.add_argument("--batches", type=int, default=2, help="batches (PPO updates) per round")
    p.add_argument("--workers", type=int, default=2, help="our worker processes")
    p.add_argument("--num-envs", type=int, default=8)
    p.add_argument("--vec-batch", type=int, default=0,
                   help="our envs per recv() (0: all, synchronous; num_envs/2 overlaps "
                        "stepping with inference)")
    p.add_argument("--inline", action=argparse.BooleanOptionalAction, default=None,
                   help="our trainer's process steps one block of envs itself (vec.inline; "
                        "default: the train command's, on for Python envs)")
    p.add_argument("--precision", choices=("float32", "bfloat16", "auto"), default=None,
                   help="our train.precision (default: the Atari preset's, auto; the plain loop "
                        "stays float32, as CleanRL's)")
    p.add_argument("--horizon", type=int, default=128)
    p.add_argument("--minibatch", type=int, default=256)
    p.add_argument("--update-epochs", type=int, default=4)
    p.add_argument("--threads", type=int, default=0,
                   help="torch threads, both sides (default 0: ours picks its own as the train "
                        "command does, train.torch_threads 0, and the plain loop torch's default "
                        "of one per core)")
    p.add_argument("--plain", choices=("sync", "async"), default="sync",
                   help="Gymnasium vector env of the plain loop")
    p.add_argument("--collect-only", action="store_true",
                   help="time collection only (env steps + inference on every step), no update")
    p.add_argument("--json", action="store_true", help="print JSON")
    args = p.parse_args(argv)

    warnings.filterwarnings("ignore", category=UserWarning)
    config = atari_config(args)
    torch.manual_seed(config.train.seed)
    ours, plain = Ours(config), None
    ours_precision = ours.trainer.precision
    try:
        plain_threads = args.threads or os.cpu_count() or 1
        torch.set_num_threads(plain_threads)  # the Trainer set it for itself; the same here
        plain = PlainLoop(config, args.plain)
        plain_batch = plain.batch

        def plain_round(*a, **k):
            torch.set_num_threads(plain_threads)
            return plain_batch(*a, **k)

        plain.batch = plain_round
        if args.collect_only:
            ours.close()
            ours = OursCollect(config, plain.policy)
            plain.batch = functools.partial(plain.batch, learn=False)
        ours.batch()  # warm-up: workers started, first allocations
        plain.batch()
        rounds = {"ours": [], "plain": []}
        for _ in range(args.rounds):
            rounds["ours"].append(timed_round(ours, args.batches))
            rounds["plain"].append(timed_round(plain, args.batches))
    finally:
        ours.close()
        if plain is not None:
            plain.close()
    runs = {name: [r["sps"] for r in values] for name, values in rounds.items()}
    result = {name: statistics.median(values) for name, values in runs.items()}
    result["ratio"] = result["ours"] / result["plain"]
    cpu = {name: {key: statistics.median(r[key] for r in values)
                  for key in ("main_cpu_us", "worker_cpu_us", "idle_sps")}
           for name, values in rounds.items()}
    result["cpu"] = cpu
    result["idle_ratio"] = cpu["ours"]["idle_sps"] / cpu["plain"]["idle_sps"]
    result["runs"] = runs
    result["load_average"] = os.getloadavg()
    result["settings"] = {k: v for k, v in vars(args).items() if k != "json"}
    if args.json:
        print(json.dumps(result))
    else:
        work = ("collection only" if args.collect_only else
                f"{args.update_epochs} epochs of {args.minibatch}-sample minibatches")
        print(f"{ENV_ID}, CNN, {args.num_envs} envs x {args.horizon} steps per batch, {work}, "
              f"{args.threads} torch thread(s), plain loop: {args.plain} vector env")
        print(f"ours: {args.workers} workers, vec batch {args.vec_batch or args.num_envs}, "
              f"inline {config.vec.inline}, precision {config.train.precision} "
              f"({ours_precision})")
        for name in ("ours", "plain"):
            shown = ", ".join(f"{v:,.0f}" for v in runs[name])
            print(f"  {name:<6} median {result[name]:8,.0f} agent-steps/s  (rounds: {shown})")
        print(f"  ratio  {result['ratio']:.2f}x   (load average {os.getloadavg()[0]:.1f} "
              f"on {os.cpu_count()} cores)")
        print("CPU per agent step (medians) and the idle-core projection:")
        for name in ("ours", "plain"):
            c = cpu[name]
            print(f"  {name:<6} main {c['main_cpu_us']:6.0f} us  workers {c['worker_cpu_us']:6.0f} us"
                  f"  -> {c['idle_sps']:8,.0f} agent-steps/s")
        print(f"  ratio  {result['idle_ratio']:.2f}x")
    return result


if __name__ == "__main__":
    main()
