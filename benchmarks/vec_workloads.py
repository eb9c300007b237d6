"""The workloads of `puffer-tui bench vec`: what is simulated, and how each backend builds it.

Each workload fixes the total number of envs, so every backend is compared on the same
amount of simulation. Gymnasium-based workloads also give a picklable `gym_creator` for
Gymnasium's own vectorizers.

Tested in: tests/benchmarks/test_vec_bench.py
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field

import gymnasium
import numpy as np
from gymnasium import spaces


class DelayEnv(gymnasium.Env):
    """A pure-Python env whose step burns CPU for a random time with a given mean and spread.

    Step times are Gamma-distributed with mean `delay_s` and standard deviation
    `spread * delay_s` (spread 0: constant; spread 1: exponential), the PufferLib 0.5
    experiment. The wait counts this thread's CPU time, not wall time, so every step costs the
    same work however many processes share the cores."""

    observation_space = spaces.Box(-1.0, 1.0, (4,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, delay_s: float = 1e-3, spread: float = 0.0, episode_length: int = 200):
        if delay_s < 0 or spread < 0:
            raise ValueError(f"delay_s and spread must be >= 0, got {delay_s}, {spread}")
        self.delay_s, self.spread, self.episode_length = delay_s, spread, episode_length
        self._rng = np.random.default_rng()
        self._t = 0
        self._obs = np.zeros(4, np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._t = 0
        return self._obs, {}

    def _delay(self) -> float:
        if self.spread == 0:
            return self.delay_s
        shape = 1.0 / self.spread**2
        return float(self._rng.gamma(shape, self.delay_s / shape))

    def step(self, action):
        end = time.thread_time() + self._delay()
        while time.thread_time() < end:
            pass
        self._t += 1
        return self._obs, 1.0, False, self._t >= self.episode_length, {}


def make_cartpole():
    return gymnasium.make("CartPole-v1")


def make_pong():
    """ALE Pong with the standard preprocessing, through Gymnasium's wrappers (one env per
    game): 84x84 grey, frame skip 4 with max-pool, a stack of 4, 30 no-ops, sticky actions
    0.25, a lost life ends the episode, not the game (envs/atari_preprocessing.py)."""
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.envs.atari_preprocessing import atari_env

    return atari_env("ALE/Pong-v5")


def pong_creator():
    """Our creator for gym:ALE/Pong-v5 as `puffer-tui train` builds it: ale-py's C++ vector
    env when it has one (envs/ale_vector.py), else the Gymnasium wrappers."""
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.envs import env_class

    return env_class("gym:ALE/Pong-v5").make_creator({})


# EnvPool's Pong-v5 with the same preprocessing as ours (its defaults differ: no sticky
# actions, whole games)
ENVPOOL_PONG = {"repeat_action_probability": 0.25, "episodic_life": True, "noop_max": 30,
                "stack_num": 4, "img_height": 84, "img_width": 84, "frame_skip": 4,
                "reward_clip": False}


def ale_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("ale_py") is not None


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    num_envs: int
    creator_factory: object  # () -> creator(num_envs=, seed=, buf=) for our backends
    gym_creator: object = None  # () -> gymnasium.Env, for Gymnasium's vectorizers
    envpool_id: str | None = None
    envpool_options: dict = field(default_factory=dict)  # to match our preprocessing

    def creator(self):
        return self.creator_factory()


def _native(name, **settings):
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.envs import creator

    return creator(name, **settings)


def _gym(gym_creator):
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.envs import from_gymnasium

    return from_gymnasium(gym_creator)


def workloads(squared_envs=65536, cartpole_envs=64, delay_envs=2, pong_envs=8):
    """The default sizes: a squared env steps in ~10 ns, so a worker needs tens of thousands
    for its step (~0.3 ms at 32768) to outweigh the round trip and a busy machine's wake-up
    latency (at 16384 envs in all, 2 workers only matched serial on the shared dev box, at
    65536 they beat it by 1.4x); 64 CartPoles give 32 per worker (~0.3 ms a step);
    the delay envs run one per worker, the setting of the PufferLib 0.5 experiment, where
    waiting for the slowest env costs the synchronous mode most; 8 Pongs (atari extra) give
    4 per worker (~1 ms a step)."""
    delay0 = functools.partial(DelayEnv, delay_s=1e-3, spread=0.0)
    delay1 = functools.partial(DelayEnv, delay_s=1e-3, spread=1.0)
    pong = [Workload("ALE/Pong-v5", "Atari Pong, standard preprocessing (ale-py)", pong_envs,
                     pong_creator, make_pong, "Pong-v5", ENVPOOL_PONG)] if ale_available() else []
    return [
        Workload("squared", "native C env, size 11", squared_envs,
                 functools.partial(_native, "squared", size=11)),
        Workload("CartPole-v1", "Gymnasium's pure-Python CartPole", cartpole_envs,
                 functools.partial(_gym, make_cartpole), make_cartpole, "CartPole-v1"),
        Workload("delay 1ms±0%", "Python env, 1 ms of CPU per step", delay_envs,
                 functools.partial(_gym, delay0), delay0),
        Workload("delay 1ms±100%", "Python env, 1 ms mean, exponential step times", delay_envs,
                 functools.partial(_gym, delay1), delay1),
        *pong,
    ]
