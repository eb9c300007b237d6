"""Drive every built-in C env hard, for the sanitizer build (tests/sanitize/run.sh).

Under AddressSanitizer and UndefinedBehaviorSanitizer any out-of-bounds access, use after
free, signed overflow or misaligned load in a C env aborts this process with a report. Each
env gets: several sizes (1, 3 and 17 envs, odd on purpose) and seeds; random actions; the
extreme valid actions (every component at its lowest, then its highest) for a long stretch;
out-of-range actions and a wrong dtype, which must be refused with a Python error, never reach
C; resets in mid-episode; frames; and the env-state save/restore of exact resume (a restored
copy must then step identically). Its closing line is "N passed, N failed".
"""

from __future__ import annotations

import sys
import traceback

import numpy as np
from gymnasium import spaces

import puffer_tui.envs as envs

SIZES = (1, 3, 17)
SEEDS = (0, 1, 12345)
STEPS = 600


def action_bounds(space):
    """(lowest, highest) valid action arrays for one agent."""
    if isinstance(space, spaces.Discrete):
        return np.array(space.start), np.array(space.start + space.n - 1)
    if isinstance(space, spaces.MultiDiscrete):
        return np.zeros_like(space.nvec), space.nvec - 1
    return space.low, space.high


def actions_like(env, rng, kind: str):
    single = env.single_action_space
    shape = env.actions.shape
    if kind == "random":
        if isinstance(single, spaces.Box):
            return rng.uniform(single.low, single.high, size=shape).astype(env.actions.dtype)
        low, high = action_bounds(single)
        return rng.integers(low, high + 1, size=shape).astype(env.actions.dtype)
    low, high = action_bounds(single)
    return np.broadcast_to(low if kind == "low" else high, shape).astype(env.actions.dtype)


def out_of_range(env):
    """Actions past the space (integer spaces) that the env must refuse in Python."""
    single = env.single_action_space
    if isinstance(single, spaces.Box):
        return None
    _, high = action_bounds(single)
    bad = np.broadcast_to(high, env.actions.shape).astype(env.actions.dtype).copy()
    bad.flat[0] = bad.flat[0] + 1000
    return bad


def drive(name: str, num_envs: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    env = envs.make(name, num_envs=num_envs, seed=seed)
    try:
        env.reset(seed=seed)
        for step in range(STEPS):
            kind = ("random", "low", "high")[(step // 100) % 3]
            env.step(actions_like(env, rng, kind))
            if step % 97 == 0:
                env.frame(int(rng.integers(num_envs)))
            if step % 211 == 0:
                env.reset(seed=seed + step)  # in mid-episode
        bad = out_of_range(env)
        if bad is not None:
            try:
                env.step(bad)
            except (ValueError, IndexError, TypeError):
                pass
            else:
                raise AssertionError(f"{name}: an out-of-range action was accepted")
        try:
            env.step(np.zeros((num_envs + 1, 7), np.complex64))
        except (ValueError, TypeError):
            pass
        else:
            raise AssertionError(f"{name}: a wrong-dtype, wrong-shape action was accepted")
        check_state_round_trip(name, env, num_envs, seed, rng)
    finally:
        env.close()


def check_state_round_trip(name, env, num_envs, seed, rng) -> None:
    """Exact resume: a second env given the first's state steps identically."""
    state = env.get_state()
    if state is None:
        return
    copy = envs.make(name, num_envs=num_envs, seed=seed + 99)
    try:
        copy.reset(seed=seed + 99)
        copy.set_state(state)
        # as exact resume does (engine/vec/saved_state.py): envs that update their observation
        # in place rely on the buffer's previous contents, which the checkpoint holds too
        for key in ("observations", "rewards", "terminals", "truncations", "masks"):
            getattr(copy, key)[...] = getattr(env, key)
        for _ in range(50):
            actions = actions_like(env, rng, "random")
            env.step(actions)
            copy.step(actions)
            if not (np.array_equal(env.observations, copy.observations)
                    and np.array_equal(env.rewards, copy.rewards)):
                raise AssertionError(f"{name}: a restored env state stepped differently")
    finally:
        copy.close()


def main() -> int:
    names = [n for n in envs.ENV_NAMES if not envs.is_python_env(n)]  # built-in C envs
    if len(sys.argv) > 1:  # e.g. `drive_envs.py squared`: those only
        names = [n for n in names if n in sys.argv[1:]]
    where = envs.env_class(names[0]).__module__
    print(f"driving {', '.join(names)} ({where} from {sys.modules[where].__file__})", flush=True)
    passed = failed = 0
    for name in names:
        for num_envs in SIZES:
            for seed in SEEDS:
                try:
                    drive(name, num_envs, seed)
                    passed += 1
                except Exception:
                    failed += 1
                    print(f"FAILED {name} num_envs={num_envs} seed={seed}", file=sys.stderr)
                    traceback.print_exc()
        print(f"{name}: driven", flush=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
