"""An Input whose editing keys keep their place among the characters typed around them, and
whose value, when wider than the box and not being edited, ends in an ellipsis.

Textual's Input inserts a typed character as soon as its Key event reaches the input, but a
bound key (backspace, delete, arrows, home/end, enter) runs only after its event has bubbled
up to the app, through the message queue of every ancestor. Keys that arrive together (a
terminal read of several bytes: tmux send-keys, a paste without bracketing, a fast typist on
an app busy with telemetry) then apply out of order: backspaces pressed before `500000` land
after it and eat its zeros. Here the input runs its own bindings where the character would
be inserted, so every key applies in the order it was pressed (Textual issue #6605), through
app/widgets/ordered_keys.py, as the launcher's lists do.

Tested in: tests/app/test_input_ellipsis.py, tests/app/test_serve_tab.py
"""

from __future__ import annotations

from textual import events
from textual.strip import Strip
from textual.widgets import Input

from puffer_tui.app.widgets.ordered_keys import OrderedKeys


class OrderedInput(OrderedKeys, Input):
    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if y != 0 or self.has_focus or self._value.cell_len <= width:
            return super().render_line(y)
        # Not being edited and wider than the box: its start, then an ellipsis (cut anywhere
        # else, `multiprocessing` read as another value, `multiprocess` or `iprocessing`).
        text = self._value.copy()
        text.truncate(max(width, 1), overflow="ellipsis")
        options = self.app.console_options.update_width(width + 1)
        strip = Strip(list(self.app.console.render(text, options)))
        return strip.extend_cell_length(width + 1).apply_style(self.rich_style)

    def _binds_here(self, event: events.Key) -> bool:
        # printable characters are Input's own to insert (its _on_key runs after
        # OrderedKeys' along the MRO); its editing keys and tab run here, in order
        return not event.is_printable
