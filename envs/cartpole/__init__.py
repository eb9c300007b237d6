"""cartpole: gymnasium's CartPole-v1 in C (same dynamics, bounds and termination)."""

import math

import numpy as np
from gymnasium import spaces

from puffer_tui.engine.native import EnvLayout, NativeEnv, Setting
from puffer_tui.envs.cartpole import binding

X_THRESHOLD = 2.4
THETA_THRESHOLD = 12 * 2 * math.pi / 360
# Observations come from live states only (same-step autoreset), so x and theta stay within
# the thresholds; gymnasium's bounds are twice that. Velocities cannot leave +-100 before
# the cart or pole crosses a threshold (see the header); 1e4 leaves a wide margin while
# staying finite, so the space is bounded and normalisers that use high - low keep working.
VELOCITY_BOUND = 1e4


class CartPole(NativeEnv):
    name = "cartpole"
    description = "balance a pole on a cart (CartPole-v1 dynamics); +1 per step"
    binding = binding
    palette = {
        0: (" ", "default"),
        1: ("═", "grey50"),
        2: ("█", "bold bright_cyan"),
        3: ("●", "bold yellow"),
        4: ("┃", "red"),
    }
    settings_schema = (
        Setting("max_steps", 500, 1, 1_000_000, "steps before truncation (CartPole-v1: 500)"),
    )

    @classmethod
    def layout(cls, s):
        high = np.array(
            [2 * X_THRESHOLD, VELOCITY_BOUND, 2 * THETA_THRESHOLD, VELOCITY_BOUND], np.float32
        )
        return EnvLayout(
            observation_space=spaces.Box(-high, high, (4,), np.float32),
            action_space=spaces.Discrete(2),
            frame_shape=(9, 40),
        )
