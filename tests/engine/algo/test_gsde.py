"""gSDE (train.exploration gsde): the log-prob is that of the noise actually sampled, the
exploration matrices hold between resamples, the features are detached in the variance,
`deterministic` gives the mean, and a resumed run draws the matrices the run would have."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from gymnasium import spaces

from puffer_tui.engine.algo.distributions import ActionHead
from puffer_tui.engine.algo.policy import make_policy
from puffer_tui.engine.algo.sde_noise import SDENoise
from puffer_tui.engine.algo.trainer import Trainer
from puffer_tui.engine.shared.config import load_config
from puffer_tui.engine.shared.protocol import ENV

BOX = spaces.Box(-1.0, 1.0, (2,), np.float32)
OBS = spaces.Box(-5.0, 5.0, (3,), np.float32)


def _head(hidden=6, seed=0):
    torch.manual_seed(seed)
    head = ActionHead(BOX, hidden, init_log_std=-1.0, exploration="gsde")
    with torch.no_grad():  # a sigma that differs per feature and per action
        head.log_std.copy_(torch.linspace(-2.0, 0.5, hidden * 2).view(hidden, 2))
    return head


def test_the_log_prob_is_the_gaussian_of_the_state_dependent_noise():
    head = _head()
    features = torch.tensor([0.9, -0.3, 0.0, 0.5, -0.8, 0.2])
    mean = torch.tensor([0.3, -0.1])
    rows = 40_000
    params = torch.cat((mean, features)).expand(rows, -1).contiguous()
    noise = head.make_noise(rows, sample_freq=0)
    noise.resample()
    actions, logp = head.sample(params, noise=noise)
    # the std the log-prob uses, computed by hand: sqrt(sum_i f_i^2 sigma_ij^2)
    sigma = head.log_std.detach().double().exp()
    std = (features.double().pow(2) @ sigma.pow(2) + 1e-6).sqrt()
    # the actions f @ W over many W really have that spread (and that mean)
    torch.testing.assert_close(actions.double().std(0), std, rtol=0.03, atol=0.0)
    torch.testing.assert_close(actions.double().mean(0), mean.double(), rtol=0.0, atol=0.03)
    # and the log-prob is the diagonal Gaussian's density at the sampled action
    z = (actions.double() - mean.double()) / std
    expected = (-0.5 * z * z - std.log() - 0.5 * math.log(2 * math.pi)).sum(-1)
    torch.testing.assert_close(logp.double(), expected, rtol=1e-5, atol=1e-5)
    again, entropy = head.evaluate(params, actions)
    torch.testing.assert_close(again, logp)
    # entropy: minus the mean log-prob of its own samples
    assert float(-logp.detach().double().mean()) == pytest.approx(float(entropy[0].detach()), abs=0.03)
    # no features, no exploration but the floor: another state has another std
    other, _ = head.evaluate(torch.cat((mean, torch.zeros(6))).view(1, -1), mean.view(1, -1))
    assert float(other[0].detach()) == pytest.approx(2 * (-math.log(1e-3) - 0.5 * math.log(2 * math.pi)),
                                            rel=1e-4)


def test_the_noise_holds_for_sample_freq_steps_of_each_row():
    torch.manual_seed(1)
    sigma = torch.full((4, 1), 0.5)
    features = torch.randn(3, 4)
    noise = SDENoise(3, 4, 1, sample_freq=4)
    noise.resample()
    steps = [noise.perturbation(features, None, sigma) for _ in range(9)]
    for t in range(1, 9):  # steps 0-3 on one matrix, 4-7 on the next, 8 on a third
        same = torch.equal(steps[t], steps[t - 1])
        assert same == (t % 4 != 0), t
    # rows count their own steps: row 2 stepping alone does not age rows 0 and 1
    noise.resample()
    first = noise.perturbation(features, None, sigma)
    for _ in range(5):
        noise.perturbation(features[2:], np.array([2]), sigma)
    after = noise.perturbation(features, None, sigma)
    assert torch.equal(after[:2], first[:2]) and not torch.equal(after[2], first[2])
    # sample_freq 0: one matrix until the next collection's resample()
    held = SDENoise(3, 4, 1, sample_freq=0)
    held.resample()
    steps = [held.perturbation(features, None, sigma) for _ in range(20)]
    assert all(torch.equal(s, steps[0]) for s in steps)
    held.resample()
    assert not torch.equal(held.perturbation(features, None, sigma), steps[0])
    with pytest.raises(ValueError, match="sde_sample_freq must be >= 0"):
        SDENoise(3, 4, 1, sample_freq=-1)


def test_every_row_in_order_draws_what_the_rows_named_one_by_one_draw():
    """advance()'s path for every row in order (no gather; one normal_ over all matrices
    when all are due) against the general path (rows 0-2 of a noise of 4, gathered): the
    same matrices from the same stream, also after one row stepped alone."""
    start = torch.randn(3, 4, 2, generator=torch.Generator().manual_seed(0))
    drawn = []
    for total in (3, 4):
        noise = SDENoise(total, 4, 2, sample_freq=2)
        noise.eps[:3] = start
        torch.manual_seed(3)
        steps = [noise.advance(3, None).clone() for _ in range(5)]
        noise.advance(1, np.array([1]))  # row 1 alone: the rows fall due apart
        steps += [noise.advance(3, [0, 1, 2]).clone() for _ in range(4)]
        drawn.append(torch.stack(steps))
    assert torch.equal(drawn[0], drawn[1])
    assert not torch.equal(drawn[0][0], drawn[0][-1])  # new matrices were drawn
    with pytest.raises(ValueError, match="out of range"):
        SDENoise(3, 4, 2).advance(2, np.array([0, 3]))


def test_the_variance_trains_sigma_not_the_features():
    config = load_config("gym:Pendulum-v1", {"train.exploration": "gsde",
                                             "train.hidden_size": 8}).train
    policy = make_policy(OBS, BOX, config)
    assert tuple(policy.actor.log_std.shape) == (8, 2)
    with torch.no_grad():  # the mean no longer depends on the hidden layers ...
        policy.actor.linear.weight.zero_()
    params, _, _ = policy.step(torch.randn(16, 3))
    logp, entropy = policy.actor.evaluate(params, torch.randn(16, 2))
    (logp.sum() + entropy.sum()).backward()
    # ... and the features are detached: no gradient reaches them through the variance
    assert float(policy.hidden.weight.grad.abs().max()) == 0.0
    assert float(policy.actor.log_std.grad.abs().max()) > 0.0


def test_deterministic_actions_are_the_mean_and_sampled_ones_explore():
    config = load_config("gym:Pendulum-v1", {"train.exploration": "gsde"}).train
    policy = make_policy(OBS, BOX, config)
    obs = np.random.default_rng(0).uniform(-1, 1, (5, 3)).astype(np.float32)
    mean = policy.actor.to_env(policy.step(torch.as_tensor(obs))[0][:, :2]).detach().numpy()
    np.testing.assert_array_equal(policy.act(obs, deterministic=True)[0], mean)
    assert not np.array_equal(policy.act(obs)[0], mean)


def test_gsde_is_for_box_actions():
    with pytest.raises(ValueError, match="gsde is for Box actions"):
        ActionHead(spaces.Discrete(3), 8, exploration="gsde")
    with pytest.raises(ValueError, match="exploration must be one of"):
        ActionHead(BOX, 8, exploration="sde")


PENDULUM = {"vec.backend": "serial", "vec.num_envs": 4, "train.horizon": 16,
            "train.minibatch_size": 32, "train.hidden_size": 16, "train.torch_threads": 1,
            "train.exploration": "gsde", "train.sde_sample_freq": 4}


@pytest.mark.filterwarnings("ignore:resume is not exact")  # Gymnasium envs: said, expected
def test_a_resumed_run_draws_the_matrices_the_run_would_have():
    config = load_config("gym:Pendulum-v1", PENDULUM)
    with Trainer(config) as trainer:
        assert trainer.buffer.exploration.rows == 4
        trainer.run_epoch()
        state = trainer.state_dict()
        # steps draw new matrices every 4: the collection's matrices follow the run's stream
        trainer.buffer.start_batch()
        straight = trainer.buffer.exploration.eps.clone()
    with Trainer(load_config("gym:Pendulum-v1", PENDULUM)) as resumed:
        resumed.load_state_dict(state)
        resumed.buffer.start_batch()
        torch.testing.assert_close(resumed.buffer.exploration.eps, straight, rtol=0, atol=0)
        resumed.run_epoch()  # and collects and learns with them
        assert resumed.policy.actor.log_std.shape == (16, 1)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_held_noise_reaches_the_mountain_car_flag_where_white_noise_does_not(seed):
    # MountainCarContinuous-v0: 999 steps an episode, so in one collection of 128 steps per env
    # an episode ends only at the flag. The untrained policy's white noise (std 1) cannot pump
    # the car's energy up; a matrix held for the collection is a state-dependent push that
    # often can (SB3's reason to run the zoo's MountainCar with gSDE).
    ends = {}
    for exploration in ("gsde", "gaussian"):
        config = load_config("gym:MountainCarContinuous-v0", {
            "vec.backend": "serial", "train.seed": seed, "train.exploration": exploration,
            "train.init_log_std": 0.0, "train.update_epochs": 1, "train.torch_threads": 1,
            "train.sde_sample_freq": 0, "train.horizon": 128})  # the family's collection
        with Trainer(config) as trainer:
            ends[exploration] = trainer.run_epoch()[ENV]
    assert ends["gsde"]["episodes"] >= 1 and ends["gsde"]["episode_return"] > 90, ends
    assert ends["gaussian"]["episodes"] == 0, ends


def test_gsde_on_discrete_actions_is_refused_in_one_line_before_a_run_exists(tmp_path, capsys):
    from puffer_tui.app.cli import main

    runs = tmp_path / "runs"
    code = main(["train", "cartpole", "--headless", "--runs-dir", str(runs),
                 "--train.exploration", "gsde"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "train.exploration gsde is for Box actions" in err and "Discrete(2)" in err
    assert "--train.exploration gaussian" in err
    assert not runs.exists() or not any(runs.iterdir())
