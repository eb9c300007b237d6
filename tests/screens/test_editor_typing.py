"""Keys that arrive together (tmux send-keys, a fast typist on a busy app) edit a field in the
order they were pressed: a backspace typed before digits never deletes those digits.

Textual inserts a typed character at the input itself but runs a bound key (backspace,
arrows, enter) only once its event has bubbled up to the app, so a burst used to come out
reordered (`500000` after clearing showed `5000`, or nothing at all).
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input

from puffer_tui.screens.hyperparameters import HyperparameterScreen
from tests.screens.test_app_editor import RecordingLauncher
from tests.screens.test_app_keys import OfflineApp
from tests.screens.test_app_launcher import form_ready

KEY_NAMES = {".": "full_stop", "-": "minus", "e": "e"}


def burst(app, *keys: str) -> None:
    """Post every key to the app at once, as a terminal read of several bytes does: a
    one-character string is typed, a longer one is a key name (backspace, left, enter)."""
    for key in keys:
        if len(key) == 1:
            app.post_message(events.Key(KEY_NAMES.get(key, key), key))
        else:
            app.post_message(events.Key(key, None))


async def test_a_burst_of_backspaces_then_digits_keeps_every_digit():
    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("h")
        await pilot.pause(0.2)
        assert isinstance(app.screen, HyperparameterScreen)
        field = app.focused
        assert isinstance(field, Input) and field.value == "0.015"
        burst(app, "end", *["backspace"] * 8, *"0.25")
        await pilot.pause(0.3)
        assert field.value == "0.25"
        burst(app, "backspace", "backspace", *"5", "left", *"1")  # 0.25 -> 0.5 -> 0.15
        await pilot.pause(0.3)
        assert field.value == "0.15"


async def test_enter_in_a_burst_sends_the_text_typed_before_it():
    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("h")
        await pilot.pause(0.2)
        burst(app, "end", *["backspace"] * 8, *"0.5", "enter", "backspace")
        await pilot.pause(0.3)
        assert app.sent == [("set", {"key": "train.learning_rate", "value": "0.5"})]  # as typed
        assert app.focused.value == "0."  # the backspace after enter came last


async def test_a_burst_in_a_launcher_field_keeps_its_order(tmp_path):
    app = RecordingLauncher(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        while not form_ready(app):
            await pilot.pause(0.05)
        field = next(i for i in app.screen.query("OverrideRow Input")
                     if i.parent.spec.key == "vec.num_envs")
        field.focus()
        await pilot.pause(0.1)
        burst(app, "end", *["backspace"] * 8, *"128")
        await pilot.pause(0.3)
        assert field.value == "128"
        assert app.started == []
