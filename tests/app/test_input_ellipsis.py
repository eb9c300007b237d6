"""A field's value wider than its box ends in an ellipsis while the field is not being edited
(`multiprocessing` showed as `multiprocess`, as if that were the value); editing shows the
text itself."""

from __future__ import annotations

from textual.app import App
from textual.widgets import Input

from puffer_tui.app.widgets.ordered_input import OrderedInput
from tests.screens.test_app_snapshots import screen_text


class Fields(App):
    CSS = "OrderedInput { width: 12; } Input#other { width: 12; }"

    def compose(self):
        yield OrderedInput("multiprocessing", id="backend", compact=True)
        yield OrderedInput("serial", id="short", compact=True)
        yield Input("x", id="other", compact=True)


async def test_a_value_wider_than_its_field_ends_in_an_ellipsis():
    app = Fields()
    async with app.run_test(size=(40, 5)) as pilot:
        app.query_one("#other").focus()
        await pilot.pause(0.1)
        lines = screen_text(app).splitlines()
        assert lines[0].rstrip() == "multiproces…", lines[0]
        assert lines[1].rstrip() == "serial"
        app.query_one("#backend").focus()  # editing: the text itself, scrolled to the cursor
        await pilot.pause(0.1)
        assert "…" not in screen_text(app).splitlines()[0]
        app.query_one("#other").focus()
        await pilot.pause(0.1)
        assert screen_text(app).splitlines()[0].rstrip() == "multiproces…"
