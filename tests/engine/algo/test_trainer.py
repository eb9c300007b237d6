"""The trainer: rollout buffer, prioritized sampling, the PPO loss's masks, live
hyperparameters, metrics rows and exact resume from state_dict()."""

import io
import json
import time

import numpy as np
import pytest
import torch

from puffer_tui.engine.algo.policy import load_policy
from puffer_tui.engine.algo.ppo_loss import ppo_loss
from puffer_tui.engine.algo.rollout import RolloutBuffer
from puffer_tui.engine.algo.trainer import Trainer
from puffer_tui.engine.shared.config import ConfigError, load_config

SMALL = {"vec.num_envs": 8, "train.horizon": 8, "train.minibatch_size": 16,
         "train.hidden_size": 16, "train.total_timesteps": 10_000, "train.torch_threads": 1}


def small_trainer(env="squared", **overrides):
    return Trainer(load_config(env, {**SMALL, **overrides}))


# -- rollout buffer -----------------------------------------------------------------------------


def _buffer(segments=4, horizon=3, agents=2, state_size=0):
    return RolloutBuffer(segments, horizon, agents, (2,), np.float32, (), torch.int32,
                         state_size=state_size)


def _step(buf, env_ids, value, terminals=None, masks=None, state=None):
    n = len(env_ids)
    obs = np.full((n, 2), value, np.float32)
    term = np.zeros(n, bool) if terminals is None else np.asarray(terminals)
    mask = np.ones(n, bool) if masks is None else np.asarray(masks)
    return buf.store(np.asarray(env_ids), obs, np.full(n, value, np.float32), term,
                     np.zeros(n, bool), mask, np.full(n, int(value), np.int32),
                     np.zeros(n, np.float32), np.full(n, value, np.float32), state)


def test_segments_are_filled_row_by_row_from_env_ids():
    buf = _buffer()
    # agent 1 steps twice before agent 0 steps at all (an async pool)
    _step(buf, [1], 10)
    _step(buf, [1], 11)
    _step(buf, [0, 1], 12)  # agent 1 fills its segment (1) here
    assert buf.full == 1 and not buf.ready
    _step(buf, [1, 0], 13)  # agent 1 moves to the next free segment (2)
    _step(buf, [0], 14)     # agent 0 fills segment 0; gets segment 3
    np.testing.assert_array_equal(buf.values[1].numpy(), [10, 11, 12])
    np.testing.assert_array_equal(buf.values[0].numpy(), [12, 13, 14])
    assert buf.values[2, 0].item() == 13
    np.testing.assert_array_equal(buf.observations[1, :, 0].numpy(), [10, 11, 12])
    assert list(buf.segment_of) == [3, 2] and list(buf.position_of) == [0, 1]
    for v in (15, 16):
        _step(buf, [0, 1], v)
    _step(buf, [0], 17)
    assert buf.ready and buf.full == 4
    np.testing.assert_array_equal(buf.values[2].numpy(), [13, 15, 16])
    np.testing.assert_array_equal(buf.values[3].numpy(), [15, 16, 17])


def test_rows_without_a_free_segment_idle_until_the_batch_is_complete():
    buf = _buffer(segments=3, horizon=2, agents=2)
    for v in (1, 2):
        _step(buf, [0, 1], v)
    assert list(buf.segment_of) == [2, -1]  # only one segment left: agent 0 takes it
    _step(buf, [0, 1], 3)
    _step(buf, [0, 1], 4)
    assert buf.ready
    np.testing.assert_array_equal(buf.values[2].numpy(), [3, 4])
    buf.start_batch()
    assert list(buf.segment_of) == [0, 1] and buf.full == 0


def test_episode_boundaries_masks_and_segment_start_state_are_stored():
    buf = _buffer(segments=2, horizon=3, agents=2, state_size=2)
    h = np.array([[1, 1], [2, 2]], np.float32)
    _step(buf, [0, 1], 1, state=(h, h + 10))
    _step(buf, [0, 1], 2, terminals=[False, True], masks=[True, False], state=(h * 5, h * 5))
    np.testing.assert_array_equal(buf.terminals[:, 1].numpy(), [0, 1])
    np.testing.assert_array_equal(buf.masks[:, 1].numpy(), [1, 0])
    # the state recorded is the one at each segment's first step
    np.testing.assert_array_equal(buf.state_h.numpy(), h)
    np.testing.assert_array_equal(buf.state_c.numpy(), h + 10)


def test_a_step_of_every_row_stores_what_the_rows_stored_one_by_one_would():
    """store()'s lockstep path (every row in order: one slice a column) against the row by
    row path, over three segments per row, the last of them partly idle, an LSTM state,
    truncations with final values, masked rows, and the policy's outputs as numpy arrays or
    as CPU tensors (the autograd path's); in the second batch one step stores its rows in
    two calls, mid-segment, after which the lockstep path hands over to the row by row one."""
    rng = np.random.default_rng(0)
    together = _buffer(segments=7, horizon=3, agents=3, state_size=2)
    apart = _buffer(segments=7, horizon=3, agents=3, state_size=2)

    def store(buf, rows, step, tensors):
        rows = np.asarray(rows)
        outputs = [step["actions"][rows], step["logprobs"][rows], step["values"][rows]]
        if tensors:
            outputs = [torch.from_numpy(np.ascontiguousarray(a)) for a in outputs]
        final = None if step["final"] is None else step["final"][rows]
        return buf.store(rows, step["obs"][rows], step["rewards"][rows], step["term"][rows],
                         step["trunc"][rows], step["masks"][rows], *outputs,
                         (step["h"][rows], step["c"][rows]), final)

    for batch in range(3):
        for buf in (together, apart):
            buf.start_batch()
        count = 0
        while not together.ready:
            count += 1
            trunc = rng.random(3) < 0.3
            step = {"obs": rng.random((3, 2), np.float32),
                    "rewards": rng.random(3, np.float32), "term": rng.random(3) < 0.3,
                    "trunc": trunc, "masks": rng.random(3) < 0.8,
                    "actions": rng.integers(0, 9, 3).astype(np.int32),
                    "logprobs": rng.random(3, np.float32), "values": rng.random(3, np.float32),
                    "final": np.where(trunc, rng.random(3), 0).astype(np.float32)
                    if trunc.any() else None,
                    "h": rng.random((3, 2), np.float32), "c": rng.random((3, 2), np.float32)}
            tensors = count % 2 == 0
            if batch == 1 and count == 5:
                done = store(together, [0, 1], step, tensors) + store(together, [2], step,
                                                                       tensors)
                assert together._lockstep is None
            else:
                done = store(together, [0, 1, 2], step, tensors)
            assert together._lockstep is not None or together.next_free > 7 or batch == 1
            assert done == sum(store(apart, [row], step, tensors) for row in range(3))
        assert apart.ready and apart._lockstep is None
        for name in ("observations", "actions", "logprobs", "values", "rewards", "terminals",
                     "truncations", "final_values", "masks", "state_h", "state_c"):
            assert torch.equal(getattr(together, name), getattr(apart, name)), name
        np.testing.assert_array_equal(together.segment_of, apart.segment_of)
        np.testing.assert_array_equal(together.position_of, apart.position_of)
        assert (together.full, together.next_free) == (apart.full, apart.next_free)


def test_buffer_refuses_too_few_segments():
    with pytest.raises(ValueError, match="batch_size must be >= num_agents"):
        _buffer(segments=1, agents=2)
    with pytest.raises(ValueError, match="horizon must be >= 2"):
        _buffer(horizon=1)


# -- the loss -----------------------------------------------------------------------------------


def test_masked_rows_do_not_contribute_to_the_loss():
    torch.manual_seed(0)
    n = 12
    valid = torch.ones(n)
    valid[::3] = 0

    def loss_and_grad(junk):
        new_logp = torch.randn(n, generator=torch.Generator().manual_seed(1)).requires_grad_()
        values = torch.randn(n, generator=torch.Generator().manual_seed(2)).requires_grad_()
        tensors = [torch.randn(n, generator=torch.Generator().manual_seed(s)) for s in range(3, 8)]
        old_logp, entropy, old_values, adv, returns = tensors
        for t in (old_logp, entropy, adv, returns):
            t[valid == 0] = junk
        loss, stats, _ = ppo_loss(new_logp, old_logp, entropy, values, old_values, adv, returns,
                                  valid, 0.2, 0.2, 0.5, 0.01)
        loss.backward()
        return loss.item(), new_logp.grad.clone(), stats

    loss_a, grad_a, stats_a = loss_and_grad(0.0)
    loss_b, grad_b, stats_b = loss_and_grad(1e6)
    assert loss_a == pytest.approx(loss_b)
    torch.testing.assert_close(grad_a, grad_b)
    assert torch.all(grad_a[valid == 0] == 0)
    assert stats_a["clipfrac"].item() == pytest.approx(stats_b["clipfrac"].item())


# -- the trainer --------------------------------------------------------------------------------


def test_run_epoch_returns_a_json_metrics_row():
    with small_trainer() as trainer:
        assert trainer.batch_size == 8 * 8 and trainer.num_envs == 8
        rows = [trainer.run_epoch() for _ in range(13)]  # 88-step episodes, logs every 32
    row = rows[-1]
    json.dumps(rows, allow_nan=False)
    assert set(row) == {"epoch", "global_step", "sps", "uptime", "learning_rate",
                        "losses", "timing", "timing_pct", "env"}  # grouped by who made them
    assert set(row["losses"]) == {"policy_loss", "value_loss", "entropy", "approx_kl",
                                  "clipfrac", "explained_variance"}
    sections = {"env", "forward", "copy", "learn", "misc"}
    assert set(row["timing"]) == set(row["timing_pct"]) == sections
    assert row["epoch"] == 13 and row["global_step"] == 13 * 64
    assert sum(row["timing_pct"].values()) == pytest.approx(100.0)
    ended = [r["env"] for r in rows if r["env"]["episodes"]]
    assert ended and all({"episode_return", "episode_length", "score"} <= set(r) for r in ended)
    assert trainer.progress["epoch"] == 13 and trainer.progress["metrics"] == row


def test_done_counts_agent_steps():
    with small_trainer(**{"train.total_timesteps": 100}) as trainer:
        assert not trainer.done
        trainer.run_epoch()
        assert not trainer.done
        trainer.run_epoch()
        assert trainer.done and trainer.global_step == 128


def test_safe_point_runs_while_collecting_and_learning_and_blocked_time_is_not_uptime():
    with small_trainer(**{"train.minibatch_size": 16}) as trainer:  # 4 minibatches per update
        calls = []

        def safe_point():
            calls.append(trainer.ppo.optimizer.state_dict()["state"] != {})
            if len(calls) == 1:
                time.sleep(0.3)

        trainer.safe_point = safe_point
        start = time.perf_counter()
        trainer.run_epoch()
        wall = time.perf_counter() - start
        assert len(calls) == 8 + 3  # 8 env steps, then between 4 minibatches
        assert trainer.uptime <= wall - 0.3


def test_set_hyperparameter_live_and_refused():
    with small_trainer() as trainer:
        value, when = trainer.set_hyperparameter("train.learning_rate", "0.003")
        assert value == 0.003 and trainer.config.train.learning_rate == 0.003
        assert "minibatch" in when
        value, when = trainer.set_hyperparameter("train.update-epochs", 2)
        assert value == 2 and "next update" in when
        with pytest.raises(ConfigError, match="train.hidden_size.*restart"):
            trainer.set_hyperparameter("train.hidden_size", 64)
        with pytest.raises(ConfigError, match="vec.num_envs.*restart"):
            trainer.set_hyperparameter("vec.num_envs", 4)
        with pytest.raises(ConfigError, match="out of bounds"):
            trainer.set_hyperparameter("train.gamma", 1.5)
        with pytest.raises(ConfigError, match="unknown config key"):
            trainer.set_hyperparameter("train.nope", 1)
        assert trainer.config.train.gamma != 1.5
        row = trainer.run_epoch()
        assert row["learning_rate"] <= 0.003


def test_learning_rate_is_cosine_annealed():
    with small_trainer(**{"train.total_timesteps": 256, "train.learning_rate": 0.01}) as t:
        rates = [t.run_epoch()["learning_rate"] for _ in range(4)]
    # the rate used at step s is 0.01 * (1 + cos(pi * s / 256)) / 2, s = 64, 128, 192, 256
    np.testing.assert_allclose(
        rates, [0.01 * (1 + np.cos(np.pi * s / 256)) / 2 for s in (64, 128, 192, 256)],
        atol=1e-9)


def _roundtrip(state):
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def test_resume_restores_live_hyperparameters_and_refuses_other_runs():
    with small_trainer() as first:
        first.set_hyperparameter("train.ent_coef", 0.05)
        first.run_epoch()
        state = _roundtrip(first.state_dict())
    with small_trainer() as resumed:
        resumed.load_state_dict(state)
        assert resumed.config.train.ent_coef == 0.05
    with small_trainer(**{"train.hidden_size": 32}) as other:
        with pytest.raises(ValueError, match="hidden_size"):
            other.load_state_dict(state)
    with small_trainer("cartpole") as other:
        with pytest.raises(ValueError, match="squared"):
            other.load_state_dict(state)


def test_load_policy_rebuilds_the_policy_from_a_checkpoint(tmp_path):
    with small_trainer(**{"train.policy": "lstm"}) as trainer:
        trainer.run_epoch()
        path = tmp_path / "ckpt.pt"
        torch.save(trainer.state_dict(), path)
        obs = trainer.vecenv.observations.copy()
        expected, _, _ = trainer.policy.step(torch.from_numpy(obs))
    policy, config = load_policy(path)
    assert config.env_name == "squared" and config.train.policy == "lstm"
    got, _, _ = policy.step(torch.from_numpy(obs))
    torch.testing.assert_close(got, expected)
    actions, state = policy.act(obs, deterministic=True)
    assert actions.shape == (8,) and state is not None
    (tmp_path / "junk.pt").write_bytes(b"")
    torch.save({"weights": 1}, tmp_path / "junk.pt")
    with pytest.raises(ValueError, match="not a trainer checkpoint"):
        load_policy(tmp_path / "junk.pt")


def test_renderer_facts_and_frames():
    with small_trainer() as trainer:
        assert trainer.frame_shape == (11, 11) and 2 in trainer.palette
        assert trainer.frame(3).shape == (11, 11)
        assert trainer.worker_pids == []
        with pytest.raises(IndexError, match="out of range"):
            trainer.frame(8)


def test_batch_settings_are_checked():
    with pytest.raises(ConfigError, match="smaller than num_agents"):
        small_trainer(**{"train.batch_size": 32})
    with pytest.raises(ConfigError, match="exceeds the batch"):
        small_trainer(**{"train.minibatch_size": 128})


def test_larger_batches_take_several_segments_per_agent():
    with small_trainer(**{"train.batch_size": 128}) as trainer:
        row = trainer.run_epoch()
        assert row["global_step"] == 128 and trainer.buffer.segments == 16


def _replay_checker(trainer, checked):
    """Wraps the learner's update: before it trains, replay every stored segment from its saved
    LSTM state with the policy that collected it, and compare with what collection stored."""
    original = trainer.ppo.update

    def update(data, *args, **kwargs):
        policy = trainer.policy
        starts = (data["terminals"] + data["truncations"]) > 0
        with torch.no_grad():
            params, values = policy.forward_sequence(
                data["observations"], (data["state_h"], data["state_c"]), starts)
            segments, horizon = data["values"].shape
            logprobs, _ = policy.actor.evaluate(
                params, data["actions"].reshape(segments * horizon, -1))
        torch.testing.assert_close(values.view(segments, horizon), data["values"],
                                   rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(logprobs.view(segments, horizon), data["logprobs"],
                                   rtol=1e-4, atol=1e-5)
        checked.append((bool(starts[:, 1:].any()), int(torch.count_nonzero(data["state_h"]))))
        return original(data, *args, **kwargs)

    trainer.ppo.update = update


def test_pooled_lstm_segments_replay_from_their_saved_state():
    # recv() returns half the agents at a time (env_ids not 0..n-1): the LSTM state and the
    # segments are gathered / scattered by row. Replaying each stored segment from its stored
    # start state must reproduce the values and log-probs computed while collecting.
    overrides = {"vec.backend": "multiprocessing", "vec.num_workers": 2, "vec.batch_size": 4,
                 "train.policy": "lstm", "train.horizon": 16, "train.minibatch_size": 32}
    checked = []
    with small_trainer("cartpole", **overrides) as trainer:
        assert len(trainer.worker_pids) == 2
        _replay_checker(trainer, checked)
        for _ in range(3):
            row = trainer.run_epoch()
        assert row["global_step"] >= 3 * 128 and trainer.buffer.ready
    assert len(checked) == 3
    assert any(episode_ends for episode_ends, _ in checked)  # resets inside segments replayed
    assert all(nonzero > 0 for _, nonzero in checked[1:])  # later batches start mid-episode


def test_box_actions_train_end_to_end_through_a_gymnasium_env():
    # Pendulum: continuous observations and a Box action; the trainer takes any vec env.
    from puffer_tui.engine.vec import make
    from puffer_tui.envs import from_gymnasium

    vecenv = make(from_gymnasium("Pendulum-v1"), num_envs=4, seed=0)
    config = load_config("squared", {**SMALL, "vec.num_envs": 4, "train.minibatch_size": 16})
    with Trainer(config, vecenv=vecenv) as trainer:
        assert trainer.policy.actor.kind == "box" and trainer.buffer.actions.dtype == torch.float32
        row = trainer.run_epoch()
    assert row["global_step"] == 32 and np.isfinite(row["losses"]["policy_loss"])


def test_device_auto_picks_cuda_only_when_present(monkeypatch):
    from puffer_tui.engine.algo import trainer as trainer_module

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert trainer_module.resolve_device("auto").type == "cpu"
    with pytest.raises(ConfigError, match="no CUDA device"):
        trainer_module.resolve_device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert trainer_module.resolve_device("auto").type == "cuda"


def test_reward_clamp_limits_the_rewards_the_advantages_see(monkeypatch):
    from puffer_tui.engine.algo import ppo

    seen = []
    original = ppo.compute_advantage

    def spy(values, rewards, *args, **kwargs):
        seen.append(rewards.abs().max().item())
        return original(values, rewards, *args, **kwargs)

    monkeypatch.setattr(ppo, "compute_advantage", spy)
    with small_trainer(env="cartpole", **{"train.reward_clamp": 0.25}) as trainer:
        trainer.run_epoch()  # cartpole pays 1 per step
        assert max(seen) == pytest.approx(0.25)
        seen.clear()
        trainer.set_hyperparameter("train.reward_clamp", 0)
        trainer.run_epoch()
        assert max(seen) == pytest.approx(1.0)


# -- masks of a multi-agent env -----------------------------------------------------------------

# cpr with little HP: agents starve or eat at different times, so masks change step by step.
DYING_AGENTS = {"env.width": 8, "env.height": 8, "env.num_agents": 4, "env.vision": 1,
                "env.max_hp": 4, "env.initial_grey": 12, "env.initial_yellow": 0,
                "env.grey_hp": 3, "env.max_ticks": 50, "vec.num_envs": 2}


def test_global_step_counts_the_agents_that_stepped():
    # The serial backend's recv() returns its live mask buffer, which send() overwrites with
    # the next step's masks: the count must be taken from the masks the step was taken with.
    with small_trainer("cpr", **DYING_AGENTS) as trainer:
        partly_masked = 0
        for _ in range(5):
            before = trainer.global_step
            trainer.run_epoch()
            stored = int(trainer.buffer.masks.sum().item())
            assert trainer.global_step - before == stored
            partly_masked += stored < trainer.buffer.masks.numel()
        assert partly_masked  # the env did mask agents out


def test_priorities_see_only_the_steps_of_live_agents(monkeypatch):
    from puffer_tui.engine.algo import minibatch_plan

    calls = []
    original = minibatch_plan.segment_priorities

    def spy(advantages, alpha, valid=None):
        calls.append(None if valid is None else valid.clone())
        return original(advantages, alpha, valid)

    monkeypatch.setattr(minibatch_plan, "segment_priorities", spy)
    with small_trainer("cpr", **DYING_AGENTS) as trainer:
        for _ in range(3):
            trainer.run_epoch()
            masks = trainer.buffer.masks.clone()
            masks[:, -1] = 0  # the last step has no advantage
            assert calls and all(v is not None and torch.equal(v, masks) for v in calls)
            calls.clear()
