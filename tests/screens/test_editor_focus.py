"""The hyperparameter editor has its first live field focused from the moment it is shown.

It used to focus the field a moment later (a callback queued from on_mount), and until then
the scroll area held the focus: a Tab typed as soon as the editor appeared moved to the first
field, and the digits meant for the second field went into the first (seen in the tmux test
under load).
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input

from puffer_tui.screens.hyperparameters import HyperparameterScreen
from tests.screens.test_app_keys import OfflineApp
from tests.screens.test_editor_typing import burst


def _field(app, key: str) -> Input:
    section, name = key.split(".")
    return app.screen.query_one(f"#input-{section}-{name}", Input)


async def test_keys_right_after_the_editor_opens_go_to_the_field_tab_reaches():
    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        burst(app, "h", "tab")  # Tab right behind the key that opens the editor
        await pilot.pause(0.3)
        await pilot.press("end", "9")
        assert isinstance(app.screen, HyperparameterScreen)
        first, second = [s.key for s in app.screen.specs if s.live][:2]
        assert app.focused is _field(app, second), app.focused
        assert _field(app, second).value.endswith("9")
        assert not _field(app, first).value.endswith("9")


async def test_the_first_live_field_has_the_focus_as_soon_as_the_editor_is_composed():
    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.1)
        screen = HyperparameterScreen(app.store)
        await app.push_screen(screen)  # mounted: no callback has run since
        first = next(s.key for s in screen.specs if s.live)
        assert screen.focused is _field(app, first), screen.focused


async def test_the_first_field_is_focused_even_when_the_terminal_reports_no_focus():
    """A terminal can report that it lost the focus (tmux does for a session no client is
    looking at): Textual's auto focus then does nothing, and the editor focuses its first
    field itself, at once."""
    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        app.post_message(events.AppBlur())
        await pilot.pause(0.1)
        assert not app.app_focus
        burst(app, "h", "tab")
        await pilot.pause(0.3)
        await pilot.press("end", "9")
        first, second = [s.key for s in app.screen.specs if s.live][:2]
        assert app.focused is _field(app, second), app.focused
        assert _field(app, second).value.endswith("9")
        assert not _field(app, first).value.endswith("9")


async def test_a_tab_before_any_field_has_the_focus_moves_to_the_second_field():
    """On a busy machine the fields can mount after the screen looked for one to focus: a
    Tab that comes first still goes from the first field to the second."""
    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("h")
        await pilot.pause(0.2)
        screen = app.screen
        screen.set_focus(None)  # as if no field had been found to focus yet
        await pilot.press("tab", "end", "9")
        first, second = [s.key for s in screen.specs if s.live][:2]
        assert app.focused is _field(app, second), app.focused
        assert _field(app, second).value.endswith("9")
        assert not _field(app, first).value.endswith("9")


async def test_a_tab_and_digits_in_one_burst_apply_in_order():
    """Tab is the screen's key, not the field's: it used to apply once its event had bubbled
    up to the app, after the digits typed behind it were already in the first field (the tmux
    test's "total_timesteps 99" under load)."""
    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("h")
        await pilot.pause(0.2)
        first, second = [s.key for s in app.screen.specs if s.live][:2]
        before = _field(app, first).value
        burst(app, "tab", "end", *"99")
        await pilot.pause(0.3)
        assert _field(app, first).value == before
        assert app.focused is _field(app, second) and _field(app, second).value.endswith("99")
        burst(app, "shift+tab", "end", "7")  # and back
        await pilot.pause(0.3)
        assert _field(app, first).value == before + "7"
