"""bandit: arm probabilities, per-pull episodes, determinism, fuzz and frames."""

import numpy as np
import pytest

import puffer_tui.envs as envs

ARM, BEST, PAID, UNPAID = range(4)


def pull_all(env, arm):
    """Every env pulls `arm` once; returns (rewards, log of those pulls)."""
    env.log()  # drop earlier episodes
    _, rew, term, trunc, infos = env.step(np.full(env.num_envs, arm, np.int32))
    assert term.all() and not trunc.any(), "every pull is a whole episode"
    # step() hands the log out itself when its log_interval comes round
    return rew.copy(), infos[0] if infos else env.log()


def relative_values(env):
    """p[arm] / p[best] for every arm, read from the episode scores."""
    return np.array([pull_all(env, k)[1]["score"] for k in range(env.settings["num_arms"])])


def test_one_best_arm_scores_one_and_the_others_are_clearly_worse():
    env = envs.make("bandit", num_envs=64, seed=0, num_arms=8)
    env.reset()
    rel = relative_values(env)
    best = int(np.argmax(rel))
    assert rel[best] == 1.0, "pulling the best arm scores exactly 1"
    others = np.delete(rel, best)
    assert (others >= 0.1 / 0.9 - 1e-6).all() and (others < 0.6 / 0.9).all()
    assert pull_all(env, best)[1]["best_arm_rate"] == 1.0
    assert pull_all(env, (best + 1) % 8)[1]["best_arm_rate"] == 0.0


def test_rewards_are_bernoulli_with_the_arm_probability():
    env = envs.make("bandit", num_envs=4096, seed=1, num_arms=4)
    env.reset()
    probs = 0.9 * relative_values(env)
    for arm, p in enumerate(probs):
        rewards = np.concatenate([pull_all(env, arm)[0] for _ in range(10)])
        assert set(np.unique(rewards)) <= {0.0, 1.0}
        # 40960 pulls: the standard error is below 0.0025
        assert abs(rewards.mean() - p) < 0.015, f"arm {arm}"


def test_every_step_is_a_terminal_episode_with_constant_observation():
    env = envs.make("bandit", num_envs=16, seed=2, num_arms=3, log_interval=1)
    obs, _ = env.reset()
    assert (obs == 1.0).all()
    rng = np.random.default_rng(2)
    for _ in range(20):
        obs, rew, term, trunc, infos = env.step(rng.integers(0, 3, 16, dtype=np.int32))
        assert (obs == 1.0).all() and term.all() and not trunc.any()
        assert infos[0]["n"] == 16 and infos[0]["episode_length"] == 1.0
        assert infos[0]["episode_return"] == pytest.approx(rew.mean())


def test_arm_probabilities_depend_on_arm_seed_not_on_env_seed():
    def values(seed, arm_seed):
        env = envs.make("bandit", num_envs=8, seed=seed, num_arms=6, arm_seed=arm_seed)
        env.reset()
        return relative_values(env)

    assert np.array_equal(values(0, 42), values(99, 42))
    tables = [values(0, s) for s in range(12)]
    assert len({t.tobytes() for t in tables}) == 12, "different arm_seeds, different bandits"
    assert len({int(np.argmax(t)) for t in tables}) > 1, "the best arm moves with arm_seed"


def test_same_seed_same_rewards_and_different_seed_differs():
    def rollout(seed):
        env = envs.make("bandit", num_envs=32, seed=seed, num_arms=5)
        env.reset()
        rng = np.random.default_rng(0)
        return [env.step(rng.integers(0, 5, 32, dtype=np.int32))[1].copy() for _ in range(50)]

    a, b, c = rollout(3), rollout(3), rollout(4)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


@pytest.mark.parametrize("num_arms,arm_seed", [(2, 0), (64, 2**63 - 1), (64, 0), (2, 2**63 - 1)])
def test_random_action_fuzz(num_arms, arm_seed):
    env = envs.make("bandit", num_envs=128, seed=5, num_arms=num_arms, arm_seed=arm_seed,
                    log_interval=25)
    env.reset()
    space = env.single_observation_space
    rng = np.random.default_rng(5)
    for _ in range(500):
        obs, rew, term, trunc, infos = env.step(rng.integers(0, num_arms, 128, dtype=np.int32))
        assert space.contains(obs[0]) and (obs == 1.0).all()
        assert ((rew == 0) | (rew == 1)).all() and term.all() and not trunc.any()
        for log in infos:
            assert 0.1 / 0.9 - 1e-6 <= log["score"] <= 1.0 and log["n"] == 128 * 25
    rel = relative_values(env)
    assert (rel == 1.0).sum() == 1


def test_frame_shows_arms_best_and_last_pull():
    env = envs.make("bandit", num_envs=2, seed=0, num_arms=5)
    env.reset()
    assert env.frame_shape == (1, 5)
    tiles = env.frame(0)
    assert tiles.shape == (1, 5) and (tiles == BEST).sum() == 1 and (tiles == ARM).sum() == 4
    best = int(np.flatnonzero(tiles[0] == BEST)[0])
    other = (best + 2) % 5
    for _ in range(10):
        rew = env.step(np.array([other, best], np.int32))[1]
        t0, t1 = env.frame(0)[0], env.frame(1)[0]
        assert t0[other] == (PAID if rew[0] else UNPAID) and t0[best] == BEST
        assert t1[best] == (PAID if rew[1] else UNPAID) and (t1 == ARM).sum() == 4


def test_bad_settings_name_the_field():
    for bad in (1, 65, 2.5):
        with pytest.raises(ValueError, match="bandit.num_arms"):
            envs.make("bandit", num_arms=bad)
    with pytest.raises(ValueError, match="bandit.arm_seed"):
        envs.make("bandit", arm_seed=-1)
    with pytest.raises(ValueError, match="unknown setting"):
        envs.make("bandit", arms=3)
    env = envs.make("bandit", num_envs=2, num_arms=3)
    env.reset()
    with pytest.raises(ValueError, match="out of range"):
        env.step(np.array([0, 3], np.int32))
