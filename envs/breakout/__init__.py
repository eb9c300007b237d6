"""breakout: break a wall of bricks with a ball and a paddle."""

import numpy as np
from gymnasium import spaces

from puffer_tui.engine.native import EnvLayout, NativeEnv, Setting
from puffer_tui.envs.breakout import binding

# Rows of empty space above the bricks and below them (breakout.h BO_TOP, BO_GAP).
TOP_ROWS = 3
GAP_ROWS = 14
# observation layout: these floats, then one per brick
STATE_FIELDS = ("paddle_x", "ball_x", "ball_y", "ball_vx", "ball_vy", "lives")
# tile ids: 0 empty, 1..6 bricks by row, then paddle and ball
EMPTY, PADDLE, BALL = 0, 7, 8
LEFT, STAY, RIGHT = range(3)


def arena_shape(settings) -> tuple[int, int]:
    """(rows, columns) of the arena in tiles, which is also the frame's shape."""
    rows = TOP_ROWS + settings["brick_rows"] + GAP_ROWS
    return rows, settings["brick_cols"] * settings["brick_width"]


class Breakout(NativeEnv):
    name = "breakout"
    order = 9
    description = "break bricks with a paddle and a ball; score = fraction broken"
    binding = binding
    palette = {
        EMPTY: (" ", "default"),
        1: ("▆", "red"),
        2: ("▆", "dark_orange"),
        3: ("▆", "yellow"),
        4: ("▆", "green"),
        5: ("▆", "blue"),
        6: ("▆", "magenta"),
        PADDLE: ("▀", "bold white"),
        BALL: ("●", "bold bright_white"),
    }
    settings_schema = (
        Setting("brick_rows", 6, 1, 32, "rows of bricks"),
        Setting("brick_cols", 12, 1, 64, "bricks per row"),
        Setting("brick_width", 3, 1, 8, "width of a brick in tiles"),
        Setting("paddle_width", 5, 1, 64, "width of the paddle in tiles"),
        Setting("lives", 3, 1, 100, "balls per episode"),
        Setting("max_ticks", 10_000, 1, 10_000_000, "steps before the episode is truncated"),
        Setting("ball_speed", 0.6, 0.05, 4.0, "tiles the ball moves per step"),
        Setting("paddle_speed", 1.0, 0.1, 8.0, "tiles the paddle moves per step"),
        Setting("life_reward", -1.0, -10.0, 10.0, "reward when a ball is lost (bricks pay +1)"),
    )

    @classmethod
    def resolve(cls, settings):
        s = super().resolve(settings)
        _, width = arena_shape(s)
        if s["paddle_width"] > width:
            raise ValueError(
                f"breakout: paddle_width = {s['paddle_width']} is wider than the arena "
                f"({s['brick_cols']} bricks x {s['brick_width']} = {width} tiles)"
            )
        return s

    @classmethod
    def layout(cls, s):
        size = len(STATE_FIELDS) + s["brick_rows"] * s["brick_cols"]
        return EnvLayout(
            observation_space=spaces.Box(-1.0, 1.0, (size,), np.float32),
            action_space=spaces.Discrete(3),
            frame_shape=arena_shape(s),
        )
