"""Text snapshots of the screens with fixed data (tests/app_fakes.py), at two sizes.

The snapshot is the characters on screen (no colours), which is what a layout regression
changes. After an intended change, regenerate with:
    PUFFER_TUI_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_app_snapshots.py
and review the diff of tests/snapshots/.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from app_fakes import filled_store, system_sample

from puffer_tui.app.app import PufferApp
from puffer_tui.screens.dashboard import DashboardScreen
from puffer_tui.screens.help import HelpScreen
from puffer_tui.screens.hyperparameters import HyperparameterScreen

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("PUFFER_TUI_UPDATE_SNAPSHOTS") == "1"


class FixedDataApp(PufferApp):
    """The real app and screens, fed from a fixed store instead of an engine."""

    def __init__(self, screen: str):
        super().__init__()
        self.which = screen
        self.store = filled_store()
        self.link_state = None

    def show_first_screen(self) -> None:
        self.push_screen(DashboardScreen(self.store))
        if self.which == "hyperparameters":
            self.push_screen(HyperparameterScreen(self.store))
        elif self.which == "help":
            self.push_screen(HelpScreen())

    def _sample_system(self) -> None:  # psutil numbers differ per machine: use fixed ones
        if isinstance(self.screen, DashboardScreen):
            self.screen.show_system(system_sample())

    def _drain(self) -> None:  # no engine
        pass


def screen_text(app: PufferApp) -> str:
    strips = app.screen._compositor.render_strips()
    return "\n".join(strip.text.rstrip() for strip in strips) + "\n"


@pytest.fixture(autouse=True)
def utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.delenv("TZ")
    time.tzset()


@pytest.mark.parametrize("screen,size", [
    ("dashboard", (100, 30)),
    ("dashboard", (160, 45)),
    ("hyperparameters", (100, 30)),
    ("help", (100, 30)),
])
async def test_screen_snapshot(screen, size):
    app = FixedDataApp(screen)
    async with app.run_test(size=size) as pilot:
        if screen == "dashboard":
            app.screen.show_system(system_sample())
        # Let the panels' timers run once (fast panels 4 Hz, plots 1 Hz).
        await pilot.pause(1.3)
        await pilot.wait_for_scheduled_animations()
        text = screen_text(app)
    path = SNAPSHOTS / f"{screen}_{size[0]}x{size[1]}.txt"
    if UPDATE or not path.exists():
        path.write_text(text)
        if not UPDATE:
            pytest.fail(f"wrote a new snapshot {path.name}; review it and run again")
    assert text == path.read_text(), f"{path.name} changed (see the module docstring)"


async def test_dashboard_fits_100x30_with_every_panel():
    app = FixedDataApp("dashboard")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(1.3)
        text = screen_text(app)
        for title in ("steps / second", "time per epoch", "losses", "env 0/64", "cpu",
                      "episodes", "events"):
            assert title in text, title
        assert "running" in text and "Pause" in text
        region = app.screen.screen.region
        for widget in app.screen.query("RunHeader, SpsHistory, TimingBars, LossPanel, "
                                       "EnvRender, CpuPanel, EpisodeStats, EventLog"):
            assert region.contains_region(widget.region), widget
            assert widget.region.width > 0 and widget.region.height > 0, widget
