"""Ray vec backend on a real local Ray cluster of two nodes.

The module's cluster: a head (`ray start --head`, 2 CPUs) and a second raylet joined to it
(`ray start --address=...`, 1 CPU) on this machine, on loopback, acting as a second node. At
the end no actor may be left on it; then its processes (and only its: `ray stop` would end
every Ray on the machine) are stopped, and every process it had must be gone.
Skipped when Ray is not installed (pip install "puffer-tui[ray]").
"""

import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np
import psutil
import pytest
from crashy_env import CrashyEnv

import puffer_tui.envs as envs
from puffer_tui.engine.vec import WorkerError, make

# Ray 2.5x+ turns on token authentication by default; a loopback test cluster does without.
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray_cli(*args, env) -> None:
    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    done = subprocess.run([ray_bin, *args], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, f"ray {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"


def _cluster_processes(temp_dir: str) -> set[int]:
    """Every process of the cluster: those named after its temp dir, and their children
    (workers, actors, agents)."""
    pids = set()
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if any(temp_dir in part for part in proc.info["cmdline"] or ()):
                pids.add(proc.pid)
                pids.update(child.pid for child in proc.children(recursive=True))
        except psutil.Error:
            continue
    return pids


def _alive(pids) -> list[int]:
    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            pass
    return alive


def _wait_gone(pids, seconds=10.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while (alive := _alive(pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


def _stop_cluster(pids, grace: float = 5.0) -> None:
    """What `ray stop --force` does, for this cluster's processes only (`ray stop` ends every
    Ray process of the user on the machine, a training run's included): SIGTERM, then
    SIGKILL what is left after `grace` seconds."""
    for sig in ((signal.SIGTERM, signal.SIGKILL) if grace else (signal.SIGKILL,)):
        for pid in _alive(pids):
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        if not _wait_gone(pids, seconds=grace or 2.0):
            return


def _actors_among(pids) -> list[str]:
    """Live processes titled as one of our actors (Ray names actor processes ray::CLASS)."""
    found = []
    for pid in _alive(pids):
        try:
            title = " ".join(psutil.Process(pid).cmdline())
        except psutil.Error:
            continue
        if title.startswith("ray::EnvBlock"):
            found.append(f"{pid} {title}")
    return found


@pytest.fixture(scope="module")
def cluster():
    ray = pytest.importorskip("ray", reason='Ray is not installed: pip install "puffer-tui[ray]"')
    import crashy_env

    # Ray's workers cannot import the tests directory: ship the test env by value.
    ray.cloudpickle.register_pickle_by_value(crashy_env)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    saved = {k: os.environ.get(k) for k in (*RAY_ENV, "RAY_ADDRESS")}
    os.environ.update(RAY_ENV)
    os.environ.pop("RAY_ADDRESS", None)
    env = dict(os.environ)
    temp_dir = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # short: Ray's socket paths must fit
    address = f"127.0.0.1:{_free_port()}"
    seen: set[int] = set()
    try:
        _ray_cli("start", "--head", f"--port={address.split(':')[1]}",
                 "--node-ip-address=127.0.0.1", "--num-cpus=2", "--include-dashboard=false",
                 "--object-store-memory=100000000", f"--temp-dir={temp_dir}", env=env)
        _ray_cli("start", f"--address={address}", "--node-ip-address=127.0.0.1",
                 "--num-cpus=1", "--object-store-memory=100000000", env=env)
        yield {"address": address, "temp_dir": temp_dir, "seen": seen}
        seen.update(_cluster_processes(temp_dir))
    finally:
        # Every vec was closed, and this process is still connected (its actors would die with
        # it): none of their actors may remain.
        seen.update(_cluster_processes(temp_dir))
        deadline = time.monotonic() + 5.0
        while (actors := _actors_among(seen)) and time.monotonic() < deadline:
            time.sleep(0.1)
        if ray.is_initialized():
            ray.shutdown()
        seen.update(_cluster_processes(temp_dir))
        _stop_cluster(seen)
        ray.cloudpickle.unregister_pickle_by_value(crashy_env)
        ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        left = _alive(seen | _cluster_processes(temp_dir))
        _stop_cluster(left, grace=0.0)
        shutil.rmtree(temp_dir, ignore_errors=True)
    assert seen, "found no process of the test cluster (the check would prove nothing)"
    assert not actors, f"actors left running on the cluster after close(): {actors}"
    assert not left, f"processes of the Ray cluster still running after it was stopped: {left}"


def ray_vec(cluster, creator, num_envs, num_workers, **kwargs):
    kwargs.setdefault("timeout", 30.0)
    kwargs.setdefault("num_cpus", 0.5)
    return make(creator, num_envs=num_envs, backend="ray", num_workers=num_workers,
                address=cluster["address"], **kwargs)


def test_blocks_on_both_nodes_step_exactly_like_serial(cluster):
    creator = envs.creator("squared", size=5, max_ticks=7)  # truncates often
    rng = np.random.default_rng(0)
    serial = make(creator, num_envs=4, backend="serial", seed=7)
    with ray_vec(cluster, creator, 4, 2, seed=7, num_cpus=1) as vec:
        assert len(set(vec.actor_nodes)) == 2, "SPREAD should use both nodes"
        cluster["seen"].update(vec.actor_pids)
        np.testing.assert_array_equal(vec.reset()[0], serial.reset()[0])
        truncated = 0
        for _ in range(40):
            actions = rng.integers(0, 5, 4).astype(np.int32)
            got, want = vec.step(actions), serial.step(actions)
            for g, w in zip(got[:4], want[:4], strict=True):
                np.testing.assert_array_equal(g, w)
            rows = want[3] & ~want[2]
            np.testing.assert_array_equal(vec.final_observations[rows],
                                          serial.final_observations[rows])
            truncated += int(rows.sum())
        assert truncated, "no truncation: the final observations were not checked"
        assert vec.observation_space.shape == (4, *vec.single_observation_space.shape)
        assert vec.action_space.sample().shape == (4,)
    serial.close()


def test_telemetry_names_each_actors_host_its_rate_and_the_clusters_cpus(cluster):
    creator = envs.creator("squared", size=5)
    with ray_vec(cluster, creator, 4, 2, num_cpus=1) as vec:
        cluster["seen"].update(vec.actor_pids)
        assert [s["actor"] for s in vec.worker_stats()] == [0, 1]
        assert all(s["node"] == socket.gethostname() for s in vec.worker_stats())
        vec.reset()
        deadline = time.monotonic() + 1.5  # the rates' window is at least a second
        while time.monotonic() < deadline:
            vec.step(np.zeros(4, np.int32))
        assert all(s["sps"] > 0 for s in vec.worker_stats()), vec.worker_stats()
        usage = vec.cluster_usage()
        assert usage["cpus"] == 3.0  # the head's 2 CPUs and the second raylet's 1
        assert usage["cpus_reserved"] >= 2.0  # our two actors hold one each


@pytest.mark.parametrize("zero_copy", [True, False])
def test_pool_returns_whole_actors_and_serves_every_actor(cluster, zero_copy):
    creator = functools.partial(CrashyEnv, step_sleep=0.002)
    with ray_vec(cluster, creator, 8, 4, batch_size=4, zero_copy=zero_copy) as vec:
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
        assert steps.min() >= 4, f"an actor starved: steps per env {steps}"
        obs, rewards, *_, env_ids, _ = vec.recv()
        np.testing.assert_array_equal(rewards, env_ids % 2)  # each got its own action
        vec.send(np.zeros(4, np.int32))
        vec.async_reset(50)  # with steps in flight: they land first, then every env resets
        # The first finished actors come back first, so an actor stepped again after the reset
        # may return before a slower one's reset: each row counts the steps since its reset.
        since_reset = np.zeros(8, int)
        served = set()
        for _ in range(20):
            obs, *_, env_ids, _ = vec.recv()
            np.testing.assert_array_equal(obs[:, 0], 50 + env_ids)
            np.testing.assert_array_equal(obs[:, 1], since_reset[env_ids])
            since_reset[env_ids] += 1
            served.update(env_ids.tolist())
            vec.send(np.zeros(4, np.int32))
            if len(served) == 8:
                break
        assert served == set(range(8))


def test_frames_come_from_the_actor_that_owns_the_env(cluster):
    # (shapes, call order, bad actions, crashes and close(): test_backends_conformance.py)
    with ray_vec(cluster, CrashyEnv, 4, 2) as vec:
        vec.reset()
        np.testing.assert_array_equal(vec.frame(3), np.full((2, 3), 3))
        with pytest.raises(IndexError, match="out of range"):
            vec.frame(4)
        vec.send(np.zeros(4, np.int64))
        assert vec.frame(2)[0, 0] == 2  # a frame between send and recv follows the step
        assert (vec.recv()[0][:, 1] == 1).all()


def _steps(vec, actions):
    out = []
    for a in actions:
        obs, rewards, terminals, truncations, _, _, masks = vec.recv()
        out.append([np.array(x) for x in (obs, rewards, terminals, truncations, masks,
                                          vec.final_observations)])
        vec.send(a)
    return out


@pytest.mark.parametrize("env, settings", [
    ("squared", {"max_ticks": 9}), ("cartpole", {"max_steps": 9}), ("snake", {"max_steps": 12}),
])
def test_saved_state_continues_every_env_exactly_in_another_vec(cluster, env, settings):
    creator = envs.creator(env, **settings)
    with ray_vec(cluster, creator, 4, 2, seed=3) as a, ray_vec(cluster, creator, 4, 2,
                                                               seed=11) as b:
        space = a.single_action_space
        sizes = space.nvec if hasattr(space, "nvec") else np.array(space.n)
        rng = np.random.default_rng(0)
        actions = [(rng.random((a.num_agents, *np.shape(sizes))) * sizes).astype(np.int32)
                   for _ in range(50)]
        a.async_reset(3)
        _steps(a, actions[:20])
        state = a.get_state()
        assert state is not None
        b.async_reset(11)
        b.set_state(state)
        expected, got = _steps(a, actions[20:]), _steps(b, actions[20:])
    for t, (x, y) in enumerate(zip(expected, got, strict=True)):
        for name, u, v in zip(("obs", "rewards", "terminals", "truncations", "masks", "final"),
                              x, y, strict=True):
            np.testing.assert_array_equal(u, v, err_msg=f"{name} at step {t}")


def build_only_in(pid: int, **kwargs):
    """A CrashyEnv in process `pid` (the driver's probe); failing to build anywhere else."""
    return CrashyEnv(fail_on_init=os.getpid() != pid, **kwargs)


def test_an_env_that_cannot_be_built_in_its_actor_is_a_worker_error(cluster):
    creator = functools.partial(build_only_in, os.getpid())
    with pytest.raises(WorkerError, match="died") as info:
        ray_vec(cluster, creator, 2, 2)
    assert "cannot build this env on purpose" in info.value.traceback


def _raylet_of(node_id: str) -> psutil.Process:
    for proc in psutil.process_iter(["name", "cmdline"]):
        if proc.info["name"] == "raylet" and f"--node_id={node_id}" in (proc.info["cmdline"] or ()):
            return proc
    raise AssertionError(f"no raylet process for node {node_id}")


def test_an_actor_lost_with_its_node_is_a_worker_error(cluster):
    """Kills the second node: run last among the cluster tests."""
    import ray

    creator = envs.creator("squared", size=5)
    # 3 actors of 1 CPU fill both nodes (2 + 1 CPUs): one is on the second node
    vec = ray_vec(cluster, creator, 3, 3, num_cpus=1)
    head = next(n["NodeID"] for n in ray.nodes() if "node:__internal_head__" in n["Resources"])
    driver = ray.get_runtime_context().get_node_id()
    lost = [w for w, node in enumerate(vec.actor_nodes) if node not in (head, driver)]
    assert lost, f"no actor on the second node: actors {vec.actor_nodes}, head {head}"
    vec.reset()
    start = time.monotonic()
    _raylet_of(vec.actor_nodes[lost[0]]).kill()
    with pytest.raises(WorkerError, match="died or was lost") as info:
        while time.monotonic() - start < 60:  # steps may still land while the loss spreads
            vec.step(np.zeros(3, np.int32))
    # noticed by Ray (seconds), well before the vec's own 30 s timeout would have fired
    assert time.monotonic() - start < 15.0
    assert info.value.worker == lost[0]
    assert _wait_gone(vec.actor_pids) == []


def test_missing_ray_is_a_one_line_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if absent
    with pytest.raises(ImportError, match=r'pip install "puffer-tui\[ray\]"'):
        make(CrashyEnv, num_envs=2, backend="ray", num_workers=2)


def test_an_unreachable_address_is_refused_at_once():
    pytest.importorskip("ray", reason='Ray is not installed: pip install "puffer-tui[ray]"')
    with pytest.raises(ValueError, match="cannot reach the Ray cluster.*ray start --head"):
        make(CrashyEnv, num_envs=2, backend="ray", num_workers=2,
             address=f"127.0.0.1:{_free_port()}")
    with pytest.raises(ValueError, match="not host:port"):
        make(CrashyEnv, num_envs=2, backend="ray", num_workers=2, address="nowhere")


def test_a_new_config_with_the_ray_backend_needs_ray_installed(monkeypatch):
    from puffer_tui.engine.shared.config import ConfigError, from_dict, load_config

    saved = load_config("squared", {"vec.backend": "serial"}).as_dict()
    saved["vec"]["backend"] = "ray"
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ConfigError, match=r'needs Ray.*pip install "puffer-tui\[ray\]"'):
        load_config("squared", {"vec.backend": "ray"})
    assert from_dict(saved).vec.backend == "ray"  # a saved run's config still loads
