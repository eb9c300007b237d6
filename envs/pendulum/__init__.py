"""pendulum: Gymnasium's Pendulum-v1 in C (the same dynamics, bounds and reward).

gym:Pendulum-v1 steps through this port unless told `--env.native false` (envs/classic_ports.py);
it takes the same preset, envs/gym_presets/Pendulum-v1.toml.
"""

import numpy as np
from gymnasium import spaces

from puffer_tui.engine.native import EnvLayout, NativeEnv, Setting
from puffer_tui.envs.gym_presets.family import PRESETS, read_preset_file
from puffer_tui.envs.pendulum import binding

MAX_SPEED = 8.0
MAX_TORQUE = 2.0


class Pendulum(NativeEnv):
    name = "pendulum"
    order = 11
    description = "Pendulum-v1 in C"
    binding = binding
    palette = {
        0: (" ", "default"),
        1: ("●", "bold white"),
        2: ("█", "bold bright_cyan"),
        3: ("●", "bold red"),
    }
    settings_schema = (
        Setting("max_steps", 200, 1, 1_000_000, "steps before truncation (Pendulum-v1: 200)"),
        Setting("g", 10.0, 0.0, 1_000.0, "gravity (Pendulum-v1: 10.0)"),
    )

    @classmethod
    def layout(cls, s):
        high = np.array([1.0, 1.0, MAX_SPEED], np.float32)
        return EnvLayout(
            observation_space=spaces.Box(-high, high, (3,), np.float32),
            action_space=spaces.Box(-MAX_TORQUE, MAX_TORQUE, (1,), np.float32),
            frame_shape=(9, 19),
        )

    @classmethod
    def preset_path(cls, settings=None):
        return PRESETS / "Pendulum-v1.toml"

    @classmethod
    def preset(cls, settings=None):
        return read_preset_file(cls.preset_path())
