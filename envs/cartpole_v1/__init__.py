"""cartpole_v1: Gymnasium's CartPole-v1 in C (the same float64 dynamics, bounds, reward and
termination; the built-in `cartpole` is a float32 variant scored by the balanced fraction).

gym:CartPole-v1 steps through this port unless told `--env.native false`
(envs/classic_ports.py); it takes the same preset, envs/gym_presets/CartPole-v1.toml.
"""

import math

import numpy as np
from gymnasium import spaces

from puffer_tui.engine.native import EnvLayout, NativeEnv, Setting
from puffer_tui.envs.cartpole import CartPole
from puffer_tui.envs.cartpole_v1 import binding
from puffer_tui.envs.gym_presets.family import PRESETS, read_preset_file

X_THRESHOLD = 2.4
THETA_THRESHOLD = 12 * 2 * math.pi / 360


class CartPoleV1(NativeEnv):
    name = "cartpole_v1"
    order = 10
    description = "CartPole-v1 in C"
    binding = binding
    palette = CartPole.palette  # its frames are the built-in cartpole's (cartpole_frame.h)
    settings_schema = (
        Setting("max_steps", 500, 1, 1_000_000, "steps before truncation (CartPole-v1: 500)"),
    )

    @classmethod
    def layout(cls, s):
        # Gymnasium's space, unbounded velocities included
        high = np.array([X_THRESHOLD * 2, np.inf, THETA_THRESHOLD * 2, np.inf], np.float32)
        return EnvLayout(
            observation_space=spaces.Box(-high, high, dtype=np.float32),
            action_space=spaces.Discrete(2),
            frame_shape=(9, 40),
        )

    @classmethod
    def preset_path(cls, settings=None):
        return PRESETS / "CartPole-v1.toml"

    @classmethod
    def preset(cls, settings=None):
        return read_preset_file(cls.preset_path())
