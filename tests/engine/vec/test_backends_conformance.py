"""The vec API contract, checked identically on every backend: serial, multiprocessing, Ray.

Each test runs once per backend on the same envs and asserts the same things: the shapes and
dtypes of a batch, the final observation kept on autoreset, seeding, the order of the async
calls, bad actions, a crashing env, saved state, and close() leaving no process and no shared
memory behind. Where a backend's contract differs by design (serial runs envs in this process,
so an env's exception reaches the caller as itself, not as a WorkerError), the test says so.
The backends' own features (pools that return part of the batch, a cluster of two nodes,
crash logs of a segfaulting worker) have their own modules (mp/test_mp_backend.py,
ray/test_ray_backend.py, mp/test_mp_backend_crashes.py). The Ray cases share one local Ray for the
module, and skip, naming the install, when Ray is missing.
"""

import functools
import gc
import logging
import os
import signal
import time
import traceback

import numpy as np
import psutil
import pytest
from crashy_env import NORMAL, RAISE, CrashyEnv, CrashyError

import puffer_tui.envs as envs
from puffer_tui.engine.native import ActionError
from puffer_tui.engine.vec import WorkerError, make

BACKENDS = ["serial", "multiprocessing", "ray"]
NOTICED_S = 5.0  # far below the 30 s timeout: a failure was noticed, not waited out
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray (2 CPUs, loopback) for every Ray case of the module, shut down after."""
    ray = pytest.importorskip("ray", reason='Ray is not installed: pip install "puffer-tui[ray]"')
    import crashy_env

    # Ray's workers cannot import the tests directory: ship the test env by value.
    ray.cloudpickle.register_pickle_by_value(crashy_env)
    # Every RAY_ variable is put back after: the backend sets some for a Ray it would start
    # (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0), and left set, that one makes a later `ray start`
    # of a second node refuse (tests/engine/vec/ray/test_ray_backend.py's cluster).
    saved = {k: v for k, v in os.environ.items() if k.startswith("RAY_")}
    os.environ.update(RAY_ENV)
    os.environ.pop("RAY_ADDRESS", None)
    try:
        # "local": a Ray of its own even when another runs on this machine
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.WARNING, object_store_memory=100_000_000)
        yield ray
    finally:
        ray.shutdown()
        ray.cloudpickle.unregister_pickle_by_value(crashy_env)
        for key in [k for k in os.environ if k.startswith("RAY_")]:
            os.environ.pop(key)
        os.environ.update(saved)


@pytest.fixture(params=BACKENDS)
def backend(request):
    if request.param == "ray":
        request.getfixturevalue("local_ray")
    return request.param


def open_vec(backend, creator, num_envs=4, seed=0, **kwargs):
    """The backend's vec env: two workers for the pools, every env in one batch."""
    if backend != "serial":
        kwargs.setdefault("num_workers", 2)
        kwargs.setdefault("timeout", 30.0)
    if backend == "ray":
        kwargs.setdefault("num_cpus", 0.5)
    return make(creator, num_envs=num_envs, backend=backend, seed=seed, **kwargs)


def workers(vec) -> list[int]:
    """The processes that hold the vec's envs (none for serial: they are in this one)."""
    return list(getattr(vec, "worker_pids", None) or getattr(vec, "actor_pids", None) or [])


def wait_gone(pids, seconds=10.0) -> list[int]:
    """The pids still running (zombies count as gone: they have exited) after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        alive = []
        for pid in pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
            except psutil.NoSuchProcess:
                pass
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def shared_memory_here() -> list[str]:
    """This process's mappings and descriptors of shared memory: the vec's nameless file,
    or any /dev/shm segment."""
    maps = [line.split(maxsplit=5)[-1] for line in open("/proc/self/maps")
            if "puffer_tui_vec" in line or "/dev/shm/" in line]
    fds = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if "puffer_tui_vec" in target or target.startswith("/dev/shm/"):
            fds.append(target)
    return maps + fds


def puffer_segments() -> set[str]:
    return {name for name in os.listdir("/dev/shm") if "puffer" in name} \
        if os.path.isdir("/dev/shm") else set()


SQUARED = envs.creator("squared", size=5, max_ticks=7)  # truncates every 7 steps


@pytest.mark.parametrize("creator, obs_dtype", [(SQUARED, np.uint8), (CrashyEnv, np.float32)],
                         ids=["native", "python"])
def test_a_batch_has_the_contracts_shapes_and_dtypes(backend, creator, obs_dtype):
    with open_vec(backend, creator, num_envs=4, seed=1) as vec:
        assert vec.num_envs == vec.num_agents == vec.agents_per_batch == 4
        single = vec.single_observation_space
        assert single.dtype == obs_dtype
        assert vec.observation_space.shape == (4, *single.shape)
        vec.async_reset(1)
        for step in range(10):
            obs, rewards, terminals, truncations, infos, env_ids, masks = vec.recv()
            assert obs.shape == (4, *single.shape) and obs.dtype == obs_dtype
            assert rewards.shape == (4,) and rewards.dtype == np.float32
            for flags in (terminals, truncations, masks):
                assert flags.shape == (4,) and flags.dtype == np.bool_
            assert env_ids.tolist() == [0, 1, 2, 3] and np.issubdtype(env_ids.dtype, np.integer)
            assert isinstance(infos, list) and masks.all()
            assert vec.final_observations.shape == obs.shape
            assert vec.final_observations.dtype == obs_dtype
            if step == 0:  # a reset pays nothing and ends nothing
                assert not rewards.any() and not terminals.any() and not truncations.any()
            actions = vec.action_space.sample()  # Gymnasium-style: a valid batch of actions
            assert actions.shape == (4,)
            vec.send(actions % (NORMAL + 11))  # CrashyEnv's actions above 10 crash on purpose
        vec.recv()


def test_the_final_observation_is_kept_when_an_env_autoresets(backend):
    # Two vecs with the same seed and actions: one truncates after k steps, the other goes on.
    # The observation the first one kept must be the one the second one shows at step k.
    k = 6
    short_env = envs.creator("squared", size=5, max_ticks=k)
    long_env = envs.creator("squared", size=5, max_ticks=1000)
    with open_vec(backend, short_env, seed=7) as short, open_vec(backend, long_env,
                                                                  seed=7) as long:
        short.reset()
        long.reset()
        rng = np.random.default_rng(0)
        for t in range(1, k + 1):
            actions = rng.integers(0, 5, 4).astype(np.int32)
            short.step(actions)
            long.step(actions)
            if t < k:
                assert not short.truncations.any()
        rows = np.flatnonzero(short.truncations & ~short.terminals & ~long.terminals)
        assert len(rows), "no row was truncated at the limit (the check would prove nothing)"
        np.testing.assert_array_equal(short.final_observations[rows], long.observations[rows])
        # ...and the buffer already shows the first observation of the next episode
        assert not np.array_equal(short.observations[rows], long.observations[rows])


def trace(vec, steps=40, reset_seed=None):
    rng = np.random.default_rng(5)
    out = [vec.reset(reset_seed)[0].ravel().copy()]
    for _ in range(steps):
        obs, rewards, terminals, truncations, _ = vec.step(rng.integers(0, 5, 4).astype(np.int32))
        out.append(np.concatenate([obs.ravel(), rewards.view(np.uint8), terminals, truncations]))
    return np.concatenate(out)


def test_a_seed_fixes_the_trajectories_and_they_match_serial(backend):
    with make(SQUARED, num_envs=4, backend="serial", seed=11) as serial:
        expected = trace(serial)
    with open_vec(backend, SQUARED, seed=11) as vec:
        first = trace(vec)
        again = trace(vec, reset_seed=11)  # reset with the same seed: the same episodes
    with open_vec(backend, SQUARED, seed=12) as other:
        different = trace(other)
    np.testing.assert_array_equal(first, expected)  # each block seeded as serial seeds its envs
    np.testing.assert_array_equal(again, expected)
    assert not np.array_equal(different, expected)


def test_async_calls_alternate_and_rows_come_in_env_order(backend):
    seed = 100
    creator = functools.partial(CrashyEnv, mask_every=3, info_every=2)
    with open_vec(backend, creator, num_envs=6, seed=seed) as vec:
        block = getattr(vec, "envs_per_worker", 6)  # serial: one block of all six
        with pytest.raises(RuntimeError, match="recv"):
            vec.recv()  # nothing pending
        with pytest.raises(RuntimeError, match="recv"):
            vec.send(np.zeros(6, np.int32))  # nothing received to act on
        vec.async_reset()
        obs, _, _, _, infos, env_ids, masks = vec.recv()
        with pytest.raises(RuntimeError, match="pending"):
            vec.recv()  # received twice
        np.testing.assert_array_equal(env_ids, np.arange(6))
        np.testing.assert_array_equal(obs[:, 0], seed + np.arange(6))
        for step in range(1, 5):
            vec.send(np.full(6, NORMAL, np.int64))
            with pytest.raises(RuntimeError, match="recv"):
                vec.send(np.zeros(6, np.int32))  # sent twice
            obs, rewards, _, _, infos, env_ids, masks = vec.recv()
            np.testing.assert_array_equal(env_ids, np.arange(6))
            assert (obs[:, 1] == step).all()
            np.testing.assert_array_equal(masks, (step + np.arange(6)) % 3 != 0)
            # each block reports its infos, named by the seed of its first env
            expected = [seed + b for b in range(0, 6, block)] if step % 2 == 0 else []
            assert sorted(info["env"] for info in infos) == expected
        for env_index in (0, 5):  # a frame comes from the env it names
            np.testing.assert_array_equal(vec.frame(env_index), np.full((2, 3), seed + env_index))
        vec.send(np.zeros(6, np.int32))
        vec.async_reset(50)  # with a step in flight: every env starts again from the new seed
        obs, *_, env_ids, _ = vec.recv()
        np.testing.assert_array_equal(obs[:, 0], 50 + env_ids)
        np.testing.assert_array_equal(obs[:, 1], 0)


def test_bad_actions_are_refused_and_step_nothing(backend):
    with open_vec(backend, CrashyEnv, num_envs=4) as vec:
        vec.reset()
        with pytest.raises(ActionError, match="shape"):
            vec.send(np.zeros(3, np.int32))
        with pytest.raises(ActionError, match="integer dtype"):
            vec.send(np.zeros(4, np.float32))
        with pytest.raises(ActionError, match=r"action 16 at row 2 is out of range \[0, 16\)"):
            vec.send(np.array([0, 1, 16, 0]))
        vec.send(np.zeros(4, np.int64))  # int64 is narrowed; the vec survived the refusals
        obs = vec.recv()[0]
        assert (obs[:, 1] == 1).all(), "a refused batch was stepped"


def test_a_crashing_env_is_named_and_ends_every_worker(backend):
    vec = open_vec(backend, CrashyEnv, num_envs=4)
    vec.reset()
    pids = workers(vec)
    actions = np.full(4, NORMAL, np.int32)
    actions[3] = RAISE
    start = time.monotonic()
    if backend == "serial":  # the env runs here: its own exception, with its own traceback
        with pytest.raises(CrashyError, match="env 3 exploded on purpose") as info:
            vec.step(actions)
        frames = "".join(traceback.format_tb(info.value.__traceback__))
        assert "explode_on_purpose" in frames and "crashy_env.py" in frames
        vec.close()
        return
    vec.send(actions)
    with pytest.raises(WorkerError) as info:
        vec.recv()
    assert time.monotonic() - start < NOTICED_S
    assert info.value.worker == 1  # envs 2 and 3 are the second worker's
    assert "CrashyError: env 3 exploded on purpose" in str(info.value)
    assert "explode_on_purpose" in info.value.traceback
    assert "crashy_env.py" in info.value.traceback
    assert wait_gone(pids) == [], "a failure must end every worker"
    with pytest.raises(RuntimeError, match="closed after an error.*exploded"):
        vec.recv()


def test_a_killed_worker_is_a_worker_error_naming_it(backend):
    if backend == "serial":
        pytest.skip("serial has no worker process: its envs run in the caller's")
    vec = open_vec(backend, CrashyEnv, num_envs=4)
    vec.reset()
    pids = workers(vec)
    vec.send(np.zeros(4, np.int32))
    start = time.monotonic()
    os.kill(pids[0], signal.SIGKILL)
    with pytest.raises(WorkerError, match="died") as info:
        while True:  # the step may land before the kill does; then the next one cannot
            vec.recv()
            vec.send(np.zeros(4, np.int32))
    assert time.monotonic() - start < NOTICED_S
    assert info.value.worker == 0
    assert wait_gone(pids) == [], "the surviving worker must be ended too"


def test_saved_state_continues_exactly_in_another_vec(backend):
    creator = envs.creator("squared", size=5, max_ticks=9)
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, 5, 4).astype(np.int32) for _ in range(40)]

    def steps(vec, batch):
        out = []
        for a in batch:
            vec.send(a)
            result = vec.recv()
            out.append([np.array(x) for x in (*result[:4], result[6], vec.final_observations)])
        return out

    with open_vec(backend, creator, seed=3) as a, open_vec(backend, creator, seed=11) as b:
        a.reset(3)
        steps(a, actions[:15])
        a.send(actions[15])
        state = a.get_state()  # between send and recv: the pending step is saved with it
        assert state is not None
        b.reset(11)
        b.send(actions[15])
        b.set_state(state)
        assert np.array_equal(a.recv()[0], b.recv()[0])
        expected, got = steps(a, actions[16:]), steps(b, actions[16:])
    for t, (x, y) in enumerate(zip(expected, got, strict=True)):
        for name, u, v in zip(("obs", "rewards", "terminals", "truncations", "masks", "final"),
                              x, y, strict=True):
            np.testing.assert_array_equal(u, v, err_msg=f"{name} at step {t}")


def test_close_leaves_no_process_and_no_shared_memory(backend):
    segments = puffer_segments()
    # what was mapped before (Ray's object store, once the module's Ray has started) stays
    before = set(shared_memory_here())
    vec = open_vec(backend, SQUARED)
    vec.reset()
    vec.step(np.zeros(4, np.int32))
    pids = workers(vec)
    assert len(pids) == (0 if backend == "serial" else 2)
    if backend == "multiprocessing":  # it shares its buffers with its workers: seen while open
        assert set(shared_memory_here()) - before
    vec.close()
    vec.close()  # twice is fine
    with pytest.raises(RuntimeError, match="closed"):
        vec.reset()
    with pytest.raises(RuntimeError, match="closed"):
        vec.send(np.zeros(4, np.int32))
    with pytest.raises(RuntimeError, match="closed"):
        vec.recv()
    assert wait_gone(pids) == [], "close() must end every worker"
    del vec
    gc.collect()
    assert set(shared_memory_here()) <= before, "shared memory still mapped after close()"
    assert puffer_segments() <= segments, "a shared memory segment was left in /dev/shm"

    dropped = open_vec(backend, SQUARED)  # never closed: garbage collection ends it
    pids = workers(dropped)
    del dropped
    gc.collect()
    assert wait_gone(pids) == [], "a vec dropped without close() left its workers running"
    assert set(shared_memory_here()) <= before


def train_three_epochs(backend: str):
    """The policy's parameters and the epochs' losses after three epochs on `backend`."""
    import torch

    from puffer_tui.engine.algo.trainer import Trainer
    from puffer_tui.engine.shared.config import load_config

    settings = {"vec.backend": backend, "vec.num_envs": 16, "train.horizon": 32,
                "train.minibatch_size": 256, "train.hidden_size": 32, "train.torch_threads": 1,
                "train.seed": 3}
    if backend != "serial":
        settings["vec.num_workers"] = 2
    if backend == "ray":
        settings["vec.ray_num_cpus"] = 0.5
    with Trainer(load_config("squared", settings)) as trainer:
        losses = [trainer.run_epoch()["losses"] for _ in range(3)]
        params = torch.cat([p.detach().flatten() for p in trainer.policy.parameters()])
    return losses, params


@pytest.fixture(scope="module")
def trained_on_serial():
    return train_three_epochs("serial")


def test_a_trainer_trains_exactly_as_on_serial(backend, trained_on_serial):
    """The same seed gives the same weights on every backend, bit for bit: what the trainer
    learns on serial (tests/learning/test_learning.py solves squared there) it learns on each."""
    import torch

    losses, params = train_three_epochs(backend)
    want_losses, want_params = trained_on_serial
    assert losses == want_losses
    assert torch.equal(params, want_params)
    assert losses[0] != losses[-1], "the policy did not change (the check would prove nothing)"
