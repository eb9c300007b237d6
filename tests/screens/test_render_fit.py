"""A tile frame taller than its panel is drawn whole, two tile rows a line in half blocks in
the tiles' colours, rather than cropped: at 80x24 the full-screen render of Breakout (23 x 36
tiles) used to cut its bottom rows, the paddle with them."""

from __future__ import annotations

import base64

from app_fakes import HELLO

from puffer_tui.app.widgets.env_render import EnvRender, frame_text
from puffer_tui.engine.shared.protocol import decode_frame
from puffer_tui.screens.render import RenderScreen
from tests.screens.test_app_snapshots import FixedDataApp, screen_text

# Breakout's palette (envs/breakout): blank background, bricks, the paddle, the ball
PALETTE = {"0": [" ", "default"], "1": ["▆", "red"], "2": ["▆", "dark_orange"],
           "7": ["▀", "bold white"], "8": ["●", "bold bright_white"]}
HEIGHT, WIDTH, PADDLE_ROW, BALL = 23, 36, 21, (14, 20)


def breakout_frame() -> dict:
    tiles = bytearray(HEIGHT * WIDTH)
    for row, brick in ((4, 1), (5, 2)):
        tiles[row * WIDTH:(row + 1) * WIDTH] = bytes([brick]) * WIDTH
    tiles[PADDLE_ROW * WIDTH + 15:PADDLE_ROW * WIDTH + 20] = bytes([7]) * 5
    tiles[BALL[0] * WIDTH + BALL[1]] = 8
    return {"type": "frame", "env": 0, "height": HEIGHT, "width": WIDTH,
            "tiles": base64.b64encode(bytes(tiles)).decode()}


def _colours(text) -> list[str]:
    return [str(span.style) for span in text.spans]


def test_a_frame_too_tall_keeps_every_row_in_half_blocks():
    frame = decode_frame(breakout_frame())
    palette = {int(k): tuple(v) for k, v in PALETTE.items()}
    text = frame_text(frame, palette, 76, 17)
    lines = text.plain.split("\n")
    assert len(lines) == 12 and all(len(line) == WIDTH for line in lines)
    colours = _colours(text)
    assert "white" in colours and "bright_white" in colours  # the paddle, the ball
    assert "red on dark_orange" in colours  # two brick rows in one line
    assert lines[PADDLE_ROW // 2][15:20] == "▄" * 5  # a blank row above the paddle


async def test_breakout_full_screen_at_80x24_shows_the_paddle_and_the_ball():
    app = FixedDataApp("render")
    app.store.set_hello({**HELLO, "env": "breakout", "palette": PALETTE})
    app.store.ingest(breakout_frame(), now=1.0)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.3)
        assert isinstance(app.screen, RenderScreen)
        app.screen.refresh_frame()
        await pilot.pause(0.2)
        assert app.screen.query_one(EnvRender).size.height < HEIGHT  # shorter than the frame
        text = screen_text(app)
        assert "▄▄▄▄▄" in text  # the paddle, under a blank row
        assert "▀" * WIDTH in text  # two brick rows in one line
