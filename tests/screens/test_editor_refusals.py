"""The hyperparameter editor at 80x24: a refused value (by the field's check or by the
engine) does not stay in its field reading as applied: the value in force comes back and
the verdict says what was refused; the status line wraps rather than cuts the answer."""

from __future__ import annotations

from textual.widgets import Input, Static

from puffer_tui.app import link_messages as lm
from puffer_tui.screens.hyperparameters import HyperparameterScreen
from tests.screens.test_app_keys import OfflineApp
from tests.screens.test_app_snapshots import screen_text


async def _editor(pilot, app) -> Input:
    await pilot.press("h")
    await pilot.pause(0.2)
    assert isinstance(app.screen, HyperparameterScreen)
    field = app.focused
    assert isinstance(field, Input) and field.value == "0.015"
    return field


async def test_a_value_refused_by_its_check_gives_way_to_the_value_in_force():
    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        field = await _editor(pilot, app)
        field.value = "7"  # above the bound of 1
        await pilot.pause(0.1)
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert app.sent == []
        assert field.value == "0.015"
        text = screen_text(app)
        assert "'7'" in text and "stays 0.015" in text, text


async def test_an_engine_refusal_restores_the_field_and_a_long_answer_wraps():
    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        field = await _editor(pilot, app)
        field.value = "0.9"
        await pilot.pause(0.1)
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert app.sent == [("set", {"key": "train.learning_rate", "value": "0.9"})]
        error = ("train.learning_rate = 0.9 is refused by this run: it would make the whole "
                 "config inconsistent with its schedule, which ends at step 2,000,000")
        app.screen.post_message(lm.Replied("set", {"key": "train.learning_rate", "value": "0.9"},
                                           {"ok": False, "error": error}))
        await pilot.pause(0.3)
        assert field.value == "0.015"
        status = app.screen.query_one("#status", Static)
        assert status.outer_size.height >= 2  # wrapped, whole
        text = " ".join(screen_text(app).split())
        assert "ends at step 2,000,000" in text and "stays 0.015" in text, text
