"""PettingZoo parallel envs as multi-agent PufferEnvs (envs/pettingzoo_emulation.py): rows per
possible agent, masks as the native multi-agent envs set them, per-agent rewards and stats,
vectorized and trained."""

import numpy as np
import pytest
from gymnasium import spaces

from puffer_tui.engine import vec
from puffer_tui.envs.pettingzoo_emulation import from_pettingzoo

AGENTS = ("a", "b", "c", "late")


class DyingAgents:
    """A tiny ParallelEnv: agent "a" dies (terminates) after 1 step, "b" after 2, "c" is
    truncated after 4, and "late" spawns at step 2 and dies after step 3. Reward: 1 + the
    agent's index each step it acts. Observation: [agent index, steps so far, action sum]."""

    metadata = {"name": "dying_agents"}

    def __init__(self, lives=None):
        self.possible_agents = list(AGENTS)
        self.lives = lives or {"a": (0, 1), "b": (0, 2), "c": (0, 4), "late": (2, 3)}
        self.agents = []
        self.t = 0
        self.action_sum = 0

    def observation_space(self, agent):
        return spaces.Box(0.0, 100.0, (3,), np.float32)

    def action_space(self, agent):
        return spaces.Discrete(3)

    def _obs(self, agent):
        return np.array([AGENTS.index(agent), self.t, self.action_sum], np.float32)

    def reset(self, seed=None, options=None):
        self.t, self.action_sum = 0, 0
        self.agents = [a for a in self.possible_agents if self.lives[a][0] == 0]
        return {a: self._obs(a) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions):
        assert set(actions) == set(self.agents), (actions, self.agents)
        self.t += 1
        self.action_sum += sum(int(x) for x in actions.values())
        acting = list(self.agents)
        rewards = {a: 1.0 + AGENTS.index(a) for a in acting}
        terminations = {a: a != "c" and self.t >= self.lives[a][1] for a in acting}
        truncations = {a: a == "c" and self.t >= self.lives[a][1] for a in acting}
        observations = {a: self._obs(a) for a in acting}
        infos = {a: {} for a in acting}
        self.agents = [a for a in acting if not (terminations[a] or truncations[a])]
        for agent in self.possible_agents:
            if self.lives[agent][0] == self.t and agent not in acting:
                self.agents.append(agent)
                observations[agent] = self._obs(agent)
        return observations, rewards, terminations, truncations, infos

    def close(self):
        pass


def make_dying_agents():
    return DyingAgents()


def test_rows_masks_rewards_and_autoreset_follow_the_native_multi_agent_envs():
    env = from_pettingzoo(make_dying_agents, log_interval=1)(num_envs=2)
    obs, _ = env.reset(seed=0)
    assert env.num_agents == 8 and env.agents_per_env == 4
    # "late" is not spawned yet: masked with zeros; the others observe
    assert env.masks.tolist() == [True, True, True, False] * 2
    assert obs[3].tolist() == [0, 0, 0] and obs[1].tolist() == [1, 0, 0]

    obs, rewards, terminals, truncations, _ = env.step(np.ones(8, np.int32))
    # step 1: "a" dies: its reward and terminal arrive, mask 0, zeros; "late" not yet
    assert rewards[:4].tolist() == [1, 2, 3, 0]
    assert terminals[:4].tolist() == [True, False, False, False]
    assert env.masks[:4].tolist() == [False, True, True, False]
    assert obs[0].tolist() == [0, 0, 0] and obs[2].tolist() == [2, 1, 3]

    obs, rewards, terminals, truncations, _ = env.step(np.ones(8, np.int32))
    # step 2: "b" dies, "late" spawns (mask 1 from now); the dead "a" stays masked
    assert rewards[:4].tolist() == [0, 2, 3, 0]
    assert terminals[:4].tolist() == [False, True, False, False]
    assert env.masks[:4].tolist() == [False, False, True, True]
    assert obs[3].tolist() == [3, 2, 5]

    obs, rewards, terminals, truncations, infos = env.step(np.ones(8, np.int32))
    # step 3: "late" dies after acting once
    assert rewards[:4].tolist() == [0, 0, 3, 4]
    assert terminals[:4].tolist() == [False, False, False, True]
    assert env.masks[:4].tolist() == [False, False, True, False]

    obs, rewards, terminals, truncations, infos = env.step(np.ones(8, np.int32))
    # step 4: "c" is truncated, the last one: its final observation is kept, and the env
    # resets in this step (rows observe the new episode, "late" masked again)
    assert truncations[:4].tolist() == [False, False, True, False] and not terminals[:4].any()
    assert env.final_observations[2].tolist() == [2, 4, 8]  # actions 3 + 2 + 2 + 1
    assert env.masks[:4].tolist() == [True, True, True, False]
    assert obs[:3, 1].tolist() == [0, 0, 0]
    # stats of the agent episodes ended this step ("c" in each of the 2 envs)
    assert len(infos) == 1 and infos[0]["n"] == 2.0
    assert infos[0]["episode_return"] == pytest.approx(4 * 3)
    assert infos[0]["episode_length"] == pytest.approx(4)
    env.close()


def test_per_agent_stats_average_over_every_agent_episode():
    env = from_pettingzoo(make_dying_agents, log_interval=4)(num_envs=1)
    env.reset(seed=0)
    for _ in range(3):
        _, _, _, _, infos = env.step(np.zeros(4, np.int32))
        assert infos == []
    _, _, _, _, infos = env.step(np.zeros(4, np.int32))
    # a: 1 step, reward 1; b: 2 steps x 2; late: 1 step x 4; c: 4 steps x 3
    assert infos[0]["n"] == 4.0
    assert infos[0]["episode_return"] == pytest.approx((1 + 4 + 4 + 12) / 4)
    assert infos[0]["episode_length"] == pytest.approx((1 + 2 + 1 + 4) / 4)
    env.close()


def test_bad_envs_and_creators_are_refused_with_the_reason():
    class AEC:
        possible_agents = ["x"]
        agent_selection = "x"

    with pytest.raises(TypeError, match="AEC env; pass its parallel version"):
        from_pettingzoo(AEC)
    with pytest.raises(TypeError, match="not a PettingZoo ParallelEnv"):
        from_pettingzoo(object)
    with pytest.raises(TypeError, match="needs a callable"):
        from_pettingzoo(42)
    with pytest.raises(ValueError, match="expected 'module.path:callable'"):
        from_pettingzoo("no_colon_here")
    with pytest.raises(ImportError, match="cannot import 'no_such_module_xyz'"):
        from_pettingzoo("no_such_module_xyz:parallel_env")
    with pytest.raises(TypeError, match="has no callable 'nothing'"):
        from_pettingzoo("numpy:nothing")

    class Mixed(DyingAgents):
        def action_space(self, agent):
            return spaces.Discrete(2 if agent == "late" else 3)

    with pytest.raises(ValueError, match="must share one observation and one action space"):
        from_pettingzoo(Mixed)


def test_bad_actions_are_refused_before_any_env_steps():
    env = from_pettingzoo(make_dying_agents)(num_envs=1)
    env.reset(seed=0)
    with pytest.raises(Exception, match="out of range|outside|range"):
        env.step(np.array([0, 0, 7, 0], np.int32))
    assert env.envs[0].t == 0
    env.close()


def test_multiprocessing_rows_match_serial_rows():
    creator = from_pettingzoo(make_dying_agents)
    results = []
    for backend, extra in (("serial", {}), ("multiprocessing", {"num_workers": 2})):
        with vec.make(creator, num_envs=4, backend=backend, seed=0, **extra) as v:
            v.reset(0)
            masks = []
            for _ in range(5):
                v.step(np.ones(16, np.int32))
                masks.append(np.array(v.masks, copy=True))
            results.append(np.stack(masks))
    assert results[0].shape == (5, 16)
    assert np.array_equal(results[0], results[1])


@pytest.fixture
def simple_spread():
    """Skips only the tests that need mpe2 (a module-level skip would hide the ones above)."""
    return pytest.importorskip(
        "mpe2.simple_spread_v3", reason="mpe2 not installed (pip install 'puffer-tui[pettingzoo]')")


def test_an_env_without_render_modes_draws_no_frame():
    with vec.make(from_pettingzoo(make_dying_agents), num_envs=2, backend="serial") as v:
        v.reset(0)
        assert v.frame(1) is None


def test_simple_spread_draws_its_frames_for_the_env_panel(simple_spread):
    with vec.make(from_pettingzoo(simple_spread.parallel_env, N=3), num_envs=2,
                  backend="multiprocessing", num_workers=2) as v:
        v.reset(0)
        frame = v.frame(1)
        assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8
        assert frame.shape[0] <= 120 and frame.shape[1] <= 160  # within the frame bounds


def test_simple_spread_rows_and_episode_stats(simple_spread):
    creator = from_pettingzoo(simple_spread, N=3, max_cycles=10)
    with vec.make(creator, num_envs=2, backend="serial", seed=0) as v:
        v.reset(0)
        assert v.num_agents == 6 and v.single_observation_space.shape == (18,)
        infos = []
        for _ in range(40):
            *_, step_infos = v.step(v.action_space.sample())
            infos += step_infos
        assert infos and infos[0]["episode_length"] == 10.0
        assert all(np.isfinite(info["episode_return"]) for info in infos)


def test_simple_spread_trains_through_the_trainer(simple_spread):
    from puffer_tui.engine.algo.trainer import Trainer
    from puffer_tui.engine.shared.config import load_config

    # PettingZoo's parallel_env is a local function: found by name for the workers' pickle
    creator = from_pettingzoo(simple_spread.parallel_env, N=3, max_cycles=25)
    config = load_config("cartpole", {"train.torch_threads": 1, "vec.num_envs": 8,
                                      "train.horizon": 32, "train.minibatch_size": 256,
                                      "train.total_timesteps": 4 * 768})
    vecenv = vec.make(creator, num_envs=8, backend="multiprocessing", num_workers=2, seed=0)
    with Trainer(config, vecenv=vecenv) as trainer:
        rows = [trainer.run_epoch() for _ in range(4)]
    assert trainer.global_step >= 4 * 768
    assert all(np.isfinite(row["losses"]["policy_loss"]) for row in rows)
    assert any(row["env"].get("episode_return") is not None for row in rows)
