"""The comparison screen on two real run directories: curves for both runs, metric cycling,
the x-axis toggle, the live change marked, live updates, text snapshots; and the launcher
marking runs and opening it."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from compare_runs import make_compare_run

from puffer_tui.app.app import PufferApp
from puffer_tui.app.widgets.compare_plot import ComparePlot
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.screens import compare as compare_screen
from puffer_tui.screens.compare import CompareScreen
from puffer_tui.screens.launcher.screen import LauncherScreen
from tests.app.test_app_engine import until

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("PUFFER_TUI_UPDATE_SNAPSHOTS") == "1"
BORN = 1_790_000_000  # the runs' directory names come from this time (UTC)


@pytest.fixture(autouse=True)
def utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.delenv("TZ")
    time.tzset()


@pytest.fixture
def two_runs(tmp_path):
    slow = make_compare_run(tmp_path, learning_rate="0.01", score_gain=0.1, now=BORN)
    fast = make_compare_run(tmp_path, learning_rate="0.02", score_gain=0.2, set_at_s=25,
                            now=BORN + 60)
    return slow, fast


class CompareApp(PufferApp):
    """The real app showing the comparison over an empty screen (no engine, no launcher)."""

    def __init__(self, run_dirs):
        super().__init__()
        self.run_dirs = run_dirs

    def show_first_screen(self) -> None:
        self.open_compare(self.run_dirs)


def screen_text(app) -> str:
    return "\n".join(s.text.rstrip() for s in app.screen._compositor.render_strips()) + "\n"


async def shown(pilot, app) -> ComparePlot:
    await until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.runs,
                "the comparison's first read")
    await pilot.pause(0.1)  # the tables and the plot redrawn from it
    return app.screen.query_one(ComparePlot)


async def test_curves_of_two_runs_metric_cycling_axis_toggle_and_live_change(two_runs):
    slow, fast = two_runs
    app = CompareApp(two_runs)
    async with app.run_test(size=(80, 24)) as pilot:
        plot = await shown(pilot, app)
        series = plot.drawn_series()
        assert [name for name, _, _ in series] == [slow.name, fast.name]
        (_, xs, slow_ys), (_, _, fast_ys) = series
        assert xs == [4096.0 * e for e in range(1, 7)]
        assert slow_ys[-1] == pytest.approx(0.6) and fast_ys[-1] == pytest.approx(1.2)
        assert plot.border_title == "score by step"
        # the change 25 s after the engine started: the first row at 25 s trained or more
        assert plot.marker_positions() == [(fast.name, 12288.0)]
        text = screen_text(app)
        assert "train.learning_rate" in text and "0.02" in text and "0.01" in text
        assert "step 12,288 learning_rate" in text and "0.02 → 0.001" in text

        await pilot.press("x")
        assert plot.border_title == "score by time trained (s)"
        assert plot.drawn_series()[0][1] == [10.0 * e for e in range(1, 7)]
        assert plot.marker_positions() == [(fast.name, 24.0)]  # 36 s before the end (60 s)
        await pilot.press("x")
        assert plot.border_title == "score by step"

        await pilot.press("m")
        assert plot.border_title == "episode return by step"
        for _ in range(3):
            await pilot.press("m")
        assert plot.border_title == "value loss by step"
        assert plot.drawn_series()[0][2][0] == pytest.approx(1.0)
        await pilot.pause(0.1)
        assert screen_text(app).startswith(" value loss")


async def test_a_live_run_keeps_updating(two_runs, monkeypatch):
    monkeypatch.setattr(compare_screen, "REFRESH_S", 0.1)
    slow, fast = two_runs
    app = CompareApp(two_runs)
    async with app.run_test(size=(80, 24)) as pilot:
        plot = await shown(pilot, app)
        assert len(plot.drawn_series()[1][1]) == 6
        row = {"epoch": 7, "global_step": 7 * 4096, "sps": 400.0, "uptime": 70.0, "score": 2.0}
        with (fast / rd.METRICS_FILE).open("a") as f:
            f.write(json.dumps(row) + "\n")
        await until(pilot, lambda: len(plot.drawn_series()[1][1]) == 7, "the new row")
        assert plot.drawn_series()[1][2][-1] == 2.0
        assert len(plot.drawn_series()[0][1]) == 6


async def test_a_run_without_metrics_yet_shows_without_a_curve(two_runs, tmp_path):
    new = rd.create_run_dir("squared", tmp_path, now=BORN + 120)
    (new / rd.CONFIG_FILE).write_text('env_name = "squared"\n')
    app = CompareApp([two_runs[0], new])
    async with app.run_test(size=(80, 24)) as pilot:
        plot = await shown(pilot, app)
        assert [len(xs) for _, xs, _ in plot.drawn_series()] == [6, 0]


@pytest.mark.parametrize("size", ((80, 24), (120, 40)), ids=lambda s: f"{s[0]}x{s[1]}")
async def test_compare_snapshot(two_runs, size):
    app = CompareApp(two_runs)
    async with app.run_test(size=size) as pilot:
        await shown(pilot, app)
        await pilot.pause(0.3)
        await pilot.wait_for_scheduled_animations()
        text = screen_text(app)
    path = SNAPSHOTS / f"compare_{size[0]}x{size[1]}.txt"
    if UPDATE or not path.exists():
        path.write_text(text)
        if not UPDATE:
            pytest.fail(f"wrote a new snapshot {path.name}; review it and run again")
    assert text == path.read_text(), f"{path.name} changed (regenerate with " \
        "PUFFER_TUI_UPDATE_SNAPSHOTS=1 and review the diff)"


async def test_launcher_marks_runs_and_opens_the_comparison(two_runs, tmp_path, monkeypatch):
    for module in ("puffer_tui.envs.registry", "puffer_tui.envs.env_plugins"):
        monkeypatch.setattr(f"{module}.plugin_entry_points", lambda: {})
    slow, fast = two_runs
    app = PufferApp(runs_root=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        launcher = app.screen
        assert isinstance(launcher, LauncherScreen)
        await until(pilot, lambda: launcher._run_infos, "the runs list")
        launcher.query_one("#runs").focus()
        await pilot.press("space")  # the newest run first: fast
        assert launcher.marked == [str(fast)]
        await pilot.press("ctrl+o")  # one run marked: a notification says how
        await pilot.pause(0.1)
        assert isinstance(app.screen, LauncherScreen)
        assert any("mark two runs or more" in n.message for n in app._notifications)
        await pilot.press("down", "space")
        assert launcher.marked == [str(fast), str(slow)]
        await pilot.pause(0.1)
        text = screen_text(app)
        assert f"●{fast.name}" in text and f"●{slow.name}" in text  # the mark, then the name
        await pilot.press("ctrl+o")
        plot = await shown(pilot, app)
        assert [name for name, _, _ in plot.drawn_series()] == [fast.name, slow.name]
        await pilot.press("b")
        await until(pilot, lambda: app.screen is launcher, "back to the launcher")
        await pilot.press("space")  # unmark slow
        assert launcher.marked == [str(fast)]
        await pilot.press("up", "ctrl+o")
        await pilot.pause(0.1)
        assert app.screen is launcher
        await pilot.press("down", "space", "ctrl+o")
        await shown(pilot, app)
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is launcher, "escape back to the launcher")
