"""Text snapshots of the screens with fixed data (tests/app_fakes.py), at three sizes.

The snapshot is the characters on screen (no colours), which is what a layout regression
changes. After an intended change, regenerate with:
    PUFFER_TUI_UPDATE_SNAPSHOTS=1 python -m pytest tests/screens/test_app_snapshots.py
and review the diff of tests/screens/snapshots/.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from app_fakes import filled_store, system_sample

from puffer_tui.app.app import PufferApp
from puffer_tui.screens.crash import CrashScreen
from puffer_tui.screens.dashboard import DashboardScreen
from puffer_tui.screens.help import HelpScreen
from puffer_tui.screens.hyperparameters import HyperparameterScreen
from puffer_tui.screens.launcher.screen import LauncherScreen
from puffer_tui.screens.render import RenderScreen

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("PUFFER_TUI_UPDATE_SNAPSHOTS") == "1"


class FixedDataApp(PufferApp):
    """The real app and screens, fed from a fixed store instead of an engine."""

    def __init__(self, screen: str, runs_root: str | Path | None = None):
        super().__init__(runs_root=runs_root)
        self.which = screen
        self.store = filled_store()
        self.link_state = None

    def show_first_screen(self) -> None:
        if self.which == "launcher":
            self.push_screen(LauncherScreen(self.runs_root))
            return
        self.push_screen(DashboardScreen(self.store))
        if self.which == "hyperparameters":
            self.push_screen(HyperparameterScreen(self.store))
        elif self.which == "help":
            self.push_screen(HelpScreen())
        elif self.which == "render":
            self.push_screen(RenderScreen(self.store, 0))
        elif self.which == "stop":
            self.screen_stack[-1].action_stop()
        elif self.which == "quit":
            self.link = FakeLink()  # connected, so q asks detach or stop
            self.confirm_quit()
        elif self.which == "crash":
            self.push_screen(CrashScreen(Path("/tmp/runs/squared-20261122-001400"), TRACEBACK))

    def _sample_system(self) -> None:  # psutil numbers differ per machine: use fixed ones
        if isinstance(self.screen, DashboardScreen):
            self.screen.show_system(system_sample())

    def _watch_silence(self) -> None:  # no engine: nothing to ping
        pass


class FakeLink:
    def close(self) -> None:
        pass


TRACEBACK = """Traceback (most recent call last):
  File "/work/main/engine/process.py", line 121, in run
    row = self.trainer.run_epoch()
  File "/work/main/engine/trainer.py", line 204, in run_epoch
    stats = self.learner.update(data, lambda: self.config.train, self.global_step)
FloatingPointError: the policy's loss is NaN at step 163840 (learning rate 0.9 is far too high)
"""


def screen_text(app: PufferApp) -> str:
    strips = app.screen._compositor.render_strips()
    return "\n".join(strip.text.rstrip() for strip in strips) + "\n"


@pytest.fixture(autouse=True)
def no_plugin_envs(monkeypatch):
    """The launcher lists plugin envs of installed packages (CI installs the example one):
    the snapshots are of a machine without any."""
    for module in ("puffer_tui.envs.registry", "puffer_tui.envs.env_plugins"):
        monkeypatch.setattr(f"{module}.plugin_entry_points", lambda: {})


@pytest.fixture(autouse=True)
def utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.delenv("TZ")
    time.tzset()


SCREENS = ("launcher", "dashboard", "hyperparameters", "help", "render", "stop", "quit", "crash")
# 80x24 is the default terminal: every screen is designed for it first, then grows
SIZES = ((80, 24), (120, 40), (200, 60))


async def render_screen(screen: str, size: tuple[int, int], runs_root: Path) -> str:
    app = FixedDataApp(screen, runs_root=runs_root)
    async with app.run_test(size=size) as pilot:
        if screen == "launcher":
            deadline = time.monotonic() + 30
            while not (app.screen._infos and app.screen.query("#form")):
                assert time.monotonic() < deadline, "the launcher never filled its env list"
                await pilot.pause(0.05)
        else:
            dashboard = app.screen_stack[1]
            dashboard.show_system(system_sample())
            deadline = time.monotonic() + 30  # bounds a hang; a loaded machine only waits longer
            while not (dashboard.redraws >= 1
                       and dashboard._plotted_epochs == len(app.store.steps)):
                assert time.monotonic() < deadline, "the dashboard never drew the fixed data"
                await pilot.pause(0.05)
        # Let the panels' timers run once more (fast panels 4 Hz, plots 1 Hz).
        await pilot.pause(1.3)
        await pilot.wait_for_scheduled_animations()
        text = screen_text(app)
        app.link = None
    return text


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("screen", SCREENS)
async def test_screen_snapshot(screen, size, tmp_path):
    text = await render_screen(screen, size, tmp_path)
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
