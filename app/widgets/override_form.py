"""An editable form over a config: one compact input per schema field, checked as you type.

The launcher uses it for a new run's overrides: the preset's values are filled in, and only
fields whose text differs from the preset are returned as overrides.

Tested in: tests/screens/test_app_launcher.py, tests/screens/test_launcher_form_switch.py,
tests/screens/test_branch_form.py
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Input, Label, Static

from puffer_tui.app.widgets.field_input import FieldInput
from puffer_tui.engine.shared.config import ConfigError, FieldSpec


class OverrideRow(FieldInput):
    """A new run's field: its name within its section (the section is the heading above),
    the preset's value, help with bounds; "-changed" marks text that differs from the preset."""

    DEFAULT_CSS = """
    OverrideRow Input.-changed { color: $text-warning; }
    """

    def __init__(self, spec: FieldSpec, preset_value, name_width: int = 24):
        live = ", live" if spec.live else ""
        super().__init__(spec, preset_value, spec.name, name_width,
                         f"{spec.help} ({spec.bounds_text()}{live})")
        self.preset_text = self.initial_text


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
        self.ready = False  # every row composed, its input in place (on_mount)
        self.preset = preset  # "section.name" -> value

    def on_mount(self) -> None:
        # Textual mounts the composed rows (and theirs) before this: the form is whole
        self.ready = True

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
        error = row.check()  # the Input itself has set "-invalid" from the same validator
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
