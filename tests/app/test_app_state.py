"""The dashboard never shows stale state: paused speed, keys for a run that ended, a stop
question left open, a made-up "epoch 0", missing history, old wrapping, events out of order,
progress above 100%. Fixed data (tests/app_fakes.py), no engine needed."""

from __future__ import annotations

import json
import time

from app_fakes import FIXED_TIME, HELLO, filled_store, push, telemetry

from puffer_tui.app.run_history import read_events, read_metric_rows
from puffer_tui.app.telemetry_store import TelemetryStore
from puffer_tui.app.widgets.event_log import EventLog
from puffer_tui.app.widgets.run_header import RunHeader
from puffer_tui.app.widgets.sps_history import SpsHistory
from puffer_tui.engine.shared.events import EventLog as EngineEventLog
from puffer_tui.screens.confirm import ChoiceDialog
from puffer_tui.screens.dashboard import DashboardScreen
from tests.screens.test_app_keys import OfflineApp
from tests.screens.test_app_snapshots import FixedDataApp, screen_text


async def eventually(pilot, condition, what: str, timeout: float = 15.0) -> None:
    """Wait for the panels' 1 s refresh (and the footer's recompose) without a fixed sleep,
    so a loaded machine is slower, not red; the deadline only bounds a hang."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        await pilot.pause(0.1)


def footer_line(app) -> str:
    return screen_text(app).rstrip("\n").splitlines()[-1]


async def test_paused_run_shows_no_speed_in_the_sps_panel():
    app = FixedDataApp("dashboard")
    async with app.run_test(size=(100, 30)) as pilot:
        push(app, telemetry(41, state="paused") | {"sps": 0.0})
        panel = app.screen.query_one(SpsHistory)
        await eventually(pilot, lambda: panel.state == "paused", "a panel refresh")
        text = panel.summary().plain
        assert "now 0 (paused)" in text, text


async def test_a_finished_run_offers_no_steering_keys():
    app = OfflineApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await eventually(pilot, lambda: "Pause" in footer_line(app), "the first footer")
        assert "Pause" in footer_line(app) and "Stop" in footer_line(app)
        app.store.ingest(telemetry(41, state="finished"))
        app._link_lost("connection closed")  # the engine exits after its last telemetry
        # The footer is recomposed; between removal and remount the last line is a panel's
        # border, so wait for the new footer itself, not just for "Pause" to be gone.
        await eventually(
            pilot,
            lambda: "Pause" not in footer_line(app) and "Quit" in footer_line(app),
            "the footer",
        )
        footer = footer_line(app)
        for label in ("Pause", "Resume", "Checkpoint", "Stop", "Hyperparams"):
            assert label not in footer, footer
        assert "Quit" in footer and "Help" in footer
        await pilot.press("p", "c", "s", "h")
        assert app.sent == [] and isinstance(app.screen, DashboardScreen)


async def test_the_stop_question_is_withdrawn_when_the_run_finishes_under_it():
    app = OfflineApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("s")
        assert isinstance(app.screen, ChoiceDialog)
        app.store.ingest(telemetry(41, state="finished"))
        app._link_lost("connection closed")
        await pilot.pause(0.3)
        assert isinstance(app.screen, DashboardScreen)
        assert app.sent == []


class AttachingApp(FixedDataApp):
    """Hello received, no telemetry yet: the first moment after attaching."""

    def __init__(self):
        super().__init__("dashboard")
        self.store = TelemetryStore()
        self.store.set_hello(HELLO)


async def test_attach_shows_no_made_up_epoch_before_the_first_telemetry():
    app = AttachingApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.3)
        header = app.screen.query_one(RunHeader).render().plain
        assert "epoch 0" not in header and "0/0" not in header, header
        assert "waiting for the engine's first report" in header


async def test_progress_past_the_target_reads_at_most_100_percent():
    app = FixedDataApp("dashboard")
    async with app.run_test(size=(100, 30)) as pilot:
        push(app, telemetry(41) | {"global_step": 4_063_232, "total_timesteps": 4_000_000})
        header_widget = app.screen.query_one(RunHeader)
        await eventually(pilot, lambda: getattr(header_widget.telemetry, "epoch", 0) == 41, "a refresh")
        header = header_widget.render().plain
        assert "100.0%" in header and "101" not in header, header
        assert "4.06M/4M" not in header and "step 4M+63.2k" in header, header


def test_events_are_kept_in_time_order():
    store = TelemetryStore()
    store.add_event("info", "later", FIXED_TIME + 5)
    store.add_event("app", "earlier, but arrived second", FIXED_TIME + 1)
    assert [e.text for e in store.events] == ["earlier, but arrived second", "later"]


def test_history_from_the_run_files_fills_curves_stats_and_events(tmp_path):
    """metrics.jsonl and events.log in the engine's own formats; pushed events not repeated."""
    with (tmp_path / "metrics.jsonl").open("w") as f:
        for epoch in range(1, 6):
            f.write(json.dumps({"epoch": epoch, "global_step": epoch * 4096, "sps": 1e5,
                                "uptime": 1.0, "policy_loss": -0.1 * epoch, "value_loss": 1.0,
                                "entropy": 1.5, "approx_kl": 0.01, "clipfrac": 0.1,
                                "explained_variance": 0.5, "timing_env": 0.01,
                                "timing_pct_env": 50.0, "score": epoch / 10, "episodes": 3})
                    + "\n")
        f.write('{"epoch": 6, "glo')  # a torn last line from a killed engine
    log = EngineEventLog(tmp_path)
    first = log.info("engine 1 starting squared (new run)")
    log.error("Traceback (most recent call last):\n  File x\nValueError: boom")

    store = TelemetryStore()
    store.set_hello(HELLO)
    store.add_event("info", first["text"], first["time"])  # also pushed live
    store.load_history(read_metric_rows(tmp_path), read_events(tmp_path))
    assert list(store.steps) == [4096 * e for e in range(1, 6)]
    assert list(store.sps) == [1e5] * 5
    assert list(store.losses["policy_loss"]) == [-0.1 * e for e in range(1, 6)]
    assert list(store.stats["score"]) == [e / 10 for e in range(1, 6)]
    assert "timing_env" not in store.stats and "sps" not in store.stats
    assert [e.text for e in store.events] == [
        "engine 1 starting squared (new run)",
        "Traceback (most recent call last):\n  File x\nValueError: boom"]
    store.ingest(telemetry(5))  # an epoch already loaded is not appended twice
    store.ingest(telemetry(7))
    assert list(store.steps)[-2:] == [4096 * 5, 7 * 4096]


async def test_events_wrap_again_at_the_new_width_after_a_resize():
    app = FixedDataApp("dashboard")
    async with app.run_test(size=(80, 24)) as pilot:
        log = app.screen.query_one(EventLog)
        await eventually(pilot, lambda: len(log.lines) > len(filled_store().events), "events")
        await pilot.resize_terminal(200, 60)
        # one line each at 200 columns (each wraps over two or more at 80)
        await eventually(pilot, lambda: len(log.lines) == len(filled_store().events),
                         "the events wrapped again at 200 columns")


async def test_b_goes_back_to_the_launcher_only_once_the_run_is_over(tmp_path):
    from puffer_tui.screens.launcher.screen import LauncherScreen

    app = OfflineApp()
    app.runs_root = tmp_path
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.2)
        assert "Launcher" not in footer_line(app)
        await pilot.press("b")
        assert isinstance(app.screen, DashboardScreen)
        app.store.ingest(telemetry(41, state="stopped"))
        app._link_lost("connection closed")
        await eventually(pilot, lambda: "b Launcher" in footer_line(app), "b in the footer")
        await pilot.press("b")
        await pilot.pause(0.3)
        assert isinstance(app.screen, LauncherScreen) and app.run_dir is None
