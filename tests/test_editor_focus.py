"""The hyperparameter editor has its first live field focused from the moment it is shown.

It used to focus the field a moment later (a callback queued from on_mount), and until then
the scroll area held the focus: a Tab typed as soon as the editor appeared moved to the first
field, and the digits meant for the second field went into the first (seen in the tmux test
under load).
"""

from __future__ import annotations

from test_app_keys import OfflineApp
from test_editor_typing import burst
from textual.widgets import Input

from puffer_tui.screens.hyperparameters import HyperparameterScreen


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
