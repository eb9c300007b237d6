"""An editable form over a config: one compact input per schema field, checked as you type.

The launcher uses it for a new run's overrides: the preset's values are filled in, and only
fields whose text differs from the preset are returned as overrides.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Input, Label, Static

from puffer_tui.engine.config import ConfigError, FieldSpec


def value_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


class OverrideRow(Horizontal):
    """name (within its section), value, help: one line, cut with an ellipsis when narrow."""

    DEFAULT_CSS = """
    OverrideRow { height: 1; }
    OverrideRow .name { text-wrap: nowrap; text-overflow: ellipsis; }
    OverrideRow Input { width: 12; background: $boost; }
    OverrideRow Input.-invalid { color: $error; text-style: bold; }
    OverrideRow Input.-changed { color: $text-warning; }
    OverrideRow .about { width: 1fr; padding-left: 1; color: $text-muted; text-wrap: nowrap;
                         text-overflow: ellipsis; }
    """

    def __init__(self, spec: FieldSpec, preset_value, name_width: int = 24):
        super().__init__()
        self.spec = spec
        self.preset_text = value_text(preset_value)
        self.name_width = name_width

    def compose(self) -> ComposeResult:
        name = Label(self.spec.name, classes="name")  # the section is the heading above
        name.styles.width = self.name_width
        yield name
        yield Input(self.preset_text, compact=True)
        yield Static(self.about(), classes="about")

    def about(self) -> str:
        live = ", live" if self.spec.live else ""
        return f"{self.spec.help} ({self.spec.bounds_text()}{live})"

    @property
    def text(self) -> str:
        return self.query_one(Input).value.strip()

    def check(self) -> str | None:
        """The error for the current text, or None when it is valid."""
        try:
            self.spec.coerce(self.text)
        except ConfigError as e:
            return str(e)
        return None


class OverrideForm(VerticalScroll):
    """Shows `specs` with `preset` values; `overrides()` gives what the person changed."""

    DEFAULT_CSS = """
    OverrideForm { height: 1fr; }
    OverrideForm .section { text-style: bold; color: $text-accent; }
    OverrideForm #form-error { color: $error; height: auto; }
    """

    def __init__(self, specs: list[FieldSpec], preset: dict, env_name: str = "", **kwargs):
        super().__init__(**kwargs)
        self.env_name = env_name
        self.specs = specs
        self.preset = preset  # "section.name" -> value

    def compose(self) -> ComposeResult:
        error = Static("", id="form-error")
        error.display = False
        yield error
        width = max((len(s.name) for s in self.specs), default=10) + 1
        section = None
        for spec in self.specs:
            if spec.section != section:
                section = spec.section
                yield Label(Text(f"[{section}]"), classes="section")  # not markup
            yield OverrideRow(spec, self.preset.get(spec.key, spec.default), width)

    def on_input_changed(self, event: Input.Changed) -> None:
        row = next(a for a in event.input.ancestors if isinstance(a, OverrideRow))
        error = row.check()
        event.input.set_class(error is not None, "-invalid")
        event.input.set_class(error is None and row.text != row.preset_text, "-changed")
        self.show_error(error or "")

    def show_error(self, text: str) -> None:
        error = self.query_one("#form-error", Static)
        error.update(Text(text, style="bold red"))
        error.display = bool(text)

    def overrides(self) -> dict[str, str]:
        """Changed fields as text; ConfigError naming the first invalid one."""
        out = {}
        for row in self.query(OverrideRow):
            error = row.check()
            if error:
                raise ConfigError(error)
            if row.text != row.preset_text:
                out[row.spec.key] = row.text
        return out
