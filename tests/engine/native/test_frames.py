"""The frame kinds and bounds (engine/native/frames.py): what an env's frame() may return,
cut to the bounds before it travels, and through the wire and back unchanged in meaning;
images of observations; palette colours."""

import numpy as np
import pytest

from puffer_tui.engine.native import frames
from puffer_tui.engine.shared.protocol import FrameKind, decode_frame, frame_message
from puffer_tui.envs.squared import Squared


def test_each_kind_of_frame_is_told_apart_and_anything_else_is_none():
    assert frames.frame_kind(np.zeros((4, 5), np.uint8)) == frames.TILES
    assert frames.frame_kind(np.zeros((4, 5, 3), np.uint8)) == frames.RGB
    assert frames.frame_kind(np.zeros((4, 5, 4), np.float32)) == frames.RGB
    assert frames.frame_kind("ascii art") == frames.TEXT
    assert frames.frame_kind(np.zeros((4, 5, 2))) is None
    assert frames.frame_kind(3) is None
    assert frames.bound_frame(None) is None


def test_a_tile_grid_is_copied_whole_so_the_env_may_overwrite_its_own():
    grid = np.arange(12, dtype=np.uint8).reshape(3, 4)
    bounded = frames.bound_frame(grid)
    grid[:] = 0
    assert np.array_equal(bounded, np.arange(12).reshape(3, 4))


def test_a_big_image_is_averaged_into_the_bounds_and_a_thin_line_stays_visible():
    image = np.zeros((400, 600, 3), np.uint8)
    image[:, 301] = 255  # a one-pixel pole, as CartPole draws it
    small = frames.bound_frame(image)
    assert small.shape == (100, 150, 3) and small.dtype == np.uint8
    assert small.shape[0] <= frames.MAX_RGB_HEIGHT and small.shape[1] <= frames.MAX_RGB_WIDTH
    column = small[:, 301 // 4]
    assert (column > 0).all() and (small[:, :70] == 0).all()


def test_images_of_other_dtypes_become_uint8_rgb():
    floats = np.full((2, 2, 4), 0.5, np.float32)  # RGBA in [0, 1]
    assert np.array_equal(frames.to_rgb8(floats), np.full((2, 2, 3), 127, np.uint8))
    bools = np.ones((2, 2, 3), bool)
    assert (frames.to_rgb8(bools) == 255).all()


def test_text_keeps_its_colours_and_loses_every_other_escape_and_control():
    text = "\x1b[31mred\x1b[0m\x1b]0;title\x07 \x1b[2Jplain\tend\x00"
    clean = frames.clean_text(text)
    assert clean == "\x1b[31mred\x1b[0m plain    end"
    assert frames.strip_colour(clean) == "red plain    end"
    long = "\n".join("x" * 500 for _ in range(300))
    lines = frames.clean_text(long).split("\n")
    assert len(lines) == frames.MAX_TEXT_ROWS and {len(x) for x in lines} == {frames.MAX_TEXT_COLS}


@pytest.mark.parametrize("frame", [
    np.arange(20, dtype=np.uint8).reshape(4, 5),
    np.random.default_rng(0).integers(0, 256, (6, 7, 3), dtype=np.uint8),
    "\x1b[32mok\x1b[0m\nsecond line",
], ids=["tiles", "rgb", "text"])
def test_a_bounded_frame_goes_over_the_wire_and_comes_back_the_same(frame):
    bounded = frames.bound_frame(frame)
    decoded = decode_frame(frame_message(2, bounded))
    assert decoded.env == 2
    if isinstance(bounded, str):
        assert decoded.kind == FrameKind.TEXT and decoded.data == bounded
    else:
        assert decoded.kind == (FrameKind.RGB if bounded.ndim == 3 else FrameKind.TILES)
        assert (decoded.height, decoded.width) == bounded.shape[:2]
        assert decoded.data == bounded.tobytes()


def test_observation_images_by_layout_and_a_flat_observation_says_why_it_has_none():
    stack = np.zeros((4, 8, 8), np.uint8)  # four stacked grey frames, channels first
    tiled = frames.observation_image(stack)
    assert tiled.shape == (17, 17, 3)  # a 2 x 2 grid with a one-pixel gap
    assert tuple(tiled[8, 0]) == frames.GAP_COLOUR
    codes = np.arange(16, dtype=np.uint8).reshape(4, 4) % 4  # object ids, as MiniGrid sends
    assert frames.observation_image(codes).max() == 255  # small ids stretched to be seen
    assert frames.observation_image(np.zeros((2, 8))) is None  # too thin to be an image

    env = Squared(num_envs=1, size=5)  # observations are a flat row of 25 cells
    env.reset(seed=0)
    assert "no image" in frames.observation_frame(env, 0)


def test_palette_entries_become_the_colours_the_terminal_draws():
    table = frames.colour_table({0: (" ", "red"), 1: ("@", "bold blue"), 2: ("x", "#102030")})
    assert tuple(table[0]) == frames.BACKGROUND
    assert tuple(table[2]) == (16, 32, 48)
    assert tuple(table[1]) != tuple(frames.colour_table({1: ("@", "blue")})[1])  # bold brightens
    assert tuple(table[200]) == frames.UNKNOWN_TILE
    with pytest.raises(ValueError, match="not a rich colour"):
        frames.tile_rgb("@", "no-such-colour")
