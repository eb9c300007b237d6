"""engine/algo/numpy_mlp.py against the reference: for every plain-MLP layout, NumpyLoss gives
the same loss statistics, ratios, values and parameter gradients as AutogradLoss (the PPO loss
of ppo_loss.py through autograd), both called through the one minibatch_loss.py interface."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from gymnasium import spaces

from puffer_tui.engine.algo.minibatch_loss import (
    AutogradLoss,
    NumpyLoss,
    clip_gradients,
    minibatch_gradients,
)
from puffer_tui.engine.algo.minibatch_plan import Minibatch
from puffer_tui.engine.algo.numpy_mlp import NumpyMLP
from puffer_tui.engine.algo.policy import Policy

OBS = spaces.Box(-5.0, 5.0, (5,), np.float32)
ACTIONS = {
    "discrete": spaces.Discrete(4),
    "multidiscrete": spaces.MultiDiscrete([3, 2]),
    "box": spaces.Box(-1.0, 1.0, (2,), np.float32),
}


def _policy(action: str, separate: bool, activation: str, exploration: str = "gaussian",
            init_log_std: float = 0.0) -> Policy:
    torch.manual_seed(0)
    policy = Policy(OBS, ACTIONS[action], hidden_size=16, activation=activation,
                    separate_critic=separate, exploration=exploration,
                    init_log_std=init_log_std)
    # the heads start near 0 (orthogonal gain 0.01): give them weight, so that ratios move
    with torch.no_grad():
        policy.actor.linear.weight.normal_(0, 0.5)
        policy.critic.weight.normal_(0, 0.5)
    return policy


def _batch(policy: Policy, rows: int = 6, cols: int = 4, seed: int = 1):
    generator = torch.Generator().manual_seed(seed)
    obs = torch.randn(rows, cols, 5, generator=generator)
    with torch.no_grad():
        params, _ = policy.forward_sequence(obs)
        actions, logprob = policy.actor.sample(params)
    n = rows * cols
    # the collected log-probs a little off, so that some ratios leave the clip range
    old_logprob = logprob + 0.3 * torch.randn(n, generator=generator)
    adv = torch.randn(rows, cols, generator=generator)
    values = torch.randn(rows, cols, generator=generator)
    valid = (torch.rand(rows, cols, generator=generator) > 0.2).float()
    return obs, actions.reshape(n, -1), old_logprob, adv, values, valid


def _gradients(implementation, policy, batch, weights, coefs):
    """(stats, ratios, values, gradients) of one minibatch through the interface."""
    obs, actions, old_logprob, adv, values, valid = batch
    rows, cols = valid.shape
    mb = Minibatch(None, weights, obs, actions.reshape(rows, cols, -1), old_logprob, None,
                   valid, adv, values, None)
    train = SimpleNamespace(**dict(zip(("clip_coef", "vf_clip_coef", "vf_coef", "ent_coef"),
                                       coefs, strict=True)))
    policy.zero_grad(set_to_none=True)
    stats, ratio, new_value = implementation(mb, train)
    grads = {name: p.grad.clone() for name, p in policy.named_parameters()}
    return ({k: float(v) for k, v in stats.items()}, torch.as_tensor(ratio),
            torch.as_tensor(new_value), grads)


def _autograd(policy, batch, weights, coefs):
    return _gradients(AutogradLoss(policy, torch.optim.SGD(policy.parameters(), lr=0.0)),
                      policy, batch, weights, coefs)


def _explicit(policy, batch, weights, coefs):
    return _gradients(NumpyLoss(NumpyMLP(policy)), policy, batch, weights, coefs)


LAYOUTS = [
    (action, separate, activation, exploration)
    for action, separate, activation in itertools.product(
        ACTIONS, (False, True), ("tanh", "relu", "gelu"))
    for exploration in (("gaussian", "gsde") if action == "box" else ("gaussian",))
]


@pytest.mark.parametrize("action,separate,activation,exploration", LAYOUTS)
@pytest.mark.parametrize("coefs", [(0.2, 0.0, 0.5, 0.0), (0.1, 0.2, 2.0, 0.01)],
                         ids=["no-value-clip", "value-clip+entropy"])
@pytest.mark.parametrize("weighted", [False, True])
def test_the_same_loss_and_gradients_as_autograd(action, separate, activation, exploration,
                                                  coefs, weighted):
    policy = _policy(action, separate, activation, exploration)
    batch = _batch(policy)
    weights = torch.rand(6, 1, generator=torch.Generator().manual_seed(3)) + 0.5 \
        if weighted else None
    stats_a, ratio_a, value_a, grads_a = _autograd(policy, batch, weights, coefs)
    stats_e, ratio_e, value_e, grads_e = _explicit(policy, batch, weights, coefs)
    assert set(grads_e) == set(grads_a)
    for name in grads_a:
        torch.testing.assert_close(grads_e[name], grads_a[name], rtol=1e-4, atol=1e-6,
                                   msg=lambda m, name=name: f"{name}: {m}")
    torch.testing.assert_close(ratio_e, ratio_a)
    torch.testing.assert_close(value_e, value_a)
    for key in stats_a:
        assert stats_e[key] == pytest.approx(float(stats_a[key]), rel=1e-5, abs=1e-6), key
    # the batch reaches both sides of the policy clip (the test covers the clipped branch)
    assert ((ratio_a - 1).abs() > coefs[0]).any() and ((ratio_a - 1).abs() < coefs[0]).any()


def test_log_std_beyond_its_bounds_gets_no_gradient():
    """clamp passes no gradient outside [LOG_STD_MIN, LOG_STD_MAX], as autograd."""
    policy = _policy("box", True, "tanh")
    with torch.no_grad():
        policy.actor.log_std.copy_(torch.tensor([-7.0, 0.5]))
    batch = _batch(policy)
    *_, grads_a = _autograd(policy, batch, None, (0.2, 0.0, 0.5, 0.01))
    *_, grads_e = _explicit(policy, batch, None, (0.2, 0.0, 0.5, 0.01))
    assert grads_e["actor.log_std"][0] == 0 and grads_e["actor.log_std"][1] != 0
    torch.testing.assert_close(grads_e["actor.log_std"], grads_a["actor.log_std"])


def test_step_matches_the_policy():
    for action, separate, activation, exploration in LAYOUTS:
        policy = _policy(action, separate, activation, exploration)
        obs = torch.randn(7, 5)
        with torch.no_grad():
            params, value, _ = policy.step(obs)
        explicit_params, explicit_value = NumpyMLP(policy).step(obs)
        torch.testing.assert_close(explicit_params, params)
        torch.testing.assert_close(explicit_value, value)


def test_gradients_made_after_a_step_in_inference_mode_can_be_clipped():
    """Collection calls step() in inference mode first; the gradient buffers made then must
    still take clipping's in-place scaling (it failed: 'Inplace update to inference tensor')."""
    policy = _policy("box", True, "tanh", "gsde")
    explicit = NumpyMLP(policy)
    with torch.inference_mode():
        explicit.step(torch.randn(3, 5))
    obs, actions, old_logprob, adv, values, valid = _batch(policy)
    explicit.loss_and_gradients(obs, actions, old_logprob, adv, values, valid, None,
                                0.2, 0.0, 0.5, 0.0)
    norm = clip_gradients(list(policy.parameters()), 1e-3)
    assert norm > 1e-3
    total = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in policy.parameters()]))
    assert float(total) == pytest.approx(1e-3, rel=1e-3)


def test_the_optimizer_zeroes_its_gradients_in_place():
    """zero_grad(set_to_none=False) on gradients that are views of one buffer (it raised
    "Can't detach views in-place")."""
    from puffer_tui.engine.algo.optimizers import FusedAdam

    policy = _policy("box", True, "tanh", "gsde")
    explicit = NumpyMLP(policy)
    explicit.loss_and_gradients(*_batch(policy), None, 0.2, 0.0, 0.5, 0.0)
    optimizer = FusedAdam(list(policy.parameters()), 1e-3, (0.9, 0.999), 1e-5)
    optimizer.step()
    optimizer.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.any() for p in policy.parameters())


def test_its_clipping_is_the_learners():
    policy = _policy("discrete", False, "gelu")
    explicit = NumpyMLP(policy)
    obs, actions, old_logprob, adv, values, valid = _batch(policy)
    explicit.loss_and_gradients(obs, actions, old_logprob, adv, values, valid, None,
                                0.2, 0.0, 0.5, 0.0)
    before = {name: p.grad.clone() for name, p in policy.named_parameters()}
    norm = explicit.clip_gradients(0.05)
    for p, grad in zip(policy.parameters(), before.values(), strict=True):
        p.grad = grad.clone()
    expected = clip_gradients(list(policy.parameters()), 0.05)
    assert norm == pytest.approx(float(expected), rel=1e-5)
    clipped = {name: p.grad.clone() for name, p in policy.named_parameters()}
    for p, grad in zip(policy.parameters(), before.values(), strict=True):
        p.grad = grad.clone()
    explicit.loss_and_gradients(obs, actions, old_logprob, adv, values, valid, None,
                                0.2, 0.0, 0.5, 0.0)
    explicit.clip_gradients(0.05)
    for name, p in policy.named_parameters():
        torch.testing.assert_close(p.grad, clipped[name])
    assert explicit.clip_gradients(1e9) == pytest.approx(0.05, rel=1e-4)  # under: unchanged


@pytest.mark.parametrize("squash", ["clip", "tanh"])
def test_collect_draws_what_the_policy_draws(squash):
    """The same actions, log-probs, values and env actions as Policy.step + sample + to_env,
    from the same seed: the torch stream is consumed alike (exact resume depends on it)."""
    for action, separate, activation, exploration in LAYOUTS:
        torch.manual_seed(0)
        policy = Policy(OBS, ACTIONS[action], hidden_size=16, activation=activation,
                        separate_critic=separate, exploration=exploration,
                        action_squash=squash)
        with torch.no_grad():
            policy.actor.linear.weight.normal_(0, 0.5)
        obs = torch.randn(6, 5)
        rows = np.array([0, 2, 3, 4, 5, 7])
        outputs = []
        for explicit in (False, True):
            noise = policy.actor.make_noise(8, 2)
            torch.manual_seed(5)
            if noise is not None:
                noise.resample()
            steps = []
            for _ in range(3):  # gSDE: new matrices after 2 steps of a row
                if explicit:  # numpy out, as the rollout buffer takes them
                    *drawn, env_actions = NumpyMLP(policy).collect(obs, noise, rows)
                    steps.append((*map(torch.from_numpy, drawn), env_actions))
                    continue
                with torch.inference_mode():
                    params, value, _ = policy.step(obs)
                    actions, logp = policy.actor.sample(params, noise=noise, rows=rows)
                    steps.append((actions, logp, value,
                                  policy.actor.to_env(actions).numpy()))
            outputs.append(steps)
        for torch_step, explicit_step in zip(*outputs, strict=True):
            label = f"{action}-{separate}-{activation}-{exploration}"
            torch.testing.assert_close(explicit_step[0], torch_step[0], msg=label)
            torch.testing.assert_close(explicit_step[1], torch_step[1], msg=label)
            torch.testing.assert_close(explicit_step[2], torch_step[2], msg=label)
            np.testing.assert_allclose(explicit_step[3], torch_step[3], rtol=1e-5, atol=1e-6,
                                       err_msg=label)


@pytest.mark.parametrize("exploration", ["gaussian", "gsde"])
def test_collection_follows_the_log_std_the_optimizer_wrote(exploration):
    """collect() keeps the log std's exp between steps; the fused Adam step writes the
    parameter without counting a version, and the next collection must still see it."""
    from puffer_tui.engine.algo.optimizers import FusedAdam

    policy = _policy("box", True, "tanh", exploration)
    explicit = NumpyMLP(policy)
    obs = torch.randn(4, 5)
    with torch.inference_mode():
        explicit.collect(obs)
    explicit.loss_and_gradients(*_batch(policy), None, 0.2, 0.0, 0.5, 0.01)
    FusedAdam(list(policy.parameters()), 0.5, (0.9, 0.999), 1e-5).step()
    outputs = []
    for fresh in (False, True):  # the same NumpyMLP, and one made after the step
        torch.manual_seed(7)
        with torch.inference_mode():
            outputs.append((explicit if not fresh else NumpyMLP(policy)).collect(obs))
    for kept, made in zip(*outputs, strict=True):
        np.testing.assert_array_equal(kept, made)


def test_other_policies_keep_autograd():
    grid = spaces.Box(0, 3, (4, 4), np.uint8)  # small-integer cells: one-hot encoded
    assert NumpyMLP.for_policy(Policy(grid, spaces.Discrete(3), 16)) is None
    lstm = Policy(OBS, spaces.Discrete(3), 16, recurrent=True)
    assert "LSTM" in NumpyMLP.reason_not(lstm)
    image = spaces.Box(0, 255, (40, 40, 3), np.uint8)
    assert "ImageEncoder" in NumpyMLP.reason_not(Policy(image, spaces.Discrete(3), 16))
    with pytest.raises(ValueError, match="not a plain MLP"):
        NumpyMLP(lstm)


SMALL_RUN = {"train.horizon": 16, "train.minibatch_size": 64, "train.hidden_size": 16,
             "train.total_timesteps": 100_000, "train.torch_threads": 1}


@pytest.mark.parametrize("overrides, explicit", [
    ({}, True),  # Pendulum-v1's preset: separate tanh MLPs, gSDE
    ({"train.compile": "true"}, False),  # the compiled loss goes through autograd
    ({"train.precision": "bfloat16"}, False),  # autocast is autograd's
    ({"train.numpy_math": "false"}, False),  # asked for the reference
])
def test_a_trainer_picks_numpy_where_it_applies(overrides, explicit):
    from puffer_tui.engine.algo.trainer import Trainer
    from puffer_tui.engine.shared.config import load_config

    config = load_config("gym:Pendulum-v1", {**SMALL_RUN, "vec.num_envs": 4, **overrides})
    with Trainer(config) as trainer:
        assert isinstance(trainer.ppo.gradients, NumpyLoss) == explicit
        assert (trainer._numpy_mlp is not None) == explicit == trainer.numpy_math
        if explicit:
            losses = trainer.run_epoch()["losses"]
            assert all(np.isfinite(v) for v in losses.values()) and losses["value_loss"] > 0
            for p in trainer.policy.parameters():
                assert p.grad is not None and torch.isfinite(p.grad).all()


def test_numpy_runs_only_where_it_applies_and_is_allowed():
    mlp = _policy("box", True, "tanh")
    optimizer = torch.optim.Adam(mlp.parameters())
    assert isinstance(minibatch_gradients(mlp, optimizer), NumpyLoss)
    assert isinstance(minibatch_gradients(mlp, optimizer, numpy_math=False), AutogradLoss)
    assert isinstance(minibatch_gradients(mlp, optimizer, precision="bfloat16"), AutogradLoss)
    lstm = Policy(OBS, ACTIONS["discrete"], hidden_size=16, recurrent=True)
    assert isinstance(minibatch_gradients(lstm, torch.optim.Adam(lstm.parameters())),
                      AutogradLoss)
