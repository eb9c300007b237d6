"""80x24 is the default terminal: every screen must say what it needs to there (fixed data).
The snapshots (tests/screens/test_app_snapshots.py) pin whole screens; these name what matters."""

from __future__ import annotations

import time

from puffer_tui.app.widgets.episode_stats import EpisodeStats
from puffer_tui.app.widgets.override_form import OverrideRow
from tests.screens.test_app_snapshots import FixedDataApp, screen_text


async def launcher(app, pilot):
    deadline = time.monotonic() + 30
    while not (app.screen.query(OverrideRow) and app.screen.query_one("#envs").option_count):
        assert time.monotonic() < deadline, "the launcher never filled"
        await pilot.pause(0.05)


async def test_launcher_shows_the_focused_fields_value_and_help_at_80x24(tmp_path):
    app = FixedDataApp("launcher", runs_root=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await launcher(app, pilot)
        row = next(r for r in app.screen.query(OverrideRow) if r.spec.key == "train.learning_rate")
        row.query_one("Input").focus()
        # the help line follows the focus on the next refresh: poll it (a loaded box takes
        # longer than any fixed pause), then read it
        deadline = time.monotonic() + 15
        while "train.learning_rate = 0.015" not in (text := screen_text(app)):
            assert time.monotonic() < deadline, text
            await pilot.pause(0.1)
        assert "Adam learning rate" in text, text


async def test_launcher_help_is_cut_with_an_ellipsis_not_mid_word(tmp_path):
    app = FixedDataApp("launcher", runs_root=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await launcher(app, pilot)
        await pilot.pause(0.3)
        rows = [line for line in screen_text(app).splitlines() if "num_targets" in line]
        assert rows and rows[0].rstrip(" │").endswith("…"), rows


async def test_dashboard_footer_header_and_stat_names_read_at_80x24():
    app = FixedDataApp("dashboard")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(1.3)
        lines = screen_text(app).rstrip("\n").splitlines()
        footer = lines[-1]
        for label in ("p Pause", "c Checkpoint", "s Stop", "h Hyperparams", "r Render",
                      "? Help", "q Quit"):
            assert label in footer, footer
        header = lines[0]
        for part in ("running", "epoch 40", "ETA 0:00:55"):
            assert part in header, header
        assert not header.rstrip().endswith("…"), header
        stats = app.screen.query_one(EpisodeStats).render().plain.splitlines()
        names = [line.split()[0] for line in stats]
        assert len(set(names)) == len(names), stats
        assert {"score", "return", "length"} <= set(names), stats
