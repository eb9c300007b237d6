"""The dashboard's `A` key turns the doctor's autopilot on and off (a live `set` of
train.autopilot), and the header says "autopilot" while the engine reports it on."""

from __future__ import annotations

from app_fakes import push, telemetry

from puffer_tui.app.widgets.run_header import RunHeader
from tests.screens.test_app_keys import OfflineApp
from tests.screens.test_diagnosis_app import settle


def header_text(app) -> str:
    return str(app.screen.query_one(RunHeader).render())


async def test_a_turns_the_autopilot_on_then_off_and_the_header_shows_it():
    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        push(app, telemetry(3))
        await settle(pilot, app, lambda: "epoch 3" in header_text(app), "telemetry")
        assert "autopilot" not in header_text(app)
        await pilot.press("A")
        await pilot.pause(0.1)
        assert app.sent[-1] == ("set", {"key": "train.autopilot", "value": True})
        push(app, {**telemetry(4), "hyperparameters": {"train.autopilot": True}})
        await settle(pilot, app, lambda: "autopilot" in header_text(app), "the header's mark")
        await pilot.press("A")
        await pilot.pause(0.1)
        assert app.sent[-1] == ("set", {"key": "train.autopilot", "value": False})
