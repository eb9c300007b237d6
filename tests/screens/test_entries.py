"""screens/launcher/entries.py: an env's entry and its line of spaces, a typed spec's entry,
the spec field's completions, and the focused field's text in full."""

from puffer_tui.engine.shared.config import spec_for
from puffer_tui.screens.launcher.entries import (
    SpecSuggester,
    env_option,
    env_spaces,
    field_text,
    typed_spec_info,
)


def test_a_built_in_env_is_bold_and_a_typed_spec_italic():
    built_in = env_option({"name": "squared"})
    typed = env_option(typed_spec_info("gym:CartPole-v1"))
    assert (built_in.id, str(built_in.prompt.style)) == ("squared", "bold")
    assert (typed.id, str(typed.prompt.style)) == ("gym:CartPole-v1", "italic")
    assert typed_spec_info("gym:CartPole-v1")["typed"] is True


def test_the_spaces_line_shows_spaces_once_they_are_known():
    info = {"name": "squared", "observation_space": "Box(121,) uint8",
            "action_space": "Discrete(5)"}
    assert env_spaces(info).plain == "squared  obs Box(121,) uint8  act Discrete(5)"
    assert env_spaces(typed_spec_info("gym:CartPole-v1")).plain == "gym:CartPole-v1"


async def test_completions_come_from_the_candidates_loaded_and_only_longer_ones():
    suggester = SpecSuggester()
    assert await suggester.get_suggestion("gym:cart") is None  # nothing loaded yet
    suggester.candidates = ["gym:CartPole-v1", "gym:CartPole-v0", "gym:Acrobot-v1"]
    # Textual hands a case-insensitive suggester the value casefolded
    assert await suggester.get_suggestion("gym:cart") == "gym:CartPole-v1"
    assert await suggester.get_suggestion("gym:acro") == "gym:Acrobot-v1"
    assert await suggester.get_suggestion("gym:cartpole-v1") is None  # typed whole already
    assert await suggester.get_suggestion("mod:") is None


def test_the_focused_field_in_full_says_help_bounds_and_live_or_the_error():
    live = field_text(spec_for("train.learning_rate"), "3e-4", None).plain
    assert live == "train.learning_rate = 3e-4\nAdam learning rate (float in [0, 1], live)"
    restart = field_text(spec_for("vec.num_envs"), "", None).plain
    assert restart.startswith("vec.num_envs = ''\n") and restart.endswith("1_000_000])")
    refused = field_text(spec_for("vec.num_envs"), "0", "must be >= 1")
    assert refused.plain == "vec.num_envs = 0\nmust be >= 1"
    assert any(str(span.style) == "bold red" for span in refused.spans)
