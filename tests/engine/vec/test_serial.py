"""The Serial vectorizer's own features: zero-copy buffers, action validation in detail, the
factory's checks, and a Gymnasium env through the same API. (Shapes, seeding, call order and
closing, on every backend: tests/engine/vec/test_backends_conformance.py.)"""

import numpy as np
import pytest

import puffer_tui.envs as envs
from puffer_tui.engine import vec
from puffer_tui.engine.native import ActionError

N = 6
SIZE = 7


def squared_vec(seed=0, num_envs=N, **settings):
    creator = envs.creator("squared", size=SIZE, **settings)
    return vec.make(creator, num_envs=num_envs, backend="serial", seed=seed)


def random_actions(rng, n=N):
    return rng.integers(0, 5, n, dtype=np.int32)


def test_sync_reset_and_step_return_the_gymnasium_style_tuples():
    with squared_vec() as v:
        obs, infos = v.reset(3)
        assert obs.shape == (N, SIZE * SIZE) and infos == []
        result = v.step(np.zeros(N, np.int32))
        assert len(result) == 5 and result[0] is v.observations


def test_native_envs_write_straight_into_the_vec_buffers():
    with squared_vec() as v:
        v.async_reset(0)
        reset_result = v.recv()
        v.send(random_actions(np.random.default_rng(1)))
        step_result = v.recv()
        names = ("observations", "rewards", "terminals", "truncations")
        for result in (reset_result, step_result):
            returned = dict(zip(names, result[:4], strict=True), masks=result[6])
            for name, array in returned.items():
                assert array is v.buffers[name], f"{name} is returned as the vec's own buffer"
                assert np.shares_memory(array, v.driver_env.buffers[name]), f"{name} copied"


@pytest.mark.parametrize(
    "actions,message",
    [
        (np.zeros(N + 1, np.int32), "shape"),
        (np.zeros((N, 1), np.int32), "shape"),
        (np.zeros(N, np.float32), "integer dtype"),
        (np.array([0, 1, 2, 3, 5, 0], np.int32), r"action 5 at row 4 is out of range \[0, 5\)"),
        (np.array([0, -1, 0, 0, 0, 0], np.int64), "out of range"),
        (np.array([0, 0, 0, 0, 0, 2**40], np.int64), "out of range"),
    ],
)
def test_bad_actions_raise_action_error_and_step_nothing(actions, message):
    with squared_vec(seed=2) as v, squared_vec(seed=2) as twin:
        v.reset()
        twin.reset()
        before = v.observations.copy()
        with pytest.raises(ActionError, match=message):
            v.send(actions)
        assert np.array_equal(v.observations, before)
        with pytest.raises(RuntimeError, match="recv"):
            v.recv()  # the failed send left nothing to receive
        # nothing was stepped: v still moves in lockstep with a twin that never saw the bad batch
        rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
        for _ in range(20):
            a = v.step(random_actions(rng_a))
            b = twin.step(random_actions(rng_b))
            assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def test_factory_rejects_bad_arguments_clearly():
    creator = envs.creator("squared")
    with pytest.raises(ValueError, match="batch_size must equal num_envs"):
        vec.make(creator, num_envs=4, backend="serial", batch_size=2)
    with pytest.raises(ValueError, match="unknown backend 'ray2'"):
        vec.make(creator, num_envs=4, backend="ray2")
    with pytest.raises(ValueError, match="num_envs must be >= 1"):
        vec.make(creator, num_envs=0, backend="serial")


def test_a_gymnasium_cartpole_runs_through_serial_and_reports_episode_stats():
    creator = envs.from_gymnasium("CartPole-v1", log_interval=8)
    with vec.make(creator, num_envs=4, backend="serial", seed=7) as v:
        assert v.single_observation_space.shape == (4,)
        obs, _ = v.reset()
        assert obs.shape == (4, 4) and obs.dtype == np.float32
        assert np.shares_memory(obs, v.driver_env.observations)
        rng = np.random.default_rng(0)
        stats, ended = [], 0
        for _ in range(200):
            v.send(rng.integers(0, 2, 4, dtype=np.int32))
            obs, rewards, terminals, truncations, infos, env_ids, masks = v.recv()
            assert env_ids.tolist() == [0, 1, 2, 3] and masks.all()
            assert (rewards == 1.0).all()
            ended += int(terminals.sum() + truncations.sum())
            stats.extend(infos)
        with pytest.raises(ActionError, match="out of range"):
            v.send(np.array([0, 1, 2, 0], np.int32))
    assert ended > 0 and stats, "random CartPole episodes end within 200 steps"
    assert sum(info["n"] for info in stats) <= ended
    for info in stats:
        assert set(info) == {"episode_return", "episode_length", "score", "n"}
        # CartPole pays 1 per step and reports no score of its own
        assert info["episode_return"] == info["episode_length"] == info["score"] > 0


def test_gymnasium_envs_through_serial_are_reproducible():
    def trace(seed):
        with vec.make(envs.from_gymnasium("CartPole-v1"), num_envs=3, seed=seed) as v:
            return rollout_cartpole(v)

    assert np.array_equal(trace(1), trace(1))
    assert not np.array_equal(trace(1), trace(2))


def rollout_cartpole(v, steps=60):
    rng = np.random.default_rng(0)
    obs, _ = v.reset()
    out = [obs.copy()]
    for _ in range(steps):
        obs, *_ = v.step(rng.integers(0, 2, 3, dtype=np.int32))
        out.append(obs.copy())
    return np.stack(out)
