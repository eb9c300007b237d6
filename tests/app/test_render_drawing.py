"""Frames of any env, app side: RGB images in half blocks (exact characters and colours), text
frames, the env panel drawing all three kinds, and `eval --render ascii` playing a Gymnasium
env's frames in a terminal and into a pipe."""

import io
import json

import numpy as np
from rich.color import Color
from rich.console import Console
from rich.style import Style
from textual.app import App

from puffer_tui.app.commands.eval import play
from puffer_tui.app.widgets.env_render import EnvRender, frame_from_message
from puffer_tui.app.widgets.frame_drawing import (
    UPPER_HALF,
    FrameImage,
    fit_image,
    halfblock_lines,
    ramp_text,
    text_lines,
)
from puffer_tui.engine.shared.protocol import Frame, FrameKind, encode, frame_message
from puffer_tui.envs import from_gymnasium

RED, GREEN, BLUE, WHITE = (255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255)


def rgb_frame(pixels) -> Frame:
    pixels = np.asarray(pixels, np.uint8)
    return frame_from_message(json.loads(encode(frame_message(0, pixels))))


def cells(segments):
    """(character, fg, bg) per cell of one line of segments."""
    out = []
    for segment in segments:
        style = segment.style
        fg = style.color.get_truecolor() if style.color else None
        bg = style.bgcolor.get_truecolor() if style.bgcolor else None
        out += [(char, tuple(fg) if fg else None, tuple(bg) if bg else None)
                for char in segment.text]
    return out


# ---- half blocks --------------------------------------------------------------------------

def test_half_blocks_put_the_top_pixel_in_front_and_the_bottom_one_behind():
    image = np.array([[RED, GREEN],
                      [BLUE, WHITE],
                      [GREEN, GREEN]], np.uint8)
    base = Style(bgcolor=Color.from_rgb(1, 2, 3))
    lines = halfblock_lines(image, base)
    assert len(lines) == 2, "three pixel rows need two cell rows"
    assert cells(lines[0]) == [(UPPER_HALF, RED, BLUE), (UPPER_HALF, GREEN, WHITE)]
    # the odd last row: nothing below it, the panel's background shows
    assert cells(lines[1]) == [(UPPER_HALF, GREEN, (1, 2, 3))] * 2
    assert len(lines[1]) == 1, "cells of one colour pair share a segment"


def test_images_are_fitted_to_the_space_two_pixel_rows_per_cell():
    big = np.zeros((100, 160, 3), np.uint8)
    assert fit_image(big, 80, 40).shape == (50, 80, 3), "shrunk by area averaging"
    assert fit_image(big, 200, 60).shape == (100, 160, 3), "fits: drawn as it is"
    tiny = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    grown = fit_image(tiny, 30, 10)
    assert grown.shape == (20, 30, 3), "grown by whole repeats (x10)"
    assert np.array_equal(grown[::10, ::10], tiny)


def test_without_colours_an_image_is_drawn_by_brightness():
    image = np.array([[(0, 0, 0), WHITE], [(0, 0, 0), WHITE]], np.uint8)
    assert ramp_text(image).plain == " @"


def test_a_frame_image_renders_in_truecolour_or_by_brightness():
    frame = rgb_frame([[RED, RED], [BLUE, BLUE]])
    colour = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=20)
    colour.print(FrameImage(frame, 20, 5))
    out = colour.file.getvalue()
    assert UPPER_HALF * 2 in out and "38;2;255;0;0" in out and "48;2;0;0;255" in out
    plain = Console(file=io.StringIO(), width=20, color_system=None)
    plain.print(FrameImage(frame, 2, 1))
    assert UPPER_HALF not in plain.file.getvalue()


def test_text_frames_keep_their_colours_and_are_cut_to_fit():
    frame = frame_from_message(json.loads(encode(frame_message(0, "\x1b[41mS\x1b[0mFFF\nFHFH"))))
    lines = text_lines(frame, 3, 5)
    assert [line.plain for line in lines] == ["SFF", "FHF"]
    assert lines[0].get_style_at_offset(Console(), 0).bgcolor.name == "color(1)"


# ---- the env panel ------------------------------------------------------------------------

class PanelApp(App):
    def compose(self):
        yield EnvRender()


def panel_rows(panel: EnvRender) -> list[str]:
    return ["".join(s.text for s in panel.render_line(y)) for y in range(panel.size.height)]


async def test_the_panel_draws_rgb_text_and_tile_frames():
    app = PanelApp()
    async with app.run_test(size=(40, 14)) as pilot:
        panel = app.query_one(EnvRender)
        panel.frame = rgb_frame(np.full((4, 6, 3), 200, np.uint8))
        await pilot.pause()
        rows = [row for row in panel_rows(panel) if UPPER_HALF in row]
        assert rows and all(row.count(UPPER_HALF) == len(rows[0].strip()) for row in rows)
        strip = next(panel.render_line(y) for y in range(panel.size.height)
                     if UPPER_HALF in "".join(s.text for s in panel.render_line(y)))
        block = next(s for s in strip if UPPER_HALF in s.text)
        assert block.style.color.get_truecolor() == (200, 200, 200)
        assert block.style.bgcolor.get_truecolor() == (200, 200, 200)

        panel.frame = frame_from_message(json.loads(encode(frame_message(0, "SFFF\nFHFH"))))
        await pilot.pause()
        assert any("SFFF" in row for row in panel_rows(panel))

        panel.palette = {0: (".", "white"), 1: ("@", "red")}
        panel.frame = Frame(0, 1, 2, bytes([0, 1]))  # a tile frame, as the store holds it
        await pilot.pause()
        assert any(".@" in row.replace(" ", "") for row in panel_rows(panel))

        panel.view = "obs"
        await pilot.pause()
        assert panel.border_title.endswith("observation")


# ---- eval --render ascii ------------------------------------------------------------------

class GymEvaluator:
    """What play() reads of an Evaluator, playing random actions in one Gymnasium env."""

    palette = {}

    def __init__(self, env_id: str, steps: int = 5):
        self.env = from_gymnasium(env_id)(num_envs=1, seed=0)
        self.env.reset(0)
        self.target, self.steps = 1, steps
        self.episodes, self.done_returns = 0, []

    def frames(self, render=True):
        for step in range(self.steps):
            if step:
                self.env.step(np.zeros(self.env.actions.shape, self.env.actions.dtype))
            if step == self.steps - 1:
                self.episodes, self.done_returns = 1, [1.0]
            yield frame_message(0, self.env.frame(0)) if render else None


def test_eval_ascii_draws_cartpole_in_half_blocks_on_a_colour_terminal():
    console = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor",
                      width=60, height=30)
    play(GymEvaluator("CartPole-v1"), "ascii", fps=1000, console=console)
    out = console.file.getvalue()
    assert UPPER_HALF * 20 in out, "the sky: a run of half blocks"
    assert "\x1b[38;2;" in out and "episode 1/1" in out


def test_eval_ascii_into_a_pipe_prints_the_last_frame_by_brightness():
    console = Console(file=io.StringIO(), width=60, color_system=None)
    play(GymEvaluator("CartPole-v1"), "ascii", fps=1000, console=console)
    out = console.file.getvalue()
    picture = out[out.index("last frame:"):].splitlines()[1:]
    assert len(picture) >= 10 and UPPER_HALF not in out
    assert any("@" in line for line in picture), "the white sky is brightest"
    assert any(set(line.strip()) - {"@"} for line in picture), "the cart and pole are darker"


def test_eval_ascii_shows_frozenlake_as_its_text():
    console = Console(file=io.StringIO(), width=60, color_system=None)
    play(GymEvaluator("FrozenLake-v1", steps=2), "ascii", fps=1000, console=console)
    out = console.file.getvalue()
    assert "SFFF\nFHFH\nFFFH\nHFFG" in out.replace("\n\n", "\n")
    assert frame_from_message(GymEvaluator("FrozenLake-v1").frames().__next__()).kind == \
        FrameKind.TEXT
