"""What each kind of env spec resolves to: a NativeEnv class used as is, a PufferEnv class, a
Gymnasium factory, a PettingZoo ParallelEnv (forced by pz: or detected), ids registered by an
--env.import module; and the evaluation flag Atari gets."""

import sys
import textwrap

import pytest

from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.startup.memory_estimate import estimate
from puffer_tui.envs import creator, env_class, env_spec, is_python_env, make


@pytest.fixture
def user_modules(tmp_path, monkeypatch):
    (tmp_path / "spec_user_envs.py").write_text(textwrap.dedent('''
        import functools

        import gymnasium
        import numpy as np
        from gymnasium import spaces

        from puffer_tui.engine.native import PufferEnv


        class Coin(PufferEnv):
            """A PufferEnv of its own: guess a fixed coin, one step per episode."""

            def __init__(self, num_envs=1, seed=0, buf=None, side: int = 1):
                super().__init__(spaces.Box(0, 1, (1,), np.float32), spaces.Discrete(2),
                                 num_envs, 1, buf)
                self.side = side

            def reset(self, seed=None):
                self.observations[:] = 1
                return self.observations, []

            def step(self, actions):
                self.write_actions(actions)
                self.rewards[:] = self.actions == self.side
                self.terminals[:] = True
                return self.observations, self.rewards, self.terminals, self.truncations, []


        def two_walkers(n: int = 3):
            """A ParallelEnv found by what it returns (no pz: prefix)."""
            from pettingzoo import ParallelEnv

            class Walkers(ParallelEnv):
                metadata = {"name": "walkers"}

                def __init__(self):
                    self.possible_agents = [f"w{i}" for i in range(2)]
                    self.agents = []

                def observation_space(self, agent):
                    return spaces.Box(0, n, (1,), np.float32)

                def action_space(self, agent):
                    return spaces.Discrete(2)

                def reset(self, seed=None, options=None):
                    self.agents = list(self.possible_agents)
                    self.t = 0
                    return {a: np.zeros(1, np.float32) for a in self.agents}, {a: {} for a in self.agents}

                def step(self, actions):
                    self.t += 1
                    done = self.t >= n
                    obs = {a: np.full(1, self.t, np.float32) for a in self.agents}
                    rew = {a: float(actions[a]) for a in self.agents}
                    term = {a: done for a in self.agents}
                    trunc = {a: False for a in self.agents}
                    infos = {a: {} for a in self.agents}
                    if done:
                        self.agents = []
                    return obs, rew, term, trunc, infos

            return Walkers()
    '''))
    (tmp_path / "spec_user_registry.py").write_text(textwrap.dedent('''
        import gymnasium

        gymnasium.register("SpecUser/ShortCartPole-v0", entry_point=
                           "gymnasium.envs.classic_control.cartpole:CartPoleEnv",
                           max_episode_steps=7)
    '''))
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    yield
    for name in ("spec_user_envs", "spec_user_registry"):
        sys.modules.pop(name, None)
    env_spec.resolve_spec.cache_clear()


def test_a_native_class_spec_is_the_class_itself():
    from puffer_tui.envs.squared import Squared

    assert env_class("puffer_tui.envs.squared:Squared") is Squared
    assert not is_python_env("puffer_tui.envs.squared:Squared")
    config = cfg.load_config("puffer_tui.envs.squared:Squared", {"env.size": "5"})
    assert config.vec.backend == "serial" and config.env["size"] == 5


def test_a_pufferenv_class_is_built_with_its_settings(user_modules):
    source = env_class("spec_user_envs:Coin")
    assert [s.name for s in source.settings_schema] == ["side"]
    assert source.layout(source.resolve({"side": 0})).action_space.n == 2
    env = creator("spec_user_envs:Coin", side=0)(num_envs=4, seed=0)
    env.reset()
    _, rewards, *_ = env.step([0, 1, 0, 1])
    assert rewards.tolist() == [1, 0, 1, 0]


def test_a_parallel_env_is_detected_and_agents_are_rows(user_modules):
    pytest.importorskip("pettingzoo", reason='PettingZoo is not installed: pip install '
                                             '"puffer-tui[pettingzoo]"')
    for spec in ("spec_user_envs:two_walkers", "pz:spec_user_envs:two_walkers"):
        layout = env_class(spec).layout({"n": 4})
        assert layout.agents_per_env == 2, spec
    env = make("spec_user_envs:two_walkers", num_envs=3, n=4)
    assert env.num_agents == 6
    env.close()


def test_env_import_registers_ids_for_gym_specs(user_modules):
    spec = "gym:SpecUser/ShortCartPole-v0"
    with pytest.raises(cfg.ConfigError, match="unknown Gymnasium id"):
        cfg.load_config(spec)
    config = cfg.load_config(spec, {"env.import": "spec_user_registry"})
    assert config.env == {"import": "spec_user_registry"}
    env = make(spec, num_envs=1, **config.env)  # as a worker or eval would, from the config
    env.reset(seed=0)
    steps = 0
    while True:
        _, _, terminals, truncations, _ = env.step([0])
        steps += 1
        if terminals[0] or truncations[0]:
            break
    env.close()
    assert steps <= 7


def test_atari_is_built_to_play_whole_games_for_evaluation(monkeypatch):
    import types

    calls = []
    fake = types.ModuleType("puffer_tui.envs.atari_preprocessing")
    fake.atari_env = lambda env_id, training=True, **kw: calls.append((env_id, training, kw))
    monkeypatch.setitem(sys.modules, "puffer_tui.envs.atari_preprocessing", fake)
    env_spec.make_gym_env("ALE/Pong-v5", (), evaluation=True, repeat_action_probability=0.0)
    env_spec.make_gym_env("ALE/Pong-v5", ())
    assert calls == [("ALE/Pong-v5", False, {"repeat_action_probability": 0.0}),
                     ("ALE/Pong-v5", True, {})]


def test_memory_estimate_counts_every_learner_rank():
    one = estimate(cfg.load_config("squared")).total
    two = estimate(cfg.load_config("squared", {"train.nproc": 2})).total
    assert two > 1.9 * one


def test_gym_spec_layout_matches_the_built_vecenv():
    source = env_class("gym:CartPole-v1")
    python_env = {"native": False}  # Gymnasium's own env (its C port draws tiles)
    layout = source.layout(source.resolve(python_env))
    env = creator("gym:CartPole-v1", **python_env)(num_envs=2, seed=0)
    assert env.single_observation_space == layout.observation_space
    assert env.single_action_space == layout.action_space and layout.frame_shape is None
    env.close()


def test_gym_presets_by_id_then_namespace_then_family():
    import pytest

    from puffer_tui.engine.shared.config import load_config

    pytest.importorskip("minigrid", reason="pip install 'puffer-tui[minigrid]'")
    assert load_config("gym:MiniGrid-Empty-8x8-v0").train.ent_coef == 0.01  # MiniGrid.toml
    assert load_config("gym:CartPole-v1").train.learning_rate == 0.005  # CartPole-v1.toml
    # none of its own: its family's (classic-control.toml, envs/gym_presets/family.py)
    assert load_config("gym:Acrobot-v1").train.normalize_observations


def test_an_id_registered_without_a_time_limit_can_be_given_one():
    # CliffWalking-v1 has no max_episode_steps: a policy that never reaches the goal walks on
    # forever, so a run must be able to give it a limit
    spec = "gym:CliffWalking-v1"
    setting = {s.name: s for s in env_spec.resolve_spec(spec).settings_schema}["max_episode_steps"]
    assert setting.default == 0  # none, as registered
    config = cfg.load_config(spec, {"env.max_episode_steps": 5})
    env = make(spec, num_envs=1, **config.env)
    env.reset(seed=0)
    lengths, steps = [], 0
    while len(lengths) < 2:
        _, _, terminals, truncations, _ = env.step([0])  # up: never the goal
        steps += 1
        if terminals[0] or truncations[0]:
            lengths.append(steps)
            steps = 0
    env.close()
    assert lengths == [5, 5]
    unlimited = make(spec, num_envs=1, **cfg.load_config(spec, {"env.max_episode_steps": 0}).env)
    unlimited.reset(seed=0)
    assert not any(any(unlimited.step([0])[3]) for _ in range(300))  # no truncation at 0
    unlimited.close()
