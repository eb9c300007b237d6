"""squared: walk from the centre of a grid to the targets on its edges."""

import numpy as np
from gymnasium import spaces

from puffer_tui.engine.native import EnvLayout, NativeEnv, Setting
from puffer_tui.envs.squared import binding


class Squared(NativeEnv):
    name = "squared"
    order = 1
    description = "reach targets on the edges of a grid from its centre; +1 per target"
    binding = binding
    palette = {0: ("·", "grey39"), 1: ("@", "bold bright_cyan"), 2: ("◆", "bold yellow")}
    settings_schema = (
        Setting("size", 11, 3, 255, "side length of the square grid"),
        Setting("num_targets", 4, 1, 1016, "targets placed on distinct edge cells"),
        Setting("max_ticks", 0, 0, 1_000_000, "steps before truncation (0: 2 * size * num_targets)"),
    )

    @classmethod
    def resolve(cls, settings):
        s = super().resolve(settings)
        edges = 4 * (s["size"] - 1)
        if s["num_targets"] > edges:
            raise ValueError(
                f"squared.num_targets = {s['num_targets']} exceeds the {edges} edge cells "
                f"of a {s['size']}x{s['size']} grid"
            )
        if s["max_ticks"] == 0:
            s["max_ticks"] = 2 * s["size"] * s["num_targets"]
        return s

    @classmethod
    def layout(cls, s):
        n = s["size"]
        return EnvLayout(
            observation_space=spaces.Box(0, 2, (n * n,), np.uint8),
            action_space=spaces.Discrete(5),
            frame_shape=(n, n),
        )
