"""memory: recite a random binary sequence after a delay; a recurrent policy is needed."""

import numpy as np
from gymnasium import spaces

from puffer_tui.engine.native import EnvLayout, NativeEnv, Setting
from puffer_tui.envs.memory import binding

FRAME_ROWS = 4  # shown bits, recited bits, cursor, last episode's recitation


class Memory(NativeEnv):
    name = "memory"
    order = 4
    description = (
        "see `length` random bits, wait `delay` steps, recite them; +1/length per correct bit"
    )
    binding = binding
    # tile ids as in memory.h: shown bits, right / wrong recitations, cursors, wait marker
    palette = {
        0: ("·", "grey39"),
        1: ("0", "bold bright_white"),
        2: ("1", "bold bright_white"),
        3: ("0", "bold green"),
        4: ("1", "bold green"),
        5: ("0", "bold red"),
        6: ("1", "bold red"),
        7: ("▲", "bold bright_cyan"),
        8: ("?", "bold yellow"),
        9: ("~", "grey50"),
    }
    settings_schema = (
        Setting("length", 1, 1, 64, "bits to remember each episode"),
        Setting("delay", 1, 0, 256, "blank steps between showing the bits and reciting them"),
    )

    @classmethod
    def layout(cls, s):
        return EnvLayout(
            # [bit shown (+1/-1, 0 when none), show, wait, recite]
            observation_space=spaces.Box(-1.0, 1.0, (4,), np.float32),
            action_space=spaces.Discrete(2),
            frame_shape=(FRAME_ROWS, s["length"]),
        )
