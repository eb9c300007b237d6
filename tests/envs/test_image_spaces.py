"""envs/image_spaces.py: which Boxes hold images (what the family presets and the CNN agree
on): the channel axis read from either end, small grids left to the MLP, and a structured
space holding an image among its leaves."""

import numpy as np
import pytest
from gymnasium import spaces

from puffer_tui.envs.gym_spaces import ObservationLayout
from puffer_tui.envs.image_spaces import MIN_IMAGE_SIDE, has_image, image_layout


@pytest.mark.parametrize("shape, layout", [
    ((4, 84, 84), "chw"),      # a frame stack
    ((210, 160, 3), "hwc"),    # an RGB frame
    ((84, 84), "hw"),          # one grey channel, no channel axis
    ((16, 16, 16), "hwc"),     # a tie reads as HWC, Gymnasium's habit
    ((3, 11, 11), None),       # a grid smaller than an image
    ((11, 11), None),
    ((121,), None),
    ((2, 3, 84, 84), None),
])
def test_the_layout_of_a_shape(shape, layout):
    assert image_layout(shape) == layout


def test_the_smallest_image_side_is_the_limit():
    assert image_layout((MIN_IMAGE_SIDE, MIN_IMAGE_SIDE)) == "hw"
    assert image_layout((MIN_IMAGE_SIDE - 1, 64)) is None


def test_a_structured_space_has_an_image_when_one_of_its_leaves_is():
    with_image = ObservationLayout(spaces.Dict({
        "frame": spaces.Box(0, 255, (3, 32, 32), np.uint8), "speed": spaces.Box(-1, 1, (4,))}))
    without = ObservationLayout(spaces.Dict({
        "grid": spaces.Box(0, 2, (5, 5), np.uint8), "speed": spaces.Box(-1, 1, (4,))}))
    assert has_image(with_image.space) and not has_image(without.space)
    assert has_image(spaces.Box(0, 255, (84, 84, 3), np.uint8))
    assert not has_image(spaces.Box(-1, 1, (8,)))
