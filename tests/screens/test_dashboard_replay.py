"""The dashboard's RecordingPlayer (screens/dashboard_replay.py) on its own: built in a bare
App with one env panel, as DashboardScreen builds it; what it draws, what it says when a
file cannot be read, and a stop that comes while the file is still loading.
tests/app/test_app_eval_replay.py plays recordings through the dashboard's keys."""

from __future__ import annotations

import numpy as np
import pytest
from textual.app import App

from puffer_tui.app.widgets.env_render import EnvRender
from puffer_tui.engine.shared.protocol import Frame, FrameKind
from puffer_tui.engine.shared.recordings import recordings_dir
from puffer_tui.screens.dashboard_replay import RecordingPlayer

LIVE = Frame(0, 3, 3, bytes(9), FrameKind.TILES)  # the live frame the panel goes back to


class PanelApp(App):
    def __init__(self):
        super().__init__()
        self.changes = 0

    def compose(self):
        yield EnvRender()

    def on_mount(self) -> None:
        self.player = RecordingPlayer(self.screen, lambda: self.screen.query(EnvRender),
                                      lambda: LIVE, self._changed)

    def _changed(self) -> None:
        self.changes += 1


def _record(run_dir, frames: int):
    pytest.importorskip("imageio", reason='the record extra is not installed: pip install "puffer-tui[record]"')
    from puffer_tui.engine.evaluation.recording import periodic_recording_path, record_episodes

    tiles = [np.full((11, 11), i % 2, np.uint8) for i in range(frames)]
    palette = {0: ("·", "grey39"), 1: ("@", "bold bright_cyan")}
    return record_episodes(tiles, periodic_recording_path(run_dir, 8), 10.0, 4, palette)


async def test_nothing_to_play_is_not_busy(tmp_path):
    app = PanelApp()
    async with app.run_test() as pilot:
        player = app.player
        assert not player.recordings.check(tmp_path) and not player.available
        player.toggle()
        await pilot.pause()
        assert not player.busy and app.query_one(EnvRender).caption == ""


async def test_a_damaged_recording_is_named_and_the_panel_goes_back(tmp_path):
    app = PanelApp()
    folder = recordings_dir(tmp_path)
    folder.mkdir(parents=True)
    (folder / "eval-8.gif").write_bytes(b"GIF89a not really")
    async with app.run_test() as pilot:
        player = app.player
        assert player.recordings.check(tmp_path) and player.available
        player.toggle()
        assert player.busy and app.query_one(EnvRender).caption == "loading eval-8.gif"
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not player.busy and player.replays == 0 and app.changes == 0
        assert app.query_one(EnvRender).caption == ""
        (note,) = app._notifications
        assert note.message.startswith("cannot replay eval-8.gif: ")
        assert note.severity == "warning"


async def test_a_stop_while_loading_plays_nothing(tmp_path):
    _record(tmp_path, 5)
    app = PanelApp()
    async with app.run_test() as pilot:
        player = app.player
        player.recordings.check(tmp_path)
        player.toggle()
        player.stop()  # before the worker hands the file over: it is dropped
        await app.workers.wait_for_complete()
        await pilot.pause()
        render = app.query_one(EnvRender)
        assert player.replay is None and player.replays == 0 and app.changes == 0
        assert render.caption == "" and render.frame is LIVE
        player.toggle()  # the next `v` plays it
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert player.replay is not None and player.replays == 1 and app.changes == 1
        assert render.caption.startswith("replay ") and render.caption.endswith("/5 eval-8.gif")
        player.stop()
        assert render.frame is LIVE and render.caption == "" and app.changes == 2
