"""One config field as an input row: name, value, help on one line, checked as you type.

The check is Textual's Validator over the schema's own FieldSpec.coerce (the rules the engine
applies), so the launcher's overrides and the live editor cannot disagree with the engine.

Tested in: tests/screens/test_app_editor.py, tests/app/test_help_text_markup.py
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.validation import ValidationResult, Validator
from textual.widgets import Input, Label, Static
from textual.widgets.input import Selection

from puffer_tui.app.widgets.ordered_input import OrderedInput
from puffer_tui.engine.shared.config import ConfigError, FieldSpec

VALUE_WIDTH = 12  # the value column, editable or not


def value_text(value) -> str:
    """A config value as a person would type it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


class FieldValidator(Validator):
    """Valid when the field's coerce accepts the text; the failure is coerce's own message."""

    def __init__(self, spec: FieldSpec):
        super().__init__()
        self.spec = spec

    def validate(self, value: str) -> ValidationResult:
        try:
            self.spec.coerce(value.strip())
        except ConfigError as e:
            return self.failure(str(e), value)
        return self.success()


class FieldInput(Horizontal):
    """`label` (cut to `label_width`), the value input, then `about`: one line, cut with an
    ellipsis when narrow. The input carries the "-invalid" class while its text is refused."""

    DEFAULT_CSS = """
    FieldInput { height: 1; }
    FieldInput .name { text-wrap: nowrap; text-overflow: ellipsis; }
    FieldInput Input { width: 12; background: $boost; }
    FieldInput Input.-invalid { color: $error; text-style: bold; }
    FieldInput .about { width: 1fr; padding-left: 1; color: $text-muted; text-wrap: nowrap;
                        text-overflow: ellipsis; }
    """

    def __init__(self, spec: FieldSpec, value, label: str, label_width: int, about: str,
                 input_id: str | None = None):
        super().__init__()
        self.spec = spec
        self.initial_text = value_text(value)
        self.label = label
        self.label_width = label_width
        self.about = about
        self.input_id = input_id
        self.validator = FieldValidator(spec)

    def compose(self) -> ComposeResult:
        # Names and help are text, not markup: "puffer-tui[ray]" keeps its brackets.
        name = Label(self.label, classes="name", markup=False)
        name.styles.width = self.label_width
        yield name
        # Ordered: backspaces and digits that arrive in one burst apply in the order typed.
        field = OrderedInput(id=self.input_id, compact=True, validators=[self.validator],
                             validate_on=("changed", "submitted"))
        # The text it starts with, without its watchers: given as `value`, an Input not yet
        # mounted styled itself to place its cursor, a cost the editor's and the launcher's
        # forms pay dozens of times. Cursor at the end, as `value` would put it.
        field.set_reactive(Input.value, self.initial_text)
        field.set_reactive(Input.selection, Selection.cursor(len(self.initial_text)))
        yield field
        yield Static(self.about, classes="about", markup=False)

    def on_mount(self) -> None:
        field = self.query_one(Input)
        field.validate(field.value)  # marked -invalid as a changed value would be

    @property
    def text(self) -> str:
        return self.query_one(Input).value.strip()

    def check(self) -> str | None:
        """The error for the current text, or None when it is valid."""
        result = self.validator.validate(self.text)
        return None if result.is_valid else result.failure_descriptions[0]
