"""Multiprocessing with an inline worker (the caller steps worker 0's block): the same rows,
seeds, pool order, frames, infos, saved state and errors as with a process for every block."""

import functools

import numpy as np
import psutil
import pytest
from crashy_env import NORMAL, RAISE, CrashyEnv

import puffer_tui.envs as envs
from puffer_tui.engine.vec import make
from puffer_tui.engine.vec.errors import WorkerError

pytestmark = pytest.mark.filterwarnings("ignore:num_workers=.* is more than")


def mp(creator, num_envs, num_workers, **kwargs):
    return make(creator, num_envs=num_envs, backend="multiprocessing", num_workers=num_workers,
                **kwargs)


def rollout(vec, steps: int, seed: int = 0):
    """Every recv() of `steps` steps with fixed random actions, copied."""
    rng = np.random.default_rng(seed)
    space = vec.single_action_space
    sizes = space.nvec if hasattr(space, "nvec") else np.array(space.n)
    vec.async_reset(vec.seed)
    out = []
    for _ in range(steps):
        obs, rewards, terminals, truncations, infos, env_ids, masks = vec.recv()
        out.append((obs.copy(), rewards.copy(), terminals.copy(), truncations.copy(),
                    env_ids.copy(), masks.copy(), sorted(map(str, infos))))
        actions = (rng.random((vec.agents_per_batch, *np.shape(sizes))) * sizes).astype(np.int32)
        vec.send(actions)
    return out


@pytest.mark.parametrize("env, settings", [("squared", {"size": 7}),
                                           ("snake", {"max_steps": 12})])
def test_inline_sync_gives_the_rows_of_worker_processes(env, settings):
    creator = envs.creator(env, **settings)
    with mp(creator, 6, 3, seed=5) as plain, mp(creator, 6, 3, seed=5, inline=True) as inline:
        assert len(inline.worker_pids) == 2 and len(plain.worker_pids) == 3
        for t, (a, b) in enumerate(zip(rollout(plain, 40), rollout(inline, 40), strict=True)):
            for name, x, y in zip(("obs", "rewards", "terminals", "truncations", "env_ids",
                                   "masks", "infos"), a, b, strict=True):
                np.testing.assert_array_equal(x, y, err_msg=f"{name} at step {t}")


def test_inline_block_keeps_its_masks_infos_and_frames():
    creator = functools.partial(CrashyEnv, mask_every=3, info_every=2)
    with mp(creator, 6, 3, seed=100, inline=True) as vec:
        vec.async_reset()
        obs, *_ = vec.recv()
        np.testing.assert_array_equal(obs[:, 0], 100 + np.arange(6))
        for step in range(1, 5):
            vec.send(np.full(6, NORMAL, np.int32))
            obs, _, _, _, infos, _, masks = vec.recv()
            assert (obs[:, 1] == step).all()
            np.testing.assert_array_equal(masks, (step + np.arange(6) % 2) % 3 != 0)
            want = [100, 102, 104] if step % 2 == 0 else []
            assert sorted(i["env"] for i in infos) == want
        for env_index in (0, 1, 4):  # 0 and 1 live in the caller
            np.testing.assert_array_equal(vec.frame(env_index), np.full((2, 3), 100 + env_index))


@pytest.mark.parametrize("zero_copy", [True, False])
def test_inline_pool_serves_both_halves_with_their_own_actions(zero_copy):
    creator = functools.partial(CrashyEnv, step_sleep=0.001)
    with mp(creator, 8, 2, batch_size=4, zero_copy=zero_copy, seed=0, inline=True) as vec:
        vec.async_reset()
        steps = np.zeros(8, int)
        for _ in range(30):
            obs, rewards, _, _, _, env_ids, _ = vec.recv()
            assert sorted(env_ids.tolist()) in ([0, 1, 2, 3], [4, 5, 6, 7])
            np.testing.assert_array_equal(obs[:, 0], env_ids)
            np.testing.assert_array_equal(obs[:, 1], steps[env_ids])
            steps[env_ids] += 1
            vec.send((env_ids % 3).astype(np.int32))
        assert steps.min() >= 10, f"a half starved: steps per env {steps}"
        _, rewards, *_, env_ids, _ = vec.recv()
        np.testing.assert_array_equal(rewards, env_ids % 3)


def test_inline_state_continues_exactly_in_another_vec():
    creator = envs.creator("cartpole", max_steps=9)
    with mp(creator, 4, 2, seed=3, inline=True) as a, mp(creator, 4, 2, seed=11,
                                                             inline=True) as b:
        rng = np.random.default_rng(0)
        actions = [rng.integers(0, 2, 4).astype(np.int32) for _ in range(40)]
        a.async_reset(3)
        for act in actions[:15]:
            a.recv()
            a.send(act)
        state = a.get_state()
        b.async_reset(11)
        b.set_state(state)
        for t, act in enumerate(actions[15:]):
            x, y = a.recv(), b.recv()
            for name, u, v in zip(("obs", "rewards", "terminals", "truncations"), x, y):
                np.testing.assert_array_equal(u, v, err_msg=f"{name} at step {t}")
            a.send(act)
            b.send(act)


def test_an_inline_env_error_is_a_worker_error_and_nothing_is_left_running():
    vec = mp(CrashyEnv, 4, 2, inline=True)
    vec.reset()
    pids = vec.worker_pids
    actions = np.full(4, NORMAL, np.int32)
    actions[1] = RAISE  # env 1 is in worker 0, the caller's block
    with pytest.raises(WorkerError) as info:  # from send(): the caller stepped that block
        vec.step(actions)
    assert info.value.worker == 0 and "explode_on_purpose" in str(info.value)
    assert "inline worker" in str(info.value)
    for pid in pids:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    with pytest.raises(RuntimeError, match="closed after an error: worker 0"):
        vec.recv()
