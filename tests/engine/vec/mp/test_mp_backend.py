"""Multiprocessing vec's own features: pool ordering, frames, sizes, idle workers, nameless
memory. (Results equal to Serial's, seeding, masks and infos, call order, bad actions and
closing, on every backend: tests/engine/vec/test_backends_conformance.py.)"""

import functools
import time
import warnings

import numpy as np
import psutil
import pytest
from crashy_env import CrashyEnv

from puffer_tui.engine.native import ActionError
from puffer_tui.engine.vec import make
from puffer_tui.engine.vec.sizing import plan_workers

pytestmark = pytest.mark.filterwarnings("ignore:num_workers=.* is more than")


def mp(creator, num_envs, num_workers, **kwargs):
    return make(creator, num_envs=num_envs, backend="multiprocessing", num_workers=num_workers,
                **kwargs)


def actions_for(vec, rng):
    return rng.integers(0, 5, vec.agents_per_batch).astype(np.int32)


@pytest.mark.parametrize("zero_copy", [True, False])
def test_pool_returns_whole_workers_and_serves_every_worker(zero_copy):
    creator = functools.partial(CrashyEnv, step_sleep=0.002)
    with mp(creator, 8, 4, batch_size=4, zero_copy=zero_copy, seed=0) as vec:
        assert vec.agents_per_batch == 4
        vec.async_reset()
        steps = np.zeros(8, int)
        for _ in range(24):
            obs, rewards, _, _, _, env_ids, masks = vec.recv()
            assert len(env_ids) == 4 and len(set(env_ids.tolist())) == 4
            pairs = env_ids.reshape(2, 2)
            assert (pairs[:, 0] % 2 == 0).all() and (pairs[:, 1] == pairs[:, 0] + 1).all()
            if zero_copy:
                assert env_ids[0] % 4 == 0 and np.shares_memory(obs, vec.observations)
            np.testing.assert_array_equal(obs[:, 0], env_ids)  # each row is the env it says
            np.testing.assert_array_equal(obs[:, 1], steps[env_ids])
            steps[env_ids] += 1
            vec.send((env_ids % 2).astype(np.int32))
        assert steps.min() >= 4, f"a worker starved: steps per env {steps}"
        obs, rewards, *_ , env_ids, _ = vec.recv()
        np.testing.assert_array_equal(rewards, env_ids % 2)  # each got its own action
        vec.send(np.zeros(4, np.int32))
        vec.async_reset(50)  # with steps in flight: they land first, then every env resets
        served = set()
        for _ in range(2):
            obs, *_, env_ids, _ = vec.recv()
            np.testing.assert_array_equal(obs[:, 0], 50 + env_ids)
            np.testing.assert_array_equal(obs[:, 1], 0)
            served.update(env_ids.tolist())
            vec.send(np.zeros(4, np.int32))
        assert served == set(range(8))


def wait_until_all_answered(vec):
    """Block until every busy worker's answer is waiting (white-box: the vec's sockets)."""
    import select

    busy = [s for s, b in zip(vec._socks, vec._busy, strict=True) if b]
    deadline = time.monotonic() + 10
    while busy and time.monotonic() < deadline:
        readable, _, _ = select.select(busy, [], [], 0.1)
        busy = [s for s in busy if s not in readable]
    assert not busy, "workers did not answer"


@pytest.mark.parametrize("zero_copy", [True, False])
def test_pool_takes_the_finished_worker_sent_longest_ago(zero_copy):
    """When several have finished, recv() must not favour low indices (that starves others)."""
    with mp(CrashyEnv, 4, 4, batch_size=1, zero_copy=zero_copy) as vec:
        vec.async_reset()
        order = []
        for _ in range(12):
            wait_until_all_answered(vec)
            *_, env_ids, _ = vec.recv()
            order.append(int(env_ids[0]))
            vec.send(np.zeros(1, np.int32))
        assert order == [0, 1, 2, 3] * 3


def test_pool_prefers_fast_workers():
    """Worker 0 sleeps 40 ms per step, worker 1 none: the pool keeps returning worker 1."""

    slow = functools.partial(CrashyEnv, step_sleep=0.04, sleep_seed=0)
    with mp(slow, 2, 2, batch_size=1, zero_copy=False) as vec:
        vec.async_reset()
        seen = []
        for _ in range(10):
            *_, env_ids, _ = vec.recv()
            seen.append(int(env_ids[0]))
            vec.send(np.zeros(1, np.int32))
        assert seen.count(1) >= 7, seen


def test_frame_comes_from_the_worker_that_owns_the_env():
    with mp(CrashyEnv, 6, 3, seed=0) as vec:
        vec.reset()
        for env_index in (0, 3, 5):
            np.testing.assert_array_equal(vec.frame(env_index), np.full((2, 3), env_index))
        vec.send(np.zeros(6, np.int32))  # a frame between send and recv waits for the step
        assert vec.frame(4)[0, 0] == 4
        assert (vec.recv()[0][:, 1] == 1).all()
        with pytest.raises(IndexError, match="out of range"):
            vec.frame(6)


def test_an_unpicklable_creator_is_a_clear_error():
    with pytest.raises(TypeError, match="not a lambda"):
        mp(lambda **kw: CrashyEnv(**kw), 2, 2)


def test_sizes_that_do_not_fit_say_what_to_choose():
    with pytest.raises(ValueError, match=r"num_workers in \(1, 2, 5, 10\)"):
        plan_workers(10, 4, None, True, cores=8)
    with pytest.raises(ValueError, match=r"choose batch_size in \(3, 6, 9, 12\)"):
        plan_workers(12, 4, 4, True, cores=8)
    with pytest.raises(ValueError, match="zero_copy=False"):
        plan_workers(12, 4, 9, True, cores=8)
    assert plan_workers(12, 4, 9, False, cores=8).workers_per_batch == 3
    with pytest.raises(ValueError, match="at least one env"):
        plan_workers(2, 3, None, True, cores=8)
    with pytest.warns(RuntimeWarning, match="choose num_workers <= 2"):
        plan_workers(8, 4, None, True, cores=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert plan_workers(8, None, None, True, cores=2).num_workers == 2


def test_idle_workers_use_no_cpu():
    with mp(CrashyEnv, 2, 2) as vec:
        vec.reset()
        procs = [psutil.Process(pid) for pid in vec.worker_pids]
        before = [sum(p.cpu_times()[:2]) for p in procs]
        time.sleep(1.0)
        used = [sum(p.cpu_times()[:2]) - b for p, b in zip(procs, before, strict=True)]
        assert max(used) < 0.05, f"idle workers used {used} CPU seconds in 1 s"


def test_buffers_live_in_nameless_memory():
    with mp(CrashyEnv, 2, 2) as vec:
        vec.reset()
        maps = open(f"/proc/{vec.worker_pids[0]}/maps").read()
        assert "puffer_tui_vec" in maps
        assert "/dev/shm/" not in maps


def test_action_checks_cover_multidiscrete_and_box():
    from gymnasium import spaces

    from puffer_tui.engine.native.actions import ActionChecker

    check = ActionChecker(spaces.MultiDiscrete([3, 4]), 5, np.int32)
    bad = np.zeros((5, 2), np.int64)
    bad[3, 1] = 4
    with pytest.raises(ActionError, match=r"action 4 at row 3 is out of range \[0, 4\)"):
        check(bad)
    assert check(np.ones((5, 2), np.int64)).dtype == np.int32
    box = ActionChecker(spaces.Box(-1, 1, (2,)), 5, np.float32)
    assert box(np.zeros((5, 2))).dtype == np.float32
    with pytest.raises(ActionError, match="float dtype"):
        box(np.zeros((5, 2), np.int32))
