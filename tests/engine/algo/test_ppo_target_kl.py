"""`train.target_kl`: SB3's early stop. Once a minibatch's approx_kl is over 1.5x the target,
the update's remaining minibatches (and that one's step) are skipped, and the row says how
many minibatches stepped."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from puffer_tui.engine.algo.minibatch_loss import NumpyLoss, minibatch_gradients
from puffer_tui.engine.algo.policy import Policy
from puffer_tui.engine.algo.ppo import PPO, kl_too_far
from puffer_tui.engine.shared.config_fields import TrainConfig

SEGMENTS, HORIZON = 8, 8


def _train(**changes) -> TrainConfig:
    base = dict(minibatch_size=16, update_epochs=4, shuffle_steps=True, prio_alpha=0.0,
                refresh_advantages=False, learning_rate=0.05, anneal_lr=False,
                total_timesteps=1000)
    return TrainConfig(**{**base, **changes})


def _data() -> dict:
    rng = np.random.default_rng(0)
    shape = (SEGMENTS, HORIZON)
    return {
        "observations": torch.from_numpy(rng.normal(size=(*shape, 3)).astype(np.float32)),
        "actions": torch.from_numpy(rng.integers(0, 2, size=(*shape, 1))),
        "logprobs": torch.full(shape, float(np.log(0.5))),
        "values": torch.zeros(shape),
        "rewards": torch.from_numpy(rng.normal(size=shape).astype(np.float32)),
        "terminals": torch.zeros(shape), "truncations": torch.zeros(shape),
        "masks": torch.ones(shape),
    }


def _update(train: TrainConfig, numpy_math: bool) -> tuple[dict, int]:
    """The update's row, and how many optimizer steps it took."""
    torch.manual_seed(0)
    box = spaces.Box(-10.0, 10.0, (3,), np.float32)
    policy = Policy(box, spaces.Discrete(2), hidden_size=8, activation="tanh")
    optimizer = torch.optim.Adam(policy.parameters(), lr=train.learning_rate)
    steps = []
    optimizer.register_step_post_hook(lambda *_: steps.append(1))
    gradients = minibatch_gradients(policy, optimizer, numpy_math=numpy_math)
    assert isinstance(gradients, NumpyLoss) == numpy_math
    learner = PPO(optimizer, gradients)
    data = _data()
    with torch.no_grad():  # the collecting policy's own log-probs: the first KL is 0
        rows = SEGMENTS * HORIZON
        params, _ = policy.forward_sequence(data["observations"].reshape(rows, 1, 3), None,
                                            torch.zeros(rows, 1, dtype=torch.bool))
        logprob, _ = policy.actor.evaluate(params, data["actions"].reshape(rows, -1))
    data["logprobs"] = logprob.reshape(SEGMENTS, HORIZON)
    return learner.update(data, lambda: train, 0, lambda: None), len(steps)


@pytest.mark.parametrize("numpy_math", [False, True], ids=["autograd", "numpy"])
def test_off_runs_every_planned_minibatch(numpy_math):
    row, steps = _update(_train(), numpy_math)
    assert row["minibatches"] == steps == 4 * (SEGMENTS * HORIZON // 16)


@pytest.mark.parametrize("numpy_math", [False, True], ids=["autograd", "numpy"])
def test_a_kl_over_the_target_stops_the_update(numpy_math):
    planned = 4 * (SEGMENTS * HORIZON // 16)
    free, _ = _update(_train(), numpy_math)
    assert free["approx_kl"] > 0.0
    # a target far below what the policy's steps reach: stopped after the first step
    # (the first minibatch's KL is 0, the policy unchanged since collection)
    row, steps = _update(_train(target_kl=1e-9), numpy_math)
    assert row["minibatches"] == steps == 1 < planned
    # a loose target never trips
    row, steps = _update(_train(target_kl=10.0), numpy_math)
    assert row["minibatches"] == steps == planned


def test_kl_is_compared_at_one_and_a_half_times_the_target():
    train = _train(target_kl=0.01)
    assert not kl_too_far({"approx_kl": torch.tensor(0.0149)}, train)
    assert kl_too_far({"approx_kl": torch.tensor(0.0151)}, train)
    assert not kl_too_far({"approx_kl": 1.0}, _train())  # 0: off
