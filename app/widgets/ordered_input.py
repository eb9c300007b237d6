"""An Input whose editing keys keep their place among the characters typed around them, and
whose value, when wider than the box and not being edited, ends in an ellipsis.

Textual's Input inserts a typed character as soon as its Key event reaches the input, but a
bound key (backspace, delete, arrows, home/end, enter) runs only after its event has bubbled
up to the app, through the message queue of every ancestor. Keys that arrive together (a
terminal read of several bytes: tmux send-keys, a paste without bracketing, a fast typist on
an app busy with telemetry) then apply out of order: backspaces pressed before `500000` land
after it and eat its zeros. Here the input runs its own bindings where the character would
be inserted, so every key applies in the order it was pressed (Textual issue #6605).
"""

from __future__ import annotations

from textual import events
from textual.strip import Strip
from textual.widgets import Input


class OrderedInput(Input):
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

    async def _on_key(self, event: events.Key) -> None:
        # Input._on_key runs after this one (the MRO) and inserts printable characters.
        focused = self.screen.focused
        if focused is not self and focused is not None:
            # Queued here behind a key that moved the focus (tab, then digits in one read):
            # it goes where the focus is now, as it would have had it come a moment later.
            event.stop()
            event.prevent_default()
            focused._forward_event(events.Key(event.key, event.character))
            return
        if not event.is_printable and await self._run_own_binding(event.key):
            event.stop()  # done: it must not run a second time when it reaches the app

    async def _run_own_binding(self, key: str) -> bool:
        """Run the binding for `key` as the app would once the event reached it, here and now:
        the focused widget's bindings come first in the chain (the keymap applied), then its
        ancestors' up to the app's (tab and shift+tab move the focus: typed before digits,
        they must move it before the digits land); priority bindings have already been
        checked before the key was forwarded here."""
        chain = self.screen._modal_binding_chain
        if not chain or chain[0][0] is not self:
            return False  # not the focused input: the app resolves the key as usual
        for namespace, bindings in chain:
            for binding in bindings.key_to_bindings.get(key, ()):
                if not binding.priority and await self.app.run_action(binding.action,
                                                                      namespace):
                    return True
        return False
