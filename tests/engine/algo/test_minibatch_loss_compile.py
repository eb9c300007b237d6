"""`train.compile`: AutogradLoss compiles its whole minibatch loss (the policy's forward, the
log-probabilities, the advantages' normalization and the PPO loss) into one graph. It must
learn what the eager loss learns, and a machine where the compiler cannot build trains on
eagerly, saying so."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from gymnasium import spaces

from puffer_tui.engine.algo.minibatch_loss import AutogradLoss
from puffer_tui.engine.algo.policy import Policy
from puffer_tui.engine.algo.ppo import PPO
from puffer_tui.engine.shared.config_fields import TrainConfig

SEGMENTS, HORIZON = 4, 8


def _train() -> TrainConfig:
    return TrainConfig(minibatch_size=16, update_epochs=2, shuffle_steps=True, prio_alpha=0.0,
                       refresh_advantages=False, learning_rate=1e-3, anneal_lr=False,
                       vf_clip_coef=0.0, ent_coef=0.01, total_timesteps=1000)


def _data() -> dict:
    rng = np.random.default_rng(0)
    shape = (SEGMENTS, HORIZON)

    def normal(*tail):
        return torch.from_numpy(rng.normal(size=(*shape, *tail)).astype(np.float32))

    return {"observations": normal(3), "actions": normal(2), "logprobs": normal() - 2.0,
            "values": normal(), "rewards": normal(),
            "terminals": torch.from_numpy((rng.random(shape) < 0.1).astype(np.float32)),
            "truncations": torch.zeros(shape), "masks": torch.ones(shape)}


def _learner(compile_loss: bool) -> PPO:
    torch.manual_seed(0)
    policy = Policy(spaces.Box(-10.0, 10.0, (3,), np.float32),
                    spaces.Box(-1.0, 1.0, (2,), np.float32), hidden_size=16,
                    separate_critic=True, activation="tanh")
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
    return PPO(optimizer, AutogradLoss(policy, optimizer, compile_loss=compile_loss))


def _update(learner: PPO) -> dict:
    torch.manual_seed(1)  # the same permutations on both sides
    train = _train()
    return learner.update(_data(), lambda: train, 0, lambda: None)


def test_the_compiled_loss_learns_what_the_eager_loss_learns():
    eager, compiled = _learner(False), _learner(True)
    eager_row, compiled_row = _update(eager), _update(compiled)
    assert compiled.gradients._compiled is not None  # it did not fall back to eager
    for (name, a), b in zip(eager.gradients.policy.named_parameters(),
                            compiled.gradients.policy.parameters()):
        assert not torch.equal(a, _learner(False).gradients.policy.get_parameter(name)), name  # moved
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5, msg=name)
    for key in ("policy_loss", "value_loss", "entropy", "approx_kl"):
        assert compiled_row[key] == pytest.approx(eager_row[key], rel=1e-3, abs=1e-6), key


def test_a_compiler_that_cannot_build_falls_back_to_eager_with_a_warning(monkeypatch):
    learner = _learner(True)

    def cannot_build(*args):
        raise torch._dynamo.exc.BackendCompilerFailed(
            "inductor", RuntimeError("InvalidCxxCompiler: No working C++ compiler found"), None)

    monkeypatch.setattr(learner.gradients, "_compiled", cannot_build)
    expected = ("train.compile: torch.compile could not build the loss (RuntimeError: "
                "InvalidCxxCompiler: No working C++ compiler found); training on without it")
    with pytest.warns(UserWarning, match=re.escape(expected)):
        row = _update(learner)
    assert learner.gradients._compiled is None
    eager = _learner(False)
    assert row == _update(eager)  # the same update, done eagerly
    for a, b in zip(eager.gradients.policy.parameters(), learner.gradients.policy.parameters()):
        assert torch.equal(a, b)
