"""One duration format (app/widgets/format.py `duration`) for the dashboard, the headless
display and the runs listing."""

import os

from puffer_tui.app.commands import runs
from puffer_tui.app.headless_display import render
from puffer_tui.app.widgets.format import duration
from puffer_tui.engine.shared.protocol import TelemetrySnapshot


def test_clock_and_coarse_forms():
    assert duration(65) == "0:01:05"
    assert duration(49 * 3600) == "2d01h"
    assert duration(float("nan")) == "-" and duration(-5) == "0:00:00"
    assert duration(42, coarse=True) == "42s"
    assert duration(3725, coarse=True) == "1h"
    assert duration(3 * 86400, coarse=True) == "3d"
    assert duration(None, coarse=True) == "-"


def test_the_headless_panel_shows_uptime_and_eta_as_the_dashboard_does():
    from rich.console import Console

    console = Console(width=120, record=True)
    console.print(render(TelemetrySnapshot.from_wire({"state": "running", "uptime": 3725, "eta": 65,
                                                      "global_step": 10, "total_timesteps": 100})))
    text = console.export_text()
    assert duration(3725) in text and duration(65) in text


def test_the_runs_listing_says_how_old_a_checkpoint_is(tmp_path):
    path = tmp_path / "step-000000004096-epoch-00000004.pt"
    path.write_bytes(b"")
    hour_ago = path.stat().st_mtime - 3 * 3600
    os.utime(path, (hour_ago, hour_ago))
    assert runs._saved(path) == ("4.1k", "3h ago")


def test_a_finished_run_shows_its_mean_sps_not_the_zero_of_an_idle_engine():
    from rich.console import Console

    def shown(state, sps):  # the engine's numbers: SPS now, and the mean over the run
        console = Console(width=120, record=True)
        console.print(render(TelemetrySnapshot.from_wire({
            "state": state, "uptime": 10.0, "sps": sps, "sps_mean": 200_000.0,
            "global_step": 2_000_000, "total_timesteps": 2_000_000})))
        return console.export_text()

    assert "200,000 mean" in shown("finished", 0.0)
    assert "200,000 mean" in shown("stopped", 0.0)
    running = shown("running", 180_000.0)
    assert "180,000" in running and "mean" not in running
