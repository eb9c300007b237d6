"""A Python env's own numbers in its episode-end info are logged as a C env's log fields
are: averaged per epoch into the row's env group (env/<key> for TensorBoard and W&B, a
metrics.jsonl column, a line of the episodes panel, a sweep metric); values that are not
numbers are named once and dropped."""

from __future__ import annotations

import numpy as np
import pytest
from slow_env import make_env

from puffer_tui.engine.algo import episode_log
from puffer_tui.engine.algo.episode_log import EpisodeLog
from puffer_tui.engine.native.pufferenv import IGNORED
from puffer_tui.envs.gym_emulation import episode_fields, from_gymnasium


def _logs(env, steps: int) -> list[dict]:
    env.reset(0)
    infos = []
    for _ in range(steps):
        infos += env.step(np.zeros(env.num_agents, np.int32))[4]
    return infos


def test_the_numbers_of_the_episode_end_info_are_logged_and_the_rest_named_once():
    creator = from_gymnasium(make_env, reset_seconds=0.0, episode_steps=4, info_fields=True,
                             log_interval=8)
    env = creator(num_envs=2, seed=0)
    try:
        logs = _logs(env, 32)  # 8 episodes an env, a log every 8 steps
    finally:
        env.close()
    assert len(logs) == 4 and all(log["n"] == 4 for log in logs)
    first = logs[0]
    # is_success (a bool) as 0 or 1, a numpy float, a number one level down in a dict
    assert first["is_success"] == pytest.approx(0.5) and first["distance"] == 3.5
    assert first["episode.goal"] == 1.0
    # RecordEpisodeStatistics' r / l / t repeat the return, the length and a clock
    assert not {"episode.r", "episode.l"} & set(first)
    assert first[IGNORED] == ("label (str)",)
    assert all(IGNORED not in log for log in logs[1:])  # said once, not every log
    assert "label" not in first


def test_what_counts_as_a_number():
    said: set = set()
    fields, ignored = episode_fields(
        {"a": 1, "b": np.int64(2), "c": np.array([3.0]), "d": True, "e": float("nan"),
         "f": [1, 2], "g": None, "score": 5.0, "episode_return": 9.0, "game_continues": False},
        said)
    assert fields == {"a": 1.0, "b": 2.0, "c": 3.0, "d": 1.0}
    assert ignored == ("e (float)", "f (list)", "g (NoneType)")
    assert episode_fields({"f": "x"}, said) == ({}, ())  # f was named already
    assert episode_fields(None, said) == ({}, ())


def test_the_epoch_averages_a_field_over_the_episodes_that_had_it():
    episode_log.take_ignored()  # what earlier tests in this process said
    log = EpisodeLog()
    log.add([{"n": 2.0, "score": 1.0, "is_success": 1.0},
             {"n": 6.0, "score": 0.0},  # no is_success in these episodes
             {"n": 2.0, "score": 1.0, "is_success": 0.0, IGNORED: ("label (str)",)},
             {"n": 1.0, "score": 1.0, IGNORED: ("label (str)",)}])
    summary = log.summary()
    assert summary["is_success"] == pytest.approx(0.5)  # over 4 episodes, not 11
    assert summary["score"] == pytest.approx(5 / 11) and summary["episodes"] == 11
    assert IGNORED not in summary
    assert episode_log.take_ignored() == ["label (str)"]  # once, for every worker
    log.add([{"n": 1.0, IGNORED: ("label (str)",)}])
    assert episode_log.take_ignored() == []


class _Agents:
    """The least a PettingZoo parallel env has: two agents, episodes of 3 steps."""

    possible_agents = ["a", "b"]
    metadata = {"name": "two"}

    def __init__(self):
        import gymnasium

        self._obs = gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self._act = gymnasium.spaces.Discrete(2)
        self.agents, self.t = [], 0

    def observation_space(self, agent):
        return self._obs

    def action_space(self, agent):
        return self._act

    def reset(self, seed=None, options=None):
        self.agents, self.t = list(self.possible_agents), 0
        return {a: np.zeros(2, np.float32) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions):
        self.t += 1
        done = self.t >= 3
        obs = {a: np.zeros(2, np.float32) for a in self.agents}
        infos = {a: ({"tags": 2.0 if a == "a" else 4.0} if done else {}) for a in self.agents}
        rewards = dict.fromkeys(self.agents, 1.0)
        ended = dict.fromkeys(self.agents, done)
        if done:
            self.agents = []
        return obs, rewards, ended, dict.fromkeys(obs, False), infos

    def close(self):
        pass


def test_a_pettingzoo_agents_info_numbers_are_its_fields_too():
    from puffer_tui.envs.pettingzoo_emulation import PettingZooPufferEnv

    env = PettingZooPufferEnv(_Agents, num_envs=1, log_interval=3)
    try:
        logs = _logs(env, 3)
    finally:
        env.close()
    assert logs and logs[0]["n"] == 2 and logs[0]["tags"] == pytest.approx(3.0)
