"""Observation normalization and reward scaling (engine/algo/normalization.py): the statistics'
merge, reward scaling, two DDP ranks agreeing, exact resume, and evaluation applying them."""

from __future__ import annotations

import io
import os
import socket

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

from puffer_tui.engine.algo.normalization import ReturnScaler, RunningMeanStd, merge, moments
from puffer_tui.engine.algo.policy import load_policy
from puffer_tui.engine.algo.trainer import Trainer
from puffer_tui.engine.evaluation.evaluate import EvaluationError, load_evaluator
from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared.config import load_config

NORMALIZED = {"vec.num_envs": 8, "train.horizon": 8, "train.minibatch_size": 16,
              "train.hidden_size": 16, "train.total_timesteps": 100_000,
              "train.torch_threads": 1, "train.normalize_observations": True,
              "train.normalize_rewards": True, "env.max_steps": 7}


def _roundtrip(state):
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def test_merged_statistics_equal_those_of_the_concatenation():
    rng = np.random.default_rng(0)
    parts = [rng.normal(3.0, 2.0, (n, 5)) * rng.uniform(0.1, 10, 5) for n in (1, 7, 300, 0, 41)]
    stats = RunningMeanStd((5,))
    for part in parts:
        stats.update(part)
    rows = np.concatenate(parts)
    np.testing.assert_allclose(stats.mean, rows.mean(0), rtol=1e-12)
    np.testing.assert_allclose(stats.var, rows.var(0), rtol=1e-10)
    assert stats.count == len(rows)
    # merging moments in any grouping gives the same
    total = merge(moments(np.concatenate(parts[:2])), moments(np.concatenate(parts[2:])))
    np.testing.assert_allclose(total[1], rows.mean(0), rtol=1e-12)
    np.testing.assert_allclose(total[2] / total[0], rows.var(0), rtol=1e-10)
    normed = stats.normalize(rows, clip=10.0)
    assert normed.dtype == np.float32
    np.testing.assert_allclose(normed.mean(0), 0.0, atol=1e-5)
    np.testing.assert_allclose(normed.std(0), 1.0, atol=1e-4)
    assert np.abs(stats.normalize(rows * 100, clip=2.0)).max() <= 2.0


def test_rewards_are_divided_by_the_std_of_the_discounted_return():
    scaler = ReturnScaler(num_agents=2, gamma=0.5, clip=0.0)
    ones = np.ones(2)
    no = np.zeros(2, bool)
    scaler.scale(np.arange(2), ones, no)  # returns 1, 1
    scaler.scale(np.arange(2), ones, np.array([True, False]))  # 1.5, 1.5; agent 0 ends
    out = scaler.scale(np.arange(2), ones * 2, no)  # agent 0: 2 (restarted), agent 1: 2.75
    seen = np.array([1, 1, 1.5, 1.5, 2.0, 2.75])
    np.testing.assert_allclose(out, 2 / np.sqrt(seen.var() + 1e-8), rtol=1e-6)
    # a masked-out row is neither counted nor scaled
    before = scaler.stats.count
    out = scaler.scale(np.array([1]), np.array([5.0]), np.array([False]), np.array([False]))
    assert scaler.stats.count == before and out[0] == 5.0
    clipped = ReturnScaler(1, 0.99, clip=1.0)
    clipped.scale(np.arange(1), np.array([0.001]), np.array([False]))
    assert clipped.scale(np.arange(1), np.array([1e6]), np.array([False]))[0] == 1.0


def _rank(rank: int, port: int, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE="2")
    from puffer_tui.engine.algo.distributed import World

    world = World(rank, 2)
    world.join("cpu")
    try:
        rng = np.random.default_rng(rank)
        stats = RunningMeanStd((3,))
        for _ in range(2):  # two epochs: the second merges onto the first's statistics
            stats.update(rng.normal(rank * 5.0, 1.0 + rank, (10 + 20 * rank, 3)))
            stats.sync(world)
        out.put((rank, stats.count, stats.mean.tolist(), stats.var.tolist()))
    finally:
        world.close()


def test_two_ranks_end_an_epoch_with_the_statistics_of_all_rows():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_rank, args=(r, port, out)) for r in range(2)]
    for p in procs:
        p.start()
    try:
        results = sorted(out.get(timeout=120) for _ in procs)
    finally:
        for p in procs:
            p.join(30)
            if p.is_alive():
                p.kill()
    rows = []
    for rank in range(2):
        rng = np.random.default_rng(rank)
        rows += [rng.normal(rank * 5.0, 1.0 + rank, (10 + 20 * rank, 3)) for _ in range(2)]
    rows = np.concatenate(rows)
    (_, n0, m0, v0), (_, n1, m1, v1) = results
    assert n0 == n1 == len(rows)
    assert m0 == m1 and v0 == v1  # bit for bit: the same merge in the same order
    np.testing.assert_allclose(m0, rows.mean(0), rtol=1e-10)
    np.testing.assert_allclose(v0, rows.var(0), rtol=1e-10)


def test_the_trainer_normalizes_what_it_stores_and_the_policy_holds_the_statistics():
    with Trainer(load_config("cartpole", NORMALIZED)) as trainer:
        trainer.run_epoch()
        stored = trainer.buffer.observations.numpy()
        assert stored.dtype == np.float32
        assert np.abs(stored).max() <= NORMALIZED.get("train.observation_clip", 10.0)
        assert trainer.obs_rms.count == trainer.global_step
        np.testing.assert_allclose(trainer.policy.obs_norm.mean.numpy(), trainer.obs_rms.mean)
        assert trainer.reward_scaler.stats.count == trainer.global_step


def test_a_resumed_run_continues_with_the_same_statistics():
    config = load_config("cartpole", NORMALIZED)
    with Trainer(config) as first:
        for _ in range(3):
            first.run_epoch()
        state = _roundtrip(first.state_dict())
        rows = [first.run_epoch()["losses"] for _ in range(3)]
        obs_stats, reward_stats = first.obs_rms.state_dict(), first.reward_scaler.state_dict()
    with Trainer(load_config("cartpole", NORMALIZED)) as resumed:
        resumed.load_state_dict(state)
        assert resumed.obs_rms.count == 3 * 8 * 8
        again = [resumed.run_epoch()["losses"] for _ in range(3)]
        for key, value in resumed.obs_rms.state_dict().items():
            assert torch.equal(value, obs_stats[key]), key
        for key, value in resumed.reward_scaler.state_dict().items():
            assert torch.equal(value, reward_stats[key]), key
    assert again == rows
    state["normalization"] = {}
    with Trainer(load_config("cartpole", NORMALIZED)) as resumed, \
            pytest.raises(ValueError, match="no observation statistics"):
        resumed.load_state_dict(state)


def test_eval_applies_the_checkpoints_statistics_and_refuses_a_checkpoint_without(tmp_path):
    with Trainer(load_config("cartpole", NORMALIZED)) as trainer:
        for _ in range(2):
            trainer.run_epoch()
        state = trainer.state_dict()
        mean, var = trainer.obs_rms.mean.copy(), trainer.obs_rms.var.copy()
    path = ckpt.save_checkpoint(tmp_path, state)
    policy, _ = load_policy(path)
    np.testing.assert_array_equal(policy.obs_norm.mean.numpy(), mean)
    raw = np.random.default_rng(1).normal(0, 3, (5, *policy.observation_space.shape))
    raw = raw.astype(np.float32)
    actions, _ = policy.act(raw, deterministic=True)
    normed = np.clip((raw - mean) / np.sqrt(var + 1e-8), -10, 10).astype(np.float32)
    params, _, _ = policy.step(torch.from_numpy(normed))
    expected, _ = policy.actor.sample(params, deterministic=True)
    np.testing.assert_array_equal(actions, expected.numpy())
    assert not np.array_equal(actions, policy.actor.sample(
        policy.step(torch.from_numpy(raw))[0], deterministic=True)[0].numpy())

    state["policy"] = {k: v for k, v in state["policy"].items() if not k.startswith("obs_norm.")}
    bad = ckpt.save_checkpoint(tmp_path / "bad", state)
    with pytest.raises(EvaluationError) as error:
        load_evaluator(str(bad), None, num_envs=1, seed=0, deterministic=True, episodes=1)
    text = str(error.value)
    assert "normalizes observations" in text and "\n" not in text
