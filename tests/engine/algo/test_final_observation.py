"""Truncation bootstraps from the value of the observation that ended the episode.

Envs keep that observation in `final_observations` before the same-step autoreset overwrites
it; the trainer evaluates it and the advantage kernel bootstraps the truncated step with it.
"""

import numpy as np
import pytest
import torch

from puffer_tui.engine.algo.advantage import (
    advantage_reference,
    advantage_torch,
    compute_advantage,
)
from puffer_tui.engine.algo.trainer import Trainer
from puffer_tui.engine.shared.config import load_config
from puffer_tui.envs import creator, from_gymnasium

# (env, the setting that truncates, extra settings): one agent row per truncation source.
TRUNCATING = [
    ("cartpole", "max_steps", {}),
    ("acrobot", "max_steps", {}),
    ("squared", "max_ticks", {}),
    ("breakout", "max_ticks", {}),
    ("cpr", "max_ticks", {}),
    ("snake", "max_steps", {"num_snakes": 1}),
]


@pytest.mark.parametrize("env, limit, extra", TRUNCATING)
def test_native_envs_keep_the_observation_that_ended_a_truncated_episode(env, limit, extra):
    # Two copies with the same seed and actions: one truncates after k steps, the other goes
    # on. The observation the first one kept must be the one the second one shows at step k.
    k = 6
    short = creator(env, **extra, **{limit: k})(num_envs=3, seed=7)
    long = creator(env, **extra, **{limit: 1000})(num_envs=3, seed=7)
    short.reset()
    long.reset()
    rng = np.random.default_rng(0)
    sizes = short.action_space.nvec
    checked = 0
    for t in range(1, k + 1):
        actions = (rng.random(sizes.shape) * sizes).astype(np.int32)
        short.step(actions)
        long.step(actions)
        truncated = short.truncations & ~short.terminals & long.masks
        if t < k:
            assert not short.truncations.any()
            continue
        assert truncated.any(), "no row was truncated at the limit"
        rows = np.flatnonzero(truncated)
        np.testing.assert_array_equal(short.final_observations[rows], long.observations[rows])
        # ...and it is not the first observation of the next episode, which the buffer shows
        assert not np.array_equal(short.observations[rows], long.observations[rows])
        checked += len(rows)
    assert checked
    short.close()
    long.close()


def test_gymnasium_adapter_keeps_the_final_observation():
    short = from_gymnasium("CartPole-v1", max_episode_steps=5)(num_envs=2, seed=3)
    long = from_gymnasium("CartPole-v1", max_episode_steps=50)(num_envs=2, seed=3)
    short.reset()
    long.reset()
    for _ in range(5):
        actions = np.array([0, 1], np.int32)
        short.step(actions)
        long.step(actions)
    assert short.truncations.all() and not long.truncations.any()
    np.testing.assert_array_equal(short.final_observations, long.observations)
    assert not np.array_equal(short.observations, long.observations)


def _one_truncation():
    # One segment of 4 steps; the episode is truncated on arrival of observation 2.
    values = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    rewards = torch.tensor([[0.0, 0.5, 0.25, 0.0]])
    terminals = torch.zeros(1, 4)
    truncations = torch.tensor([[0.0, 0.0, 1.0, 0.0]])
    final = torch.tensor([[0.0, 0.0, 10.0, 0.0]])  # V of the observation that ended it
    return values, rewards, terminals, truncations, torch.ones(1, 4), final


def test_advantage_bootstraps_a_truncated_step_from_its_final_value():
    values, rewards, terminals, truncations, ratio, final = _one_truncation()
    gamma, lam = 0.9, 0.8
    adv = compute_advantage(values, rewards, terminals, truncations, ratio, gamma, lam, 1.0,
                            1.0, final_values=final)
    # Step 1 ends the episode: r2 + gamma * V(final) - V1, and no trace across the cut.
    expected_1 = 0.25 + gamma * 10.0 - 2.0
    expected_0 = (0.5 + gamma * 2.0 - 1.0) + gamma * lam * expected_1
    expected_2 = 0.0 + gamma * 4.0 - 3.0
    expected = torch.tensor([[expected_0, expected_1, expected_2, 0.0]])
    torch.testing.assert_close(adv, expected)
    torch.testing.assert_close(advantage_torch(values, rewards, terminals, truncations, ratio,
                                               gamma, lam, 1.0, 1.0, final), expected)
    reference = advantage_reference(values.numpy(), rewards.numpy(), terminals.numpy(),
                                    truncations.numpy(), ratio.numpy(), gamma, lam, 1.0, 1.0,
                                    final.numpy())
    np.testing.assert_allclose(reference, expected.numpy(), rtol=1e-6)


def _recording(trainer):
    """Wrap the trainer's forward so that values are a known function of the observation, and
    record each step's final values with the final observations and states they came from."""
    steps = []
    forward = trainer._step_fn

    def value_of(obs):
        return obs.float().reshape(len(obs), -1) @ torch.arange(
            1.0, obs[0].numel() + 1.0)

    def known_values(obs, state, starts):
        params, _, new_state = forward(obs, state, starts)
        return params, value_of(obs), new_state

    trainer._step_fn = known_values
    store = trainer.buffer.store

    def recording_store(env_ids, obs, rewards, terminals, truncations, masks, *rest):
        final_values = rest[-1]
        truncated = np.flatnonzero(truncations & ~terminals)
        finals = trainer.vecenv.final_observations[np.asarray(env_ids)[truncated]].copy()
        steps.append((truncated, finals, obs.copy(), final_values))
        return store(env_ids, obs, rewards, terminals, truncations, masks, *rest)

    trainer.buffer.store = recording_store
    return steps, value_of


POOL = {"vec.backend": "multiprocessing", "vec.num_workers": 2, "vec.batch_size": 2,
        "vec.zero_copy": False}  # rows gathered from whichever worker finished


@pytest.mark.parametrize("vec", [{}, POOL], ids=["serial", "pool"])
def test_trainer_bootstraps_truncated_steps_from_the_final_observation(vec):
    config = load_config("cartpole", {
        "vec.num_envs": 4, "train.horizon": 16, "train.minibatch_size": 32,
        "train.hidden_size": 8, "train.torch_threads": 1, "env.max_steps": 5, **vec})
    with Trainer(config) as trainer:
        steps, value_of = _recording(trainer)
        trainer.run_epoch()
        truncations = trainer.buffer.truncations.numpy()
        final_values = trainer.buffer.final_values.numpy()
        values = trainer.buffer.values.numpy()
    seen = 0
    for truncated, finals, obs, recorded in steps:
        if len(truncated) == 0:
            assert recorded is None
            continue
        expected = value_of(torch.from_numpy(finals)).numpy()
        np.testing.assert_allclose(recorded[truncated], expected, rtol=1e-6)
        # the first observation of the next episode, which the old code effectively saw, differs
        assert not np.allclose(expected, value_of(torch.from_numpy(obs[truncated])).numpy())
        seen += len(truncated)
    assert seen >= 8  # cartpole truncates every agent after 5 steps: ~12 in 64 steps
    # stored where the truncation is reported, which is what the advantage kernel reads
    rows, cols = np.nonzero(truncations)
    assert len(rows) and np.all(final_values[rows, cols] != 0)
    assert not np.allclose(final_values[rows[cols > 0], cols[cols > 0]],
                           values[rows[cols > 0], cols[cols > 0] - 1])


def test_lstm_final_value_uses_the_state_before_the_reset():
    config = load_config("cartpole", {
        "vec.num_envs": 4, "train.horizon": 16, "train.minibatch_size": 32,
        "train.hidden_size": 8, "train.torch_threads": 1, "env.max_steps": 5,
        "train.policy": "lstm"})
    calls = []
    with Trainer(config) as trainer:
        forward, recv = trainer._step_fn, trainer.vecenv.recv

        def spy(obs, state, starts):
            calls.append(state[0].abs().sum(dim=1))
            return forward(obs, state, starts)

        def marking_recv():
            calls.append("recv")
            return recv()

        trainer._step_fn, trainer.vecenv.recv = spy, marking_recv
        trainer.run_epoch()
    # a step with a truncation runs two forwards: the final observations' first, from the
    # agents' carried (non-zero) state, then the step's own, from the state reset to zero
    # where an episode starts
    steps, current = [], None
    for call in calls:
        if isinstance(call, str):
            current = []
            steps.append(current)
        else:
            current.append(call)
    finals = [step[0] for step in steps if len(step) == 2]
    assert finals and all(bool((norms > 0).all()) for norms in finals)
    assert all(len(step) in (1, 2) for step in steps)
