"""Multi-process learners (torchrun + DDP, engine/algo/distributed.py) on one machine, 2 CPU ranks.

The engine is started the way the app and the CLI start it (app/engine_launcher.py: torchrun
when train.nproc > 1). tests/ddp_patches (a sitecustomize on the ranks' PYTHONPATH) makes
each rank write down the commands it applies and the epochs it ends, or crash on request.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from engine_harness import first_push, make_run, wait_until
from tree_paths import TESTS_DIR

from puffer_tui.app.engine_client import EngineClient
from puffer_tui.app.engine_launcher import launch_engine
from puffer_tui.engine.algo.distributed import World, combine_episode_stats
from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared import run_dir as rd

PATCHES = TESTS_DIR / "ddp_patches"
TWO_RANKS = {"train.nproc": 2, "vec.num_envs": 32}  # 2 x 32 envs x horizon 16 = 1024 a epoch


@pytest.fixture
def patched(monkeypatch, tmp_path):
    """The ranks load tests/ddp_patches; their traces go to the returned folder."""
    path = os.pathsep.join(filter(None, [str(PATCHES), os.environ.get("PYTHONPATH")]))
    monkeypatch.setenv("PYTHONPATH", path)
    trace = tmp_path / "trace"
    trace.mkdir()
    monkeypatch.setenv("PUFFER_TEST_DDP_TRACE", str(trace))
    return trace


@pytest.fixture
def engines():
    """Handles of launched engines: torchrun and its ranks are gone after the test."""
    handles = []
    yield handles
    for handle in handles:
        if handle.poll() is None:
            family = _family(handle.pid)
            for proc in family:
                try:
                    proc.terminate()
                except psutil.NoSuchProcess:
                    pass
            _, alive = psutil.wait_procs(family, timeout=20)
            for proc in alive:
                proc.kill()
            handle.wait(10)


def _family(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def trace(folder: Path, rank: int) -> list[dict]:
    path = folder / f"rank-{rank}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def commands_of(records):
    return [r for r in records if "cmd" in r]


def epochs_of(records):
    return {r["epoch"]: r for r in records if "cmd" not in r}


def train_cli(*args, env=None, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "puffer_tui.app.cli", "train", *args, "--headless"],
                          capture_output=True, text=True, timeout=timeout, env=env)


# -- pieces -----------------------------------------------------------------------------------

def test_one_process_world_is_the_identity(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    world = World.from_environment()
    assert not world.enabled and world.is_main and world.seed(7) == 7
    assert world.broadcast({"a": 1}) == {"a": 1} and world.gather(3) == [3] and world.sum(5) == 5


def test_torchrun_environment_gives_each_rank_its_own_seed(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("LOCAL_RANK", "1")
    world = World.from_environment()
    assert world.enabled and not world.is_main and world.rank == 1
    assert world.seed(7) != World().seed(7)


def test_episode_stats_are_combined_weighted_by_episodes():
    combined = combine_episode_stats([{"score": 1.0, "episodes": 3},
                                      {"score": 0.0, "episodes": 1},
                                      {"episodes": 0}])
    assert combined == {"score": 0.75, "episodes": 4}


# -- a real 2-rank engine ---------------------------------------------------------------------

def test_commands_are_applied_by_both_ranks_at_the_same_point(tmp_path, patched, engines):
    run = make_run(tmp_path, **TWO_RANKS, **{"train.total_timesteps": 10**9})
    handle = launch_engine(run, timeout=180)
    engines.append(handle)
    client = EngineClient.connect(run, timeout=30)
    try:
        assert client.call("hello", client="test")["ranks"] == 2
        wait_until(lambda: epochs_of(trace(patched, 1)), timeout=60, what="a first epoch")
        push = first_push(client, "telemetry", timeout=30,
                          where=lambda p: len(p.get("workers") or []) == 2)
        assert push is not None, "no telemetry with both ranks' workers entries"
        assert [w["rank"] for w in push["workers"]] == [0, 1]
        assert all(w["sps"] > 0 and w["node"] for w in push["workers"])
        # rank 1's process is listed beside rank 0's, so the cpu panel counts it too
        (peer,) = [p for p in push["processes"] if p["role"] == "rank"]
        assert peer["index"] == 1 and psutil.pid_exists(peer["pid"])
        reply = client.call("set", key="train.ent_coef", value=0.0123, timeout=60)
        assert reply["value"] == 0.0123
        wait_until(lambda: any(r["ent_coef"] == 0.0123 for r in epochs_of(trace(patched, 1))
                               .values()), timeout=60, what="an epoch with the new ent_coef")
        assert client.call("pause", timeout=60)["state"] == "paused"
        assert client.call("resume", timeout=60)["state"] == "running"
        client.call("stop", checkpoint=True, timeout=60)
    finally:
        client.close()
    assert handle.wait(120) == 0
    ranks = [trace(patched, 0), trace(patched, 1)]
    # the same commands, at the same epoch and global step, leaving the same state
    assert [c["cmd"] for c in commands_of(ranks[0])] == ["set", "pause", "resume", "stop"]
    assert commands_of(ranks[0]) == commands_of(ranks[1])
    # every epoch both ranks ended: the same step count (summed), the same ent_coef and the
    # same weights (DDP averaged the gradients of different data: the ranks' seeds differ)
    first, second = epochs_of(ranks[0]), epochs_of(ranks[1])
    assert set(first) == set(second)
    assert all(first[e] == second[e] for e in first)
    changed = [e for e in sorted(first) if first[e]["ent_coef"] == 0.0123]
    assert changed and changed == list(range(changed[0], max(first) + 1))
    # rank 0 alone wrote the run's files: one metrics row per epoch, one final checkpoint
    rows = [json.loads(line) for line in (run / rd.METRICS_FILE).read_text().splitlines()]
    assert [r["epoch"] for r in rows] == sorted(first)
    assert ckpt.list_checkpoints(run)
    assert rd.read_status(run)["state"] == "stopped"


def test_a_crashing_rank_stops_the_others_with_its_traceback(tmp_path, patched, monkeypatch,
                                                             engines):
    monkeypatch.setenv("PUFFER_TEST_CRASH_RANK", "1")
    run = make_run(tmp_path, **TWO_RANKS, **{"train.total_timesteps": 10**9})
    handle = launch_engine(run, timeout=180)
    engines.append(handle)
    family = _family(handle.pid)
    assert handle.wait(120) != 0
    psutil.wait_procs(family, timeout=30)
    assert not [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    events = (run / rd.EVENTS_FILE).read_text()
    assert "rank 1" in events and "injected crash on rank 1" in events
    assert "Traceback" in events
    status = rd.read_status(run)
    assert status["state"] == "error" and "another learner rank failed" in status["error"]


@pytest.mark.slow
def test_resume_with_two_ranks_then_one_then_two(tmp_path):
    budget = 2 * 32 * 16 * 3  # three 2-rank epochs
    first = train_cli("squared", "--runs-dir", str(tmp_path), *_cli(TWO_RANKS),
                      "--train.total-timesteps", str(budget))
    assert first.returncode == 0, first.stdout + first.stderr
    (run,) = [p for p in tmp_path.iterdir() if rd.is_run_dir(p)]
    step_after = lambda: ckpt.load_checkpoint(ckpt.latest_checkpoint(run))["global_step"]  # noqa: E731
    assert step_after() == budget

    one = train_cli("--resume", str(run), "--nproc", "1",
                    "--train.total-timesteps", str(budget + 32 * 16 * 2))
    assert one.returncode == 0, one.stdout + one.stderr
    assert step_after() == budget + 32 * 16 * 2
    assert rd.read_status(run)["ranks"] == 1

    two = train_cli("--resume", str(run), "--nproc", "2", "--train.total-timesteps",
                    str(budget * 2 + 32 * 16 * 2))
    assert two.returncode == 0, two.stdout + two.stderr
    assert step_after() == budget * 2 + 32 * 16 * 2
    assert rd.read_status(run)["ranks"] == 2
    epochs = [json.loads(line)["epoch"] for line in
              (run / rd.METRICS_FILE).read_text().splitlines()]
    assert epochs == list(range(1, 9))


def _cli(overrides: dict) -> list[str]:
    from engine_harness import TINY

    args = []
    for key, value in {**TINY, **overrides}.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    return args
