"""train.gamma_from_time_limit: an env whose probe episodes all end at the time limit gets
that limit's discount before the run starts, said in the events; a termination, a limit the
gamma already reaches, or a gamma someone chose leaves gamma alone."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from sweep_harness import cli

from puffer_tui.engine.algo import time_limit_horizon as tlh
from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared import config as cfg
from puffer_tui.envs.gym_emulation import from_gymnasium


class Walk(gym.Env):
    """Ends by its time limit only, unless `fall_at` is set: then it terminates at that step."""

    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gym.spaces.Box(-1, 1, (1,), np.float32)

    def __init__(self, fall_at=None):
        self.fall_at, self.t = fall_at, 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(2, np.float32), 0.0, self.t == self.fall_at, False, {}


class Cut(Walk):
    """Truncated by itself at lengths that differ from episode to episode: no time limit."""

    lengths = (100, 300)

    def __init__(self):
        super().__init__()
        self.episode = 0

    def reset(self, seed=None, options=None):
        self.episode += 1
        return super().reset(seed=seed)

    def step(self, action):
        obs, reward, terminated, _, info = super().step(action)
        return obs, reward, terminated, self.t == self.lengths[self.episode % 2], info


def _walks(limit, fall_at=None):
    return from_gymnasium(lambda: gym.wrappers.TimeLimit(Walk(fall_at), limit))


def test_episodes_that_only_the_time_limit_ends_call_for_its_discount():
    ends = tlh.probe(_walks(1000), seed=3)
    assert (ends.terminated, ends.truncated, ends.limit) == (False, tlh.PROBE_EPISODES, 1000)
    new, why = ends.discount(0.99)
    assert new == 0.999 and "1,000 steps" in why and "none terminated" in why
    assert ends.discount(0.9995) is None  # already at least that long: nothing to raise
    assert tlh.probe(_walks(1900), seed=3).discount(0.99)[0] == 0.999  # capped: as measured


def test_a_termination_or_a_short_limit_leaves_gamma_as_it_is():
    falls = tlh.probe(_walks(1000, fall_at=30), seed=0)
    assert falls.terminated and falls.steps == 30 and falls.discount(0.9) is None
    short = tlh.probe(_walks(50), seed=0)  # Reacher's 50 steps: 1 - 1/50 is below 0.99
    assert short.discount(0.99) is None and short.discount(0.9)[0] == 0.98
    never = tlh.probe(_walks(tlh.PROBE_STEPS + 1), seed=0)  # no limit within the probe
    assert never.truncated == 0 and never.discount(0.5) is None
    uneven = tlh.probe(from_gymnasium(Cut), seed=0)  # cut at 100 and 300 steps
    assert uneven.truncated == tlh.PROBE_EPISODES and uneven.limit is None
    assert uneven.discount(0.5) is None


def test_the_rule_changes_the_config_before_the_run_and_says_why():
    config = cfg.load_config("gym:Pendulum-v1", {"train.gamma_from_time_limit": True})
    note = tlh.choose_discount(config, _walks(200))
    assert config.train.gamma == 0.995 and not config.train.gamma_from_time_limit
    assert note.startswith("gamma 0.9 -> 0.995: 4 episodes of random actions")
    kept = cfg.load_config("gym:Pendulum-v1", {"train.gamma_from_time_limit": True})
    assert "an episode of random actions terminated" in tlh.choose_discount(kept, _walks(200, fall_at=5))
    assert kept.train.gamma == 0.9
    assert "time limit (50 steps) is within its reach" in tlh.choose_discount(
        cfg.load_config("gym:Pendulum-v1", {"train.gamma_from_time_limit": True,
                                            "train.gamma": 0.99}), _walks(50))


def test_a_gamma_someone_chose_turns_the_rule_off():
    assert cfg.load_config("gym:Pendulum-v1").train.gamma == 0.9  # its measured gamma
    assert not cfg.load_config("gym:Pendulum-v1").train.gamma_from_time_limit
    on = {"train.gamma_from_time_limit": True}
    config = cfg.load_config("gym:Pendulum-v1", on)
    # both given: the person asked for the rule over their gamma
    assert cfg.load_config("gym:Pendulum-v1", {"train.gamma": 0.97,
                                               **on}).train.gamma_from_time_limit
    assert not cfg.apply(config, {"train.gamma": 0.95}).train.gamma_from_time_limit  # sweeps
    from puffer_tui.engine.algo.trainer import Trainer

    trainer = Trainer(cfg.load_config("gym:CartPole-v1", {**on, "vec.num_envs": 16,
                                                          "train.torch_threads": 1}))
    try:
        assert trainer.horizon_note.startswith("gamma stays 0.98: an episode of random actions")
        trainer.set_hyperparameter("train.gamma", "0.97")  # a person's live set
        assert not trainer.config.train.gamma_from_time_limit  # a resume keeps 0.97
    finally:
        trainer.close()


def test_a_run_starts_with_the_time_limits_discount_and_keeps_it(tmp_path):
    done = cli("train", "gym:Pendulum-v1", "--headless", "--runs-dir", str(tmp_path),
               "--train.total-timesteps", "8192", "--train.gamma-from-time-limit", "true",
               "--train.torch-threads", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gamma 0.9 -> 0.995" in done.stdout  # the headless display shows the events
    run = next(tmp_path.glob("gym-*"))
    assert "gamma 0.9 -> 0.995: 4 episodes" in (run / "events.log").read_text()
    saved = ckpt.load_checkpoint(ckpt.latest_checkpoint(run))["config"]["train"]
    assert saved["gamma"] == 0.995 and not saved["gamma_from_time_limit"]
    # the run's file says what it trained with: a resume reads it and probes nothing
    written = cfg.load(run / "config.toml").train
    assert written.gamma == 0.995 and not written.gamma_from_time_limit


class Broken(Walk):
    def step(self, action):
        raise ValueError("the simulator lost its model")


def test_an_env_that_fails_in_the_probe_says_where_and_how_to_skip_it():
    import pytest

    config = cfg.load_config("gym:Pendulum-v1", {"train.gamma_from_time_limit": True})
    with pytest.raises(RuntimeError, match="while its episodes were probed .*the simulator lost"
                                           ".*--train.gamma-from-time-limit false"):
        tlh.choose_discount(config, from_gymnasium(Broken))
