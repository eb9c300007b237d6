"""MiniGrid's `image` observation holds codes, not pixels: the bounds that say so.

    space = observation_space_of(env)   # env.observation_space, narrowed where it is MiniGrid's

A MiniGrid env (minigrid.minigrid_env.MiniGridEnv, and its FullyObsWrapper / ImgObsWrapper
views) declares its `image` as Box(0, 255, (H, W, 3), uint8), but each cell is three small
codes: an object id (minigrid.core.constants.OBJECT_TO_IDX: 0 to 10), a colour (COLOR_TO_IDX:
0 to 5) and a state (STATE_TO_IDX, or the agent's direction under FullyObsWrapper: 0 to 3).
Declared as 0..255, the policy read each code as one number, so "key" (5) sat between "door" (4)
and "ball" (6) on one input. With the true bounds the policy's encoder one-hots each cell
(engine/algo/encoders.py: ObservationEncoder takes integer cells of at most 16 values as
one-hots), the encoding MiniGrid's codes are meant for. The values are unchanged; only the
declared bounds narrow. Pixel views (RGBImgObsWrapper, RGBImgPartialObsWrapper) keep theirs.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

IMAGE_KEY = "image"
DIRECTIONS = 4  # MiniGridEnv.agent_dir: 0 to 3, FullyObsWrapper's state code of the agent's cell


def observation_space_of(env) -> spaces.Space:
    """`env.observation_space`, with a MiniGrid code image's bounds narrowed to its codes."""
    space = env.observation_space
    codes_high = _code_bounds(env)
    if codes_high is None:
        return space
    if isinstance(space, spaces.Dict) and IMAGE_KEY in space.spaces:
        image = _narrowed(space.spaces[IMAGE_KEY], env, codes_high)
        if image is None:
            return space
        return spaces.Dict({**space.spaces, IMAGE_KEY: image})
    narrowed = _narrowed(space, env, codes_high)
    return space if narrowed is None else narrowed


def _code_bounds(env) -> np.ndarray | None:
    """[3] the top value of each channel of a MiniGrid env's code image; None for other envs
    (or without minigrid installed)."""
    try:
        from minigrid.core.constants import COLOR_TO_IDX, OBJECT_TO_IDX, STATE_TO_IDX
        from minigrid.minigrid_env import MiniGridEnv
    except ImportError:
        return None
    if not isinstance(getattr(env, "unwrapped", None), MiniGridEnv):
        return None
    return np.array([max(OBJECT_TO_IDX.values()), max(COLOR_TO_IDX.values()),
                     max(max(STATE_TO_IDX.values()), DIRECTIONS - 1)], dtype=np.uint8)


def _narrowed(image, env, codes_high: np.ndarray) -> spaces.Box | None:
    """The code image's Box with its true bounds, or None when `image` is not one: the partial
    view (agent_view_size square) or the full grid (width x height), 3 channels, uint8, 0..255."""
    if not isinstance(image, spaces.Box) or image.dtype != np.uint8:
        return None
    base = env.unwrapped
    shapes = {(base.agent_view_size, base.agent_view_size, 3), (base.width, base.height, 3)}
    if tuple(image.shape) not in shapes or np.any(image.low != 0) or np.any(image.high != 255):
        return None
    high = np.broadcast_to(codes_high, image.shape).copy()
    return spaces.Box(np.zeros(image.shape, np.uint8), high, image.shape, np.uint8)
