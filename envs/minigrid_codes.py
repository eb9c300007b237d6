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
declared bounds narrow.

Only where that is sure: the env's wrappers are all ones that keep the codes (CODE_WRAPPERS,
or Gymnasium's own wrappers that leave observations alone), and the image is smaller than
the CNN's least side (envs/image_spaces.py MIN_IMAGE_SIDE): a full view of a grid of 16 or
more cells goes to the CNN, whose input scale the bounds set, so it keeps the declared ones
(a checkpoint of such a run would otherwise see 25x larger inputs). Pixel views
(RGBImgObsWrapper, RGBImgPartialObsWrapper, at any tile size) and unknown wrappers keep the
declared bounds too.
"""

from __future__ import annotations

import numpy as np
from gymnasium import ObservationWrapper, spaces

from puffer_tui.envs.image_spaces import MIN_IMAGE_SIDE

IMAGE_KEY = "image"
DIRECTIONS = 4  # MiniGridEnv.agent_dir: 0 to 3, FullyObsWrapper's state code of the agent's cell
# minigrid.wrappers whose image is still the grid's codes (the partial view, the full grid,
# or the partial view at another size)
CODE_WRAPPERS = ("FullyObsWrapper", "ImgObsWrapper", "DirectionObsWrapper", "ViewSizeWrapper")


def observation_space_of(env) -> spaces.Space:
    """`env.observation_space`, with a MiniGrid code image's bounds narrowed to its codes."""
    space = env.observation_space
    shapes = _code_image_shapes(env)
    if not shapes:
        return space
    if isinstance(space, spaces.Dict) and IMAGE_KEY in space.spaces:
        image = _narrowed(space.spaces[IMAGE_KEY], shapes)
        if image is None:
            return space
        return spaces.Dict({**space.spaces, IMAGE_KEY: image})
    narrowed = _narrowed(space, shapes)
    return space if narrowed is None else narrowed


def _code_image_shapes(env) -> set[tuple[int, int, int]]:
    """The shapes a code image of this env can have (the partial view at each view size its
    wrappers set, the full grid); empty when it is no MiniGrid env, minigrid is missing, or a
    wrapper may have changed what the image holds."""
    try:
        from minigrid.minigrid_env import MiniGridEnv
    except ImportError:
        return set()
    base = getattr(env, "unwrapped", None)
    if not isinstance(base, MiniGridEnv):
        return set()
    sides = {base.agent_view_size}
    layer = env
    while layer is not base:
        name = type(layer).__name__
        if type(layer).__module__.startswith("minigrid.") and name in CODE_WRAPPERS:
            if name == "ViewSizeWrapper":
                sides.add(int(layer.agent_view_size))
        elif isinstance(layer, ObservationWrapper) or \
                not type(layer).__module__.startswith("gymnasium."):
            return set()  # pixels, symbols, one-hots, or a wrapper we do not know
        layer = getattr(layer, "env", base)
    return {(side, side, 3) for side in sides} | {(base.width, base.height, 3)}


def _code_bounds() -> np.ndarray:
    """[3] the top value of each channel of a code image."""
    from minigrid.core.constants import COLOR_TO_IDX, OBJECT_TO_IDX, STATE_TO_IDX

    return np.array([max(OBJECT_TO_IDX.values()), max(COLOR_TO_IDX.values()),
                     max(max(STATE_TO_IDX.values()), DIRECTIONS - 1)], dtype=np.uint8)


def _narrowed(image, shapes: set) -> spaces.Box | None:
    """The code image's Box with its true bounds, or None when `image` is not one (3 channels,
    uint8, 0..255, a code image's shape) or is big enough for the CNN."""
    if not isinstance(image, spaces.Box) or image.dtype != np.uint8:
        return None
    if tuple(image.shape) not in shapes or min(image.shape[:2]) >= MIN_IMAGE_SIDE:
        return None
    if np.any(image.low != 0) or np.any(image.high != 255):
        return None
    high = np.broadcast_to(_code_bounds(), image.shape).copy()
    return spaces.Box(np.zeros(image.shape, np.uint8), high, image.shape, np.uint8)
