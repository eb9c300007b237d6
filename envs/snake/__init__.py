"""snake: many snakes on one grid, each seeing a window around its head (multi-agent)."""

import numpy as np
from gymnasium import spaces

from puffer_tui.engine.native import EnvLayout, NativeEnv, Setting
from puffer_tui.envs.snake import binding

# tile ids (snake.h)
EMPTY, FOOD, CORPSE, WALL, BODY, HEAD = range(6)
# Ring buffers of body cells take num_snakes * max_length ints per env; keep that sane.
MAX_BODY_CELLS = 1 << 24


class Snake(NativeEnv):
    name = "snake"
    order = 7
    description = "many snakes on one grid eat food and corpses; one agent row per snake"
    binding = binding
    palette = {
        EMPTY: ("·", "grey23"),
        FOOD: ("●", "bold red"),
        CORPSE: ("✕", "dark_orange"),
        WALL: ("█", "grey50"),
        BODY: ("■", "green"),
        HEAD: ("@", "bold bright_green"),
    }
    settings_schema = (
        Setting("width", 48, 2, 1024, "columns of the playing field"),
        Setting("height", 48, 2, 1024, "rows of the playing field"),
        Setting("num_snakes", 16, 1, 4096, "snakes (agents) per env"),
        Setting("num_food", 48, 0, 1_000_000, "food kept on the field (eaten food reappears)"),
        Setting("vision", 5, 1, 15, "radius of the square window each snake sees"),
        Setting("max_length", 64, 1, 1 << 20, "longest a snake grows; score = length / this"),
        Setting("max_steps", 1000, 0, 10_000_000, "steps before a snake's episode is truncated (0: never)"),
        Setting("food_reward", 0.1, -10.0, 10.0, "reward for eating food"),
        Setting("corpse_reward", 0.1, -10.0, 10.0, "reward for eating a corpse"),
        Setting("death_reward", -1.0, -10.0, 10.0, "reward for hitting a wall or a snake"),
        Setting("corpse_rate", 0.5, 0.0, 1.0, "chance that each body cell of a dead snake becomes a corpse"),
    )

    @classmethod
    def resolve(cls, settings):
        s = super().resolve(settings)
        cells = s["width"] * s["height"]
        if s["num_snakes"] + s["num_food"] > cells:
            raise ValueError(
                f"snake: num_snakes ({s['num_snakes']}) + num_food ({s['num_food']}) exceed the "
                f"{cells} cells of a {s['width']}x{s['height']} field"
            )
        if s["num_snakes"] * s["max_length"] > MAX_BODY_CELLS:
            raise ValueError(
                f"snake: num_snakes * max_length = {s['num_snakes'] * s['max_length']} exceeds "
                f"{MAX_BODY_CELLS}; lower one of them"
            )
        return s

    @classmethod
    def layout(cls, s):
        window = 2 * s["vision"] + 1
        return EnvLayout(
            observation_space=spaces.Box(0, HEAD, (window * window,), np.uint8),
            action_space=spaces.Discrete(4),
            agents_per_env=s["num_snakes"],
            frame_shape=(s["height"], s["width"]),
        )
