"""bandit: a multi-armed bandit whose arm probabilities are fixed by `arm_seed`."""

import numpy as np
from gymnasium import spaces

from puffer_tui.engine.native import EnvLayout, NativeEnv, Setting
from puffer_tui.envs.bandit import binding

MAX_ARMS = 64  # BANDIT_MAX_ARMS in bandit.h


class Bandit(NativeEnv):
    name = "bandit"
    order = 3
    description = "pull one of N arms; one pays 1 with p=0.9, the rest with p in [0.1, 0.6)"
    binding = binding
    palette = {
        0: ("▯", "grey62"),          # an arm
        1: ("▯", "yellow"),          # the best arm
        2: ("█", "bold green"),      # last pulled, paid
        3: ("█", "bold red"),        # last pulled, did not pay
    }
    settings_schema = (
        Setting("num_arms", 4, 2, MAX_ARMS, "number of arms"),
        Setting("arm_seed", 42, 0, 2**63 - 1, "seed of the arm probabilities (same in every env)"),
    )

    @classmethod
    def layout(cls, s):
        return EnvLayout(
            observation_space=spaces.Box(0.0, 1.0, (1,), np.float32),
            action_space=spaces.Discrete(s["num_arms"]),
            frame_shape=(1, s["num_arms"]),
        )
