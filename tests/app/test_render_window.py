"""The raylib window renderer: palette colours, errors without a display, and a real window
under Xvfb whose screenshot must show the env's frame."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from rich.color import Color
from tree_paths import REPO_ROOT

from puffer_tui.app.render_window import (
    BACKGROUND,
    FOREGROUND,
    UNKNOWN_TILE,
    WindowUnavailableError,
    cell_size,
    colour_table,
    run_window,
    tile_rgb,
)
from puffer_tui.app.telemetry_store import Frame
from puffer_tui.app.widgets.env_render import frame_from_message
from puffer_tui.engine.shared.protocol import frame_message, palette_from_wire, palette_to_wire
from puffer_tui.envs.cpr import CPR

ROOT = REPO_ROOT


def test_palette_colours_map_to_rich_truecolour():
    assert tile_rgb("@", "bright_cyan") == Color.parse("bright_cyan").get_truecolor()
    assert tile_rgb("●", "grey70") == (178, 178, 178)
    assert tile_rgb("◆", "bold yellow") == Color.parse("bright_yellow").get_truecolor()
    assert tile_rgb("x", "#102030") == (16, 32, 48)
    assert tile_rgb(" ", "red") == BACKGROUND, "blank glyphs are background"
    assert tile_rgb("@", "default") == FOREGROUND and tile_rgb("@", "bold") == FOREGROUND
    with pytest.raises(ValueError, match="'not-a-colour' is not a rich colour"):
        tile_rgb("@", "not-a-colour")


def test_colour_table_covers_every_tile_id():
    table = colour_table(CPR.palette)
    assert table.shape == (256, 4) and np.all(table[:, 3] == 255)
    assert tuple(table[4, :3]) == tile_rgb(*CPR.palette[4])
    assert tuple(table[200, :3]) == UNKNOWN_TILE
    with pytest.raises(ValueError, match="outside"):
        colour_table({300: ("x", "red")})


def test_the_window_reads_the_wire_forms_the_terminal_renderer_reads():
    """Frames and palettes cross as the protocol's frame message and the hello's palette;
    the window, the eval command and the dashboard decode them with the same functions."""
    tiles = np.arange(12, dtype=np.uint8).reshape(3, 4)
    message = json.loads(json.dumps(frame_message(2, tiles)))  # as it crosses the socket
    frame = frame_from_message(message)
    assert (frame.env, frame.height, frame.width) == (2, 3, 4)
    assert np.array_equal(np.frombuffer(frame.tiles, np.uint8).reshape(3, 4), tiles)
    wire = json.loads(json.dumps(palette_to_wire(CPR.palette)))
    assert palette_from_wire(wire) == CPR.palette
    assert frame_from_message({**message, "width": 5}) is None, "tiles do not fill the grid"
    assert frame_from_message({**message, "tiles": "%%%"}) is None, "not base64"
    assert frame_from_message({"type": "frame"}) is None


def test_cell_size_fits_the_window_and_stays_in_bounds():
    assert cell_size((10, 10)) == 32
    assert cell_size((255, 255)) == 3
    assert cell_size((2000, 5000)) == 1
    assert cell_size((20, 40), max_window=(400, 400)) == 10


def blank_frame(height: int = 4, width: int = 4) -> Frame:
    return Frame(0, height, width, bytes(height * width))


def test_without_a_display_the_error_suggests_ascii_or_xvfb(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    frame = blank_frame()
    with pytest.raises(WindowUnavailableError, match="--render ascii.*xvfb-run"):
        run_window(lambda: frame, CPR.palette)


def test_bad_arguments_and_frames_are_refused():
    frame = blank_frame()
    with pytest.raises(ValueError, match="fps"):
        run_window(lambda: frame, CPR.palette, fps=-1)
    with pytest.raises(ValueError, match="screenshot_after"):
        run_window(lambda: frame, CPR.palette, screenshot_after=0)
    with pytest.raises(ValueError, match="height x width tile ids, got 4 x 4 with 15"):
        run_window(lambda: Frame(0, 4, 4, bytes(15)), CPR.palette)
    with pytest.raises(ValueError, match="Frame objects"):
        run_window(lambda: np.zeros((4, 4), np.uint8), CPR.palette)
    assert run_window(lambda: None, CPR.palette) == 0, "no frame, no window"


def test_an_unreachable_display_is_a_clear_error_not_a_crash():
    script = textwrap.dedent(
        """
        from puffer_tui.app.render_window import WindowUnavailableError, run_window
        from puffer_tui.app.telemetry_store import Frame
        try:
            run_window(lambda: Frame(0, 3, 3, bytes(9)), {0: ("x", "red")})
        except WindowUnavailableError as error:
            print("ERROR:", error)
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "WAYLAND_DISPLAY"}
    env["DISPLAY"] = ":4731"  # no server there
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "ERROR: could not open a window on display ':4731'" in out.stdout


def read_png(path: Path) -> np.ndarray:
    """RGBA pixels of a PNG (decoded with raylib, which needs no window for it)."""
    import pyray as rl

    image = rl.load_image(str(path))
    assert image.width > 0, f"{path} is not a readable PNG"
    colours = rl.load_image_colors(image)
    try:
        data = rl.ffi.buffer(colours, image.width * image.height * 4)
        return np.frombuffer(data, np.uint8).reshape(image.height, image.width, 4).copy()
    finally:
        rl.unload_image_colors(colours)
        rl.unload_image(image)


# The window is fed as the eval command feeds it: protocol frame messages and the wire
# palette, decoded by the terminal renderer's functions; the env plays random actions.
WINDOW_SCRIPT = """
import sys
import numpy as np
from puffer_tui.app.render_window import run_window
from puffer_tui.app.widgets.env_render import frame_from_message
from puffer_tui.engine.shared.protocol import frame_message, palette_from_wire, palette_to_wire
from puffer_tui.envs import make

env = make("cpr", num_envs=1, seed=3, width=24, height=18, num_agents=6)
env.reset(seed=3)
space = env.action_space
space.seed(3)
shown = []
def next_frame():
    if shown:
        env.step(space.sample().astype(env.actions.dtype))
    shown.append(env.frame(0).copy())
    return frame_from_message(frame_message(0, shown[-1]))
drawn = run_window(next_frame, palette_from_wire(palette_to_wire(env.palette)), title="test",
                   fps=0, screenshot=sys.argv[1], screenshot_after=12)
np.save(sys.argv[2], shown[-1])
print("drawn", drawn)
"""


@pytest.mark.skipif(shutil.which("xvfb-run") is None,
                    reason="xvfb-run is not installed (apt-get install xvfb xauth)")
def test_a_window_under_xvfb_draws_the_env_frame_and_saves_a_screenshot(tmp_path):
    png, npy = tmp_path / "shots" / "cpr.png", tmp_path / "frame.npy"
    out = subprocess.run(
        ["xvfb-run", "-a", "-s", "-screen 0 1280x1024x24", sys.executable, "-c", WINDOW_SCRIPT,
         str(png), str(npy)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "drawn 12" in out.stdout
    pixels = read_png(png)
    frame = np.load(npy)
    cell = cell_size(frame.shape)
    assert pixels.shape == (frame.shape[0] * cell, frame.shape[1] * cell, 4)
    colours = np.unique(pixels[..., :3].reshape(-1, 3), axis=0)
    assert len(colours) >= 4, "a blank or single-colour window"
    # the centre pixel of every tile has the palette colour of that tile
    centres = pixels[cell // 2 :: cell, cell // 2 :: cell, :3]
    expected = colour_table(CPR.palette)[frame][..., :3]
    assert np.array_equal(centres, expected)


# RGB frames (Gymnasium's rgb_array, cut to the frame bounds by the engine) and text frames
# (ansi) go through the same window; the script saves the frame it showed last.
RGB_WINDOW_SCRIPT = """
import json, sys
import numpy as np
from puffer_tui.app.render_window import run_window
from puffer_tui.app.widgets.env_render import frame_from_message
from puffer_tui.engine.shared.protocol import encode, frame_message
from puffer_tui.envs import from_gymnasium

env = from_gymnasium(sys.argv[3])(num_envs=1, seed=0)
env.reset(0)
shown = []
def next_frame():
    if shown:
        env.step(np.zeros(env.actions.shape, env.actions.dtype))
    frame = frame_from_message(json.loads(encode(frame_message(0, env.frame(0)))))
    shown.append(frame)
    return frame
drawn = run_window(next_frame, {}, title="test", fps=0, screenshot=sys.argv[1],
                   screenshot_after=6)
last = shown[-1]
np.save(sys.argv[2], np.frombuffer(last.data, np.uint8).reshape(last.height, last.width, 3)
        if last.kind == "rgb" else np.zeros(0))
print("drawn", drawn, last.kind)
"""


def run_under_xvfb(tmp_path, env_id):
    png, npy = tmp_path / f"{env_id}.png", tmp_path / f"{env_id}.npy"
    out = subprocess.run(
        ["xvfb-run", "-a", "-s", "-screen 0 1280x1024x24", sys.executable, "-c",
         RGB_WINDOW_SCRIPT, str(png), str(npy), env_id],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout, read_png(png), np.load(npy)


@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="xvfb-run is not installed")
def test_a_window_under_xvfb_draws_a_gym_rgb_frame_pixel_for_pixel(tmp_path):
    stdout, pixels, frame = run_under_xvfb(tmp_path, "CartPole-v1")
    assert "drawn 6 rgb" in stdout
    assert frame.shape == (100, 150, 3), "CartPole's 400 x 600 averaged in 4 x 4 blocks"
    cell = cell_size(frame.shape[:2])
    assert pixels.shape == (frame.shape[0] * cell, frame.shape[1] * cell, 4)
    centres = pixels[cell // 2 :: cell, cell // 2 :: cell, :3]
    assert np.array_equal(centres, frame)


@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="xvfb-run is not installed")
def test_a_window_under_xvfb_draws_a_gym_text_frame_in_its_colours(tmp_path):
    stdout, pixels, _ = run_under_xvfb(tmp_path, "FrozenLake-v1")
    assert "drawn 6 text" in stdout
    colours = {tuple(int(c) for c in p) for p in np.unique(pixels[..., :3].reshape(-1, 3), axis=0)}
    assert BACKGROUND in colours and FOREGROUND in colours, "text on the background"
    red = tuple(Color.parse("red").get_truecolor())
    assert red in colours, "the agent's square: ansi red background"
