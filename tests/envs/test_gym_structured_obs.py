"""Structured Gymnasium observations through from_gymnasium: unencodable subspaces dropped
(named once), the flat rows carry the leaf layout (StructuredBox) for the policy."""

import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces

from puffer_tui.envs import gym_spaces
from puffer_tui.envs.gym_emulation import from_gymnasium
from puffer_tui.envs.gym_spaces import StructuredBox


class NotesEnv(gymnasium.Env):
    """Observes a position, a heading and two things no flat row holds (text, a sequence)."""

    observation_space = spaces.Dict({
        "note": spaces.Text(8),
        "pos": spaces.Box(0, 9, (2,), np.int64),
        "extra": spaces.Tuple((spaces.Discrete(3), spaces.Sequence(spaces.Discrete(2)))),
    })
    action_space = spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def _obs(self):
        return {"note": "hi", "pos": np.array([self.t, 9 - self.t]),
                "extra": (self.t % 3, (1, 0, 1))}

    def step(self, action):
        self.t += 1
        return self._obs(), 1.0, self.t >= 5, False, {}


def test_text_and_sequence_are_dropped_with_one_warning_and_the_rest_observed(monkeypatch):
    monkeypatch.setattr(gym_spaces, "_warned_drops", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        creator = from_gymnasium(NotesEnv)
        env = creator(num_envs=2, seed=0)
    dropped = [str(w.message) for w in caught if "dropped" in str(w.message)]
    assert len(dropped) == 1
    assert "note (Text)" in dropped[0] and "extra/1 (Sequence)" in dropped[0]
    space = env.single_observation_space
    assert isinstance(space, StructuredBox)
    # Gymnasium's Dict sorts its keys: extra/0 (one-hot of 3), then pos
    assert [(leaf.name, leaf.offset, leaf.size) for leaf in space.leaves] == [
        ("extra/0", 0, 3), ("pos", 3, 2)]
    obs, _ = env.reset(seed=0)
    env.step(np.zeros(2, np.int32))
    assert env.observations[0].tolist() == [0, 1, 0, 1, 8]
    back = env.unflatten_observations(env.observations[:1])
    assert set(back) == {"pos", "extra"} and back["pos"].tolist() == [[1, 8]]
    assert back["extra"][1] is None  # the dropped leaf has no value
    env.close()


def test_an_observation_with_nothing_left_is_refused_naming_what_was_dropped():
    class OnlyText(NotesEnv):
        observation_space = spaces.Dict({"note": spaces.Text(8)})

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"no elements to observe \(dropped: note\)"):
            from_gymnasium(OnlyText)
