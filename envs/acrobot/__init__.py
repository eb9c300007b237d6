"""acrobot: Gymnasium's Acrobot-v1 in C (the same dynamics, bounds, reward and termination).

gym:Acrobot-v1 steps through this port unless told `--env.native false` (envs/classic_ports.py);
it takes the same preset, envs/gym_presets/Acrobot-v1.toml (the classic-control family's,
laid out for a C env).
"""

import math

import numpy as np
from gymnasium import spaces

from puffer_tui.engine.native import EnvLayout, NativeEnv, Setting
from puffer_tui.envs.acrobot import binding
from puffer_tui.envs.gym_presets.family import PRESETS, read_preset_file

# Acrobot-v1's bounds on the joint velocities (MAX_VEL_1, MAX_VEL_2 in acrobot.h)
MAX_VELOCITY_1 = 4 * math.pi
MAX_VELOCITY_2 = 9 * math.pi


class Acrobot(NativeEnv):
    name = "acrobot"
    order = 10
    description = "Acrobot-v1 in C"
    binding = binding
    palette = {
        0: (" ", "default"),
        1: ("●", "bold white"),
        2: ("█", "bold bright_cyan"),
        3: ("█", "bold yellow"),
        4: ("·", "green"),
    }
    settings_schema = (
        Setting("max_steps", 500, 1, 1_000_000, "steps before truncation (Acrobot-v1: 500)"),
    )

    @classmethod
    def layout(cls, s):
        high = np.array([1.0, 1.0, 1.0, 1.0, MAX_VELOCITY_1, MAX_VELOCITY_2], np.float32)
        return EnvLayout(
            observation_space=spaces.Box(-high, high, (6,), np.float32),
            action_space=spaces.Discrete(3),
            frame_shape=(13, 27),
        )

    @classmethod
    def preset_path(cls, settings=None):
        return PRESETS / "Acrobot-v1.toml"

    @classmethod
    def preset(cls, settings=None):
        return read_preset_file(cls.preset_path())
