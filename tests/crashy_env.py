"""A pure-Python PufferEnv for the vectorizer tests: predictable rows, and crashes on command.

Observation row of env i: [seed + i, steps since reset, last action]. Actions 0..10 are
ordinary; the commands 11..15, which make the env fail in the worker that owns it.
Masks: row i is masked out when (step + i) % mask_every == 0 (mask_every=0: never).
Infos: every `info_every` steps, one dict {"env": seed, "steps": steps} per call.
"""

from __future__ import annotations

import ctypes
import os
import signal
import time

import numpy as np
from gymnasium import spaces

from puffer_tui.engine.native import PufferEnv

NORMAL = 0  # actions 0..10 are ordinary (the reward is the action)
RAISE, SIGKILL, SEGFAULT, HANG, EXIT = range(11, 16)
NUM_ACTIONS = 16


class CrashyError(RuntimeError):
    pass


def explode_on_purpose(env_index: int):
    """Raise from a named function so tests can find it in the traceback."""
    raise CrashyError(f"env {env_index} exploded on purpose")


class CrashyEnv(PufferEnv):
    name = "crashy"

    def __init__(self, num_envs=1, seed=0, buf=None, mask_every=0, info_every=0,
                 fail_on_init=False, step_sleep=0.0, sleep_seed=None):
        if fail_on_init:
            raise CrashyError("cannot build this env on purpose")
        super().__init__(
            spaces.Box(-1e9, 1e9, (3,), np.float32), spaces.Discrete(NUM_ACTIONS), num_envs,
            buf=buf,
        )
        self.seed = seed
        self.mask_every = mask_every
        self.info_every = info_every
        # sleep `step_sleep` per step; only the copy seeded `sleep_seed` when that is given
        self.step_sleep = step_sleep
        self.sleep_seed = sleep_seed
        self.steps = 0

    def reset(self, seed=None):
        if seed is not None:
            self.seed = seed
        self.steps = 0
        self.observations[:, 0] = self.seed + np.arange(self.num_envs)
        self.observations[:, 1] = 0
        self.observations[:, 2] = -1
        self.masks[:] = True
        return self.observations, []

    def step(self, actions):
        self.write_actions(actions)
        for i, action in enumerate(self.actions):
            self._obey(int(action), i)
        if self.step_sleep and self.sleep_seed in (None, self.seed):
            time.sleep(self.step_sleep)
        self.steps += 1
        self.observations[:, 1] = self.steps
        self.observations[:, 2] = self.actions
        self.rewards[:] = self.actions
        self.terminals[:] = False
        self.truncations[:] = False
        if self.mask_every:
            self.masks[:] = (self.steps + np.arange(self.num_envs)) % self.mask_every != 0
        infos = []
        if self.info_every and self.steps % self.info_every == 0:
            infos.append({"env": self.seed, "steps": self.steps})
        return self.observations, self.rewards, self.terminals, self.truncations, infos

    def _obey(self, action: int, i: int) -> None:
        if action == RAISE:
            explode_on_purpose(self.seed + i)
        elif action == SIGKILL:
            os.kill(os.getpid(), signal.SIGKILL)
        elif action == SEGFAULT:
            ctypes.string_at(0)  # a real invalid read, not a signal we send ourselves
        elif action == HANG:
            while True:
                time.sleep(0.05)
        elif action == EXIT:
            os._exit(3)

    def frame(self, env_index=0):
        return np.full((2, 3), self.seed + env_index, dtype=np.uint8)
