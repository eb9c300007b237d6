"""Keys applied in the order they were pressed, at a focusable widget that is not an input.

Textual forwards each key to the widget that has the focus when the app reads it, and runs a
binding (tab: focus the next widget; down; enter) only once the key has bubbled back up to the
app through every ancestor's message queue. Keys read together (one terminal read, or a
served page's websocket messages while the app is busy) are then forwarded before the first
one's binding has run: a Tab pressed in the launcher's env list moved the focus to the spec
field only after the characters typed behind it had reached the env list, which dropped them
(in `puffer-tui serve`: "a lone Tab takes effect only with the next key").

`OrderedKeys` runs the binding of a key where the key arrives (the focused widget's binding
chain, as the app would), and hands a key that arrives after the focus has moved on to the
widget that has it now. app/widgets/ordered_input.py's input is one, for its editing keys.

Tested in: tests/screens/test_tab_order.py, tests/app/test_serve_tab.py
"""

from __future__ import annotations

from textual import events
from textual.widgets import OptionList


class OrderedKeys:
    """Mix in before the widget class: `class EnvList(OrderedKeys, OptionList)`."""

    async def _on_key(self, event: events.Key) -> None:
        # Textual calls every class's _on_key along the MRO: the widget's own one runs after
        focused = self.screen.focused
        if focused is not None and focused is not self:
            # queued here behind a key that moved the focus: it goes where the focus is now
            event.stop()
            event.prevent_default()
            focused._forward_event(events.Key(event.key, event.character))
            return
        if self._binds_here(event) and await self._run_binding_here(event.key):
            event.stop()  # done: it must not run a second time when it reaches the app

    def _binds_here(self, event: events.Key) -> bool:
        """Whether this widget runs `event`'s binding itself (an input leaves printable
        characters to its own insertion)."""
        return True

    async def _run_binding_here(self, key: str) -> bool:
        """The binding for `key` as the app would run it once the key reached it: the focused
        widget's first, then its ancestors' up to the app's (the keymap applied); priority
        bindings were run before the key was forwarded here."""
        chain = self.screen._modal_binding_chain
        if not chain or chain[0][0] is not self:
            return False  # not the focused widget: the app resolves the key as usual
        for namespace, bindings in chain:
            for binding in bindings.key_to_bindings.get(key, ()):
                if not binding.priority and await self.app.run_action(binding.action,
                                                                      namespace):
                    return True
        return False


class OrderedOptionList(OrderedKeys, OptionList):
    """An OptionList whose keys apply in order (the launcher's env list)."""
