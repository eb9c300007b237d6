"""The hyperparameter editor, generated from the schema the engine sent in its hello.

Live fields are editable: each keystroke is checked against the field's type and bounds
(the same FieldSpec.coerce the engine uses), Enter sends the text in a `set` only when that
check passed (the engine checks it once more at its door, the one check that types it), and
the engine's reply (with when the value applies, in the engine's own words) is shown
under the field. Other fields are read-only: they are fixed when a run starts.

Tested in: tests/screens/test_app_editor.py, tests/screens/test_editor_focus.py,
tests/screens/test_editor_refusals.py, tests/screens/test_editor_typing.py
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Label, Static

from puffer_tui.app import link_messages as lm
from puffer_tui.app.telemetry_store import TelemetryStore
from puffer_tui.app.widgets.field_input import VALUE_WIDTH, FieldInput, value_text
from puffer_tui.engine.shared.config import SECTIONS, FieldSpec
from puffer_tui.engine.shared.protocol import schema_from_wire


def current_values(store: TelemetryStore) -> dict:
    """`section.name` -> value: live values from telemetry over the config from hello."""
    values = {}
    config = store.hello.get("config") or {}
    for section in SECTIONS:
        for name, value in (config.get(section) or {}).items():
            values[f"{section}.{name}"] = value
    if store.latest is not None:
        values.update(store.latest.hyperparameters)
    return values


def name_width(specs: list[FieldSpec]) -> int:
    """The name column fits the longest key (the value column then lines up for every row)."""
    return min(max((len(s.key) for s in specs), default=10) + 2, 32)


class FieldRow(Vertical):
    """One live field: its input row (key, value, bounds/help); the latest verdict below it."""

    DEFAULT_CSS = """
    FieldRow { height: auto; }
    FieldRow .verdict { height: auto; display: none; }
    FieldRow .verdict.-shown { display: block; }
    """

    def __init__(self, spec: FieldSpec, value, key_width: int):
        super().__init__(id=f"row-{spec.section}-{spec.name}")
        self.spec = spec
        self.input_row = FieldInput(spec, value, spec.key, key_width,
                                f"{spec.help} ({spec.bounds_text()})",
                                input_id=f"input-{spec.section}-{spec.name}")
        self.key_width = key_width

    def compose(self) -> ComposeResult:
        yield self.input_row  # the verdict line is added by the first verdict (one widget
        # fewer a row while the editor opens)

    def verdict(self) -> Static:
        """The verdict line under the field, made on first use."""
        found = self.query(".verdict")
        if found:
            return found.first(Static)
        verdict = Static("", classes="verdict")
        verdict.styles.padding = (0, 0, 0, self.key_width)
        self.mount(verdict)
        return verdict


class HyperparameterScreen(Screen):
    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]
    # Open ready to type: the first live field has the focus as soon as the screen is
    # composed. (Focusing it from on_mount was a queued callback: keys typed before it ran
    # went to the scroll area, so a quick Tab landed on the first field, not the second.)
    AUTO_FOCUS = "FieldRow Input"

    def __init__(self, store: TelemetryStore, link_state: str | None = None):
        super().__init__()
        self.store = store
        self.link_state = link_state  # kept current by LinkStateChanged
        self.specs = schema_from_wire(store.hello.get("schema"))
        self.key_width = name_width(self.specs)
        self._restoring: set[str] = set()  # fields whose refused text is being replaced

    def compose(self) -> ComposeResult:
        yield Static("Enter sends the field's value to the engine; escape goes back",
                     id="status")
        values = current_values(self.store)
        with VerticalScroll():
            if not self.specs:
                yield Label("The engine has not sent its schema yet (not connected?).")
            yield Label("Live: change while training (the engine says when each applies)",
                        classes="section")
            for spec in self.specs:
                if spec.live:
                    yield FieldRow(spec, values.get(spec.key, spec.default), self.key_width)
            yield Label("Fixed for this run: change them in a branch from its checkpoint "
                        "(puffer-tui train --from RUN --section.name V, or b on the run in "
                        "the launcher)", classes="section")
            # the fixed fields in one widget, a line each: one Static per field (~60) was
            # most of the time `h` took to show the editor
            fixed = [self._readonly_line(spec, values.get(spec.key, spec.default))
                     for spec in self.specs if not spec.live]
            if fixed:
                yield Static(Text("\n").join(fixed), classes="readonly")
        yield Footer()

    def on_mount(self) -> None:
        # Auto focus can find no field yet (they mount after the screen composes, late on a
        # busy machine): then the first field gets the focus here, at once.
        if not isinstance(self.focused, Input):
            self._focus_first_field()

    def _focus_first_field(self) -> bool:
        fields = self.query("FieldRow Input")
        if fields:
            self.set_focus(fields.first())
        return bool(fields)

    def focus_next(self, selector="*"):
        # The editor starts on its first field: a Tab pressed before that field had the focus
        # (the screen just opened) moves from it to the second, as it would a moment later.
        if not isinstance(self.focused, Input):
            self._focus_first_field()
        return super().focus_next(selector)

    def _readonly_line(self, spec: FieldSpec, value) -> Text:
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(f"{spec.key:<{self.key_width}.{self.key_width}}")
        line.append(f"{value_text(value):<{VALUE_WIDTH}}", "bold")
        line.append(f" {spec.help}", "dim")
        return line

    def _row(self, widget) -> FieldRow:
        return next(a for a in widget.ancestors if isinstance(a, FieldRow))

    def on_input_changed(self, event: Input.Changed) -> None:
        # The Input has validated the text with its row's FieldValidator and marked itself.
        if (key := self._row(event.input).spec.key) in self._restoring:
            self._restoring.discard(key)  # the value in force, put back after a refusal
            return
        result = event.validation_result
        error = "" if result is None or result.is_valid else result.failure_descriptions[0]
        self._verdict(self._row(event.input), error, "red" if error else "")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        row = self._row(event.input)
        result = event.validation_result  # the row's FieldValidator, on the submitted text
        if result is not None and not result.is_valid:
            # Refused here: nothing is sent to the engine.
            self._refused(row, event.value.strip(), result.failure_descriptions[0], "not sent")
            return
        if not lm.can_steer(self.link_state, self.store.state):
            # the run ended (or the link is gone) under the editor
            text = f"not sent: the run is {self.link_state or self.store.state}"
            self._verdict(row, text, "bold red")
            self.query_one("#status", Static).update(Text(text, style="red"))
            return
        self._verdict(row, "sending...", "yellow")
        # The text as typed: the engine checks it once (protocol.check_live) and replies
        # with the typed value it applied.
        self.post_message(lm.EngineRequest("set", {"key": row.spec.key,
                                                   "value": event.value.strip()}, reply_to=self))

    @on(lm.LinkStateChanged)
    def _on_link_state(self, message: lm.LinkStateChanged) -> None:
        self.link_state = message.state

    @on(lm.Replied)
    def _on_replied(self, message: lm.Replied) -> None:
        """The engine's answer to a `set` sent from a field here."""
        reply, key = message.reply, (message.args or {}).get("key")
        rows = [r for r in self.query(FieldRow) if r.spec.key == key]
        if message.cmd != "set" or not rows:
            return
        if reply.get("ok"):
            text = f"engine: {reply.get('key')} = {reply.get('value')}; {reply.get('applies', '')}"
            self._verdict(rows[0], text, "green")
        else:
            self._refused(rows[0], str((message.args or {}).get("value", "")),
                          str(reply.get("error")), "engine refused")
            return
        self.query_one("#status", Static).update(text)

    def _refused(self, row: FieldRow, typed: str, error: str, who: str) -> None:
        """A refused value leaves the field: it shows the value in force again (a refused one
        left there would read as applied), and the verdict says what was refused and why."""
        current = current_values(self.store).get(row.spec.key, row.spec.default)
        kept = value_text(current)
        field = row.query_one(Input)
        if field.value != kept:
            self._restoring.add(row.spec.key)  # its Changed must not clear the verdict
            field.value = kept
        text = f"{who}: {typed!r} ({error}); {row.spec.key} stays {kept}"
        self._verdict(row, text, "bold red")
        self.query_one("#status", Static).update(Text(text, style="red"))

    @staticmethod
    def _verdict(row: FieldRow, text: str, style: str) -> None:
        if not text and not row.query(".verdict"):
            return  # nothing to say, and nothing said before
        verdict = row.verdict()
        verdict.update(Text(text, style=style))
        verdict.set_class(bool(text), "-shown")
