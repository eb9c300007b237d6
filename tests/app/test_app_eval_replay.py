"""The dashboard's side of evaluation during training: the eval score beside the training
score (one point per evaluation) and `v`, which replays the run's newest recording in the env
panel until it ends or any key stops it."""

from __future__ import annotations

import numpy as np
import pytest
from app_fakes import HELLO, telemetry

from puffer_tui.app.telemetry_store import TelemetryStore
from puffer_tui.app.widgets.env_render import EnvRender
from puffer_tui.app.widgets.episode_stats import EpisodeStats
from puffer_tui.app.widgets.recording_replay import LatestRecording, load_replay
from puffer_tui.engine.evaluation.recording import periodic_recording_path, record_episodes
from puffer_tui.engine.shared.protocol import FrameKind
from puffer_tui.screens.dashboard import DashboardScreen
from tests.screens.test_app_snapshots import FixedDataApp, screen_text

SQUARED = {0: ("·", "grey39"), 1: ("@", "bold bright_cyan"), 2: ("◆", "bold yellow")}


def _evaluated(epoch: int, score: float) -> dict:
    """Telemetry of an epoch that ran an evaluation (its group tagged with the epoch)."""
    return {**telemetry(epoch), "eval": {"score": score, "episode_return": 4 * score,
                                         "episode_length": 30.0, "episodes": 8,
                                         "seconds": 0.2, "epoch": epoch}}


def _record(run_dir, step: int, frames: int, fps: float = 10.0):
    pytest.importorskip("imageio", reason='the record extra is not installed: pip install "puffer-tui[record]"')
    tiles = [np.full((11, 11), i % 3, np.uint8) for i in range(frames)]
    return record_episodes(tiles, periodic_recording_path(run_dir, step), fps, 4, SQUARED)


def test_the_store_keeps_one_point_per_evaluation():
    store = TelemetryStore()
    store.ingest(_evaluated(5, 0.25), now=1.0)
    store.ingest(_evaluated(5, 0.25), now=1.0)  # the same evaluation pushed again
    # the next epoch's first push may still carry the last row's evaluation: not a new one
    store.ingest({**telemetry(6), "eval": _evaluated(5, 0.25)["eval"]}, now=1.0)
    store.ingest(telemetry(7), now=1.0)
    store.ingest(_evaluated(10, 0.75), now=1.0)
    assert store.eval_history() == [0.25, 0.75]
    assert list(store.eval_steps) == [5 * 4096, 10 * 4096]
    assert store.trend("eval/score") == 1


def test_the_history_of_a_run_brings_its_evaluations():
    store = TelemetryStore()
    rows = [{"epoch": e, "global_step": e * 4096, "losses": {}, "env": {"score": 0.1 * e},
             **({"eval": {"score": 0.2 * e, "episodes": 8}} if e % 2 == 0 else {})}
            for e in range(1, 6)]
    store.load_history(rows, [])
    assert store.eval_history() == [0.4, 0.8]
    store.ingest(_evaluated(4, 0.8), now=1.0)  # pushed again after connecting: known
    assert store.eval_history() == [0.4, 0.8]


async def test_the_eval_score_shows_beside_the_training_score():
    app = FixedDataApp("dashboard")
    app.store.ingest(_evaluated(41, 0.5), now=1.0)
    app.store.ingest(_evaluated(46, 0.9), now=1.0)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.1)
        stats = app.screen.query_one(EpisodeStats)
        assert stats.history["eval/score"] == [0.5, 0.9]
        lines = stats.render().plain.splitlines()
        assert lines[0].startswith("score")
        assert any(line.startswith("eval") and "0.9" in line for line in lines)


async def test_v_replays_the_newest_recording_and_any_key_stops_it(tmp_path):
    app = FixedDataApp("dashboard")
    app.store.set_hello({**HELLO, "run_dir": str(tmp_path)})
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        assert not screen.check_action("replay", ())  # no recording: no key in the footer
        await pilot.press("v")
        assert screen.player.replay is None
        _record(tmp_path, 4096, 3)
        newest = _record(tmp_path, 8192, 50, fps=10.0)
        screen.refresh_panels()
        assert screen.player.recordings.path == newest.path and screen.check_action("replay", ())
        assert screen.has_class("-recording")
        assert "Replay recording" in [c.title for c in screen.palette_commands()]
        await _until(pilot, lambda: "v Replay" in screen_text(app).splitlines()[-1])
        footer = screen_text(app).splitlines()[-1]  # at 80 columns: every key, Quit included
        assert footer.rstrip().endswith("q Quit") and "^p" not in footer
        await pilot.press("v")
        render = screen.query_one(EnvRender)
        await _until(pilot, lambda: screen.player.replay is not None)
        assert render.frame.kind == FrameKind.RGB
        assert render.border_title.startswith("replay ") and render.border_title.endswith(
            "/50 eval-8192.gif")
        sent = list(app.sent) if hasattr(app, "sent") else []
        await pilot.press("p")  # any key: stops the replay, and only that (no pause)
        assert screen.player.replay is None and render.caption == ""
        assert render.frame is app.store.frame
        assert getattr(app, "sent", []) == sent
        assert screen.check_action("pause", ())  # still running: p did not pause
        # the same key stops it too
        await pilot.press("v")
        await _until(pilot, lambda: screen.player.replay is not None)
        await pilot.press("v")
        assert screen.player.replay is None


async def test_a_replay_ends_by_itself_back_on_the_live_frames(tmp_path):
    app = FixedDataApp("dashboard")
    app.store.set_hello({**HELLO, "run_dir": str(tmp_path)})
    _record(tmp_path, 4096, 10, fps=20.0)  # half a second
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        screen.refresh_panels()
        await pilot.press("v")
        await _until(pilot, lambda: screen.player.replays == 1 and screen.player.replay is None)
        render = screen.query_one(EnvRender)
        assert render.caption == "" and render.frame is app.store.frame
        assert render.border_title == "env 0/64"


def test_replay_frames_follow_the_recordings_clock(tmp_path):
    made = _record(tmp_path, 1, 5, fps=10.0)
    replay = load_replay(made.path)
    assert len(replay.frames) == 5 and replay.fps == 10.0
    assert replay.frame_at(0.0) is replay.frames[0] and replay.frame_at(0.45) is replay.frames[4]
    assert replay.frame_at(0.5) is None  # over
    first = replay.frames[0]
    assert (first.height, first.width) == (44, 44)  # 11 tiles x record scale 4


def test_the_latest_recording_is_looked_up_again_only_when_the_folder_changes(tmp_path):
    watch = LatestRecording()
    assert watch.check(tmp_path) is False and watch.path is None  # no recordings/ yet
    first = _record(tmp_path, 1, 2)
    assert watch.check(tmp_path) is True and watch.path == first.path
    assert watch.check(tmp_path) is False
    (tmp_path / "recordings" / ".eval-9.gif.0a1b.tmp.gif").write_bytes(b"")  # a write going on
    second = _record(tmp_path, 2, 2)
    assert watch.check(tmp_path) is True and watch.path == second.path


async def _until(pilot, predicate, timeout: float = 5.0):
    for _ in range(int(timeout / 0.02)):
        if predicate():
            return
        await pilot.pause(0.02)
    raise AssertionError("timed out")
