"""The dashboard of a run whose engine is only starting (no hello yet) names the run and its
env from the run's own directory, not `?`."""

from __future__ import annotations

from puffer_tui.app.app import PufferApp
from puffer_tui.app.telemetry_store import TelemetryStore
from puffer_tui.app.widgets.run_header import RunHeader
from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.screens.dashboard import DashboardScreen


class StartingApp(PufferApp):
    def __init__(self, run_dir):
        super().__init__(runs_root=run_dir.parent)
        self.run_dir = run_dir

    def show_first_screen(self) -> None:
        self.push_screen(DashboardScreen(TelemetryStore(), "starting engine"))


async def test_the_header_names_the_run_before_the_engine_says_hello(tmp_path):
    run = rd.create_run_dir("cartpole", tmp_path)
    cfg.save(cfg.load_config("cartpole"), run / rd.CONFIG_FILE)
    app = StartingApp(run)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
        header = app.screen.query_one(RunHeader)
        top = header.render().plain.splitlines()[0]
        assert run.name in top and "starting engine" in top, top
        assert "?" not in top, top


def test_an_unknown_env_with_a_known_run_shows_the_run_alone():
    header = RunHeader()
    header.identity = {"run": "cartpole-20261201-220000"}
    assert header.render().plain.splitlines()[0].startswith("cartpole-20261201-220000")
