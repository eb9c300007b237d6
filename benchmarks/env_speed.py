"""`puffer-tui bench envs`: single-process, single-core agent-steps/second of each env.

Actions come from a pre-generated random array (so the RNG is not measured) and are copied
into the env's action buffer each step, as a vectorizer would.
"""

from __future__ import annotations

import time

import numpy as np

from puffer_tui.benchmarks.output import print_result

ACTION_BLOCK = 1024  # rows of pre-generated actions, cycled


def add_arguments(p):
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--seconds", type=float, default=2.0, help="time per env (default 2)")
    p.add_argument("--num-envs", type=int, default=4096, help="envs per process (default 4096)")
    p.add_argument("--env", action="append", help="only these envs (repeatable)")


def random_actions(env, steps: int, seed: int = 0) -> np.ndarray:
    space = env.action_space
    space.seed(seed)
    return np.stack([space.sample() for _ in range(steps)]).astype(env.actions.dtype)


def measure(name: str, num_envs: int, seconds: float) -> dict:
    # lazy: pulls gymnasium, which this module does not load
    from puffer_tui.envs import make

    env = make(name, num_envs=num_envs, seed=0)
    env.reset()
    actions = random_actions(env, ACTION_BLOCK)
    for i in range(min(50, ACTION_BLOCK)):  # warm caches and branch predictors
        env.step(actions[i])
    steps = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for i in range(64):
            env.step(actions[(steps + i) % ACTION_BLOCK])
        steps += 64
        now = time.perf_counter()
        if now >= deadline:
            break
    elapsed = now - start
    env.close()
    return {
        "sps": steps * env.num_agents / elapsed,
        "env_sps": steps * env.num_envs / elapsed,
        "num_envs": env.num_envs,
        "num_agents": env.num_agents,
        "steps": steps,
        "seconds": elapsed,
    }


def run(args) -> int:
    # lazy: pulls gymnasium, which this module does not load
    from puffer_tui.envs import ENV_NAMES

    names = args.env or list(ENV_NAMES)
    unknown = sorted(set(names) - set(ENV_NAMES))
    if unknown:
        raise SystemExit(f"unknown env(s): {', '.join(unknown)}; available: {', '.join(ENV_NAMES)}")
    if args.num_envs < 1 or args.seconds <= 0:
        raise SystemExit("--num-envs must be >= 1 and --seconds > 0")
    results = {}
    for name in names:
        results[name] = measure(name, args.num_envs, args.seconds)
    rows = [(name, f"{r['sps'] / 1e6:,.1f} M", str(r["num_agents"]), f"{r['steps']:,}",
             f"{r['seconds']:.2f}") for name, r in results.items()]
    return print_result("envs", results, args.json,
                        f"env steps/second, one core, {args.num_envs} envs per process",
                        ("env", "agent-steps/s", "agents", "calls", "seconds"), rows)
