"""The launcher's entries and texts (screens/launcher/screen.py): an env's line in the envs list and
its spaces, a typed spec's entry, the spec field's completions, the focused field in full."""

from __future__ import annotations

from rich.text import Text
from textual.suggester import Suggester
from textual.widgets.option_list import Option


def env_option(info: dict) -> Option:
    return Option(Text(info["name"], style="italic" if info.get("typed") else "bold"),
                  id=info["name"])


def env_spaces(info: dict) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(info["name"], "bold")
    if "observation_space" in info:  # a typed spec's spaces are known once its env is built
        text.append(f"  obs {info['observation_space']}  act {info['action_space']}", "dim")
    return text


def typed_spec_info(spec: str) -> dict:
    return {"name": spec, "typed": True,
            "description": "a spec typed below (recent); Enter trains it with this preset"}


class SpecSuggester(Suggester):
    """Completes a typed env spec from candidates filled in once they are loaded (loading
    Gymnasium's registry takes a moment, so it happens off the UI thread)."""

    def __init__(self):
        super().__init__(use_cache=False, case_sensitive=False)
        self.candidates: list[str] = []

    async def get_suggestion(self, value: str) -> str | None:
        for candidate in self.candidates:
            if candidate.casefold().startswith(value) and len(candidate) > len(value):
                return candidate
        return None


def field_text(spec, value: str, error: str | None) -> Text:
    """The focused field in full (its row may be cut at 80 columns): value, help, bounds."""
    text = Text()
    text.append(f"{spec.key} = ", "bold")
    text.append(value or "''", "bold yellow" if error else "bold")
    if error:
        text.append(f"\n{error}", "bold red")
    else:
        text.append(f"\n{spec.help} ({spec.bounds_text()}{', live' if spec.live else ''})")
    return text
