"""cartpole: gymnasium's CartPole-v1 in C (same dynamics, bounds and termination)."""

import math

import numpy as np
from gymnasium import spaces

from puffer_tui.engine.native import EnvLayout, NativeEnv, Setting
from puffer_tui.envs.cartpole import binding

X_THRESHOLD = 2.4
THETA_THRESHOLD = 12 * 2 * math.pi / 360
# Observations come from live states only (same-step autoreset), so x and theta stay within
# the thresholds; gymnasium's bounds are twice that. gymnasium leaves the velocities unbounded;
# here they get a finite bound so that the space is bounded and normalisers using high - low
# keep working. Live states cannot get near it: the accelerations are below ~30 units/s^2
# while |theta| <= 12 degrees, and theta_dot beyond ~21 rad/s would cross the 0.42 rad band
# in one step (random and balancing policies reach about 4).
VELOCITY_BOUND = 1e4


class CartPole(NativeEnv):
    name = "cartpole"
    order = 2
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
