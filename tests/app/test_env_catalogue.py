"""app/services/env_catalogue.py: the envs as the launcher lists them, spaces in a few
characters, a broken env listed with why, and the spec field's completions."""

import numpy as np
from gymnasium import spaces

from puffer_tui.app.services import env_catalogue
from puffer_tui.envs import ENV_NAMES, env_names


def test_spaces_in_a_few_characters():
    assert env_catalogue.space_text(spaces.Box(0, 2, (121,), np.uint8)) == "Box(121,) uint8"
    assert env_catalogue.space_text(spaces.Discrete(5)) == "Discrete(5)"
    assert env_catalogue.space_text(spaces.MultiDiscrete([3, 3])) == "MultiDiscrete[3 3]"
    other = spaces.MultiBinary(4)
    assert env_catalogue.space_text(other) == str(other)


def test_an_env_is_described_by_its_default_settings():
    info = env_catalogue.describe_env("squared")
    assert set(info) == {"name", "description", "observation_space", "action_space"}
    assert info["name"] == "squared" and info["description"]
    assert info["observation_space"].startswith("Box(")
    assert info["action_space"] == "Discrete(5)"


def test_an_env_that_fails_to_load_is_listed_with_why_and_the_others_still_are(monkeypatch):
    describe = env_catalogue.describe_env

    def broken_bandit(name):
        if name == "bandit":
            raise ImportError("no module named bandit.binding")
        return describe(name)

    monkeypatch.setattr(env_catalogue, "describe_env", broken_bandit)
    infos = {info["name"]: info for info in env_catalogue.describe_envs()}
    assert list(infos) == list(env_names())
    assert infos["bandit"] == {"name": "bandit",
                               "description": "unavailable: no module named bandit.binding",
                               "observation_space": "?", "action_space": "?"}
    assert infos["squared"]["action_space"] == "Discrete(5)"


def test_completions_offer_gymnasium_ids_the_newest_version_first():
    suggestions = env_catalogue.spec_suggestions()
    assert not set(suggestions) & set(ENV_NAMES)  # the built-ins are listed already
    assert all(s.startswith("gym:") for s in suggestions
               if s not in env_names())  # plugins, then gym: ids
    assert suggestions.index("gym:CartPole-v1") < suggestions.index("gym:CartPole-v0")
    assert suggestions.index("gym:Acrobot-v1") < suggestions.index("gym:CartPole-v1")
