"""corridor: an example native env installed as a puffer-tui plugin (see README.md)."""

import numpy as np
from gymnasium import spaces

from puffer_tui.engine.native import EnvLayout, NativeEnv, Setting
from puffer_tui_corridor import binding


class Corridor(NativeEnv):
    name = "corridor"
    description = "walk right to the end of a corridor; +1 at the goal (example plugin)"
    binding = binding
    palette = {0: ("·", "grey39"), 1: ("@", "bold bright_cyan"), 2: ("◆", "bold yellow")}
    settings_schema = (
        Setting("length", 8, 2, 255, "cells in the corridor"),
        Setting("max_ticks", 64, 1, 1_000_000, "steps before truncation"),
    )

    @classmethod
    def layout(cls, s):
        return EnvLayout(
            observation_space=spaces.Box(0, 2, (s["length"],), np.uint8),
            action_space=spaces.Discrete(2),
            frame_shape=(1, s["length"]),
        )
