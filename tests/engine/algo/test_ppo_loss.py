"""The reference PPO loss (engine/algo/ppo_loss.py) on numbers worked out by hand: the clipped
surrogate takes the pessimistic side, the value clip keeps the larger error, masked rows add
nothing, and advantages are normalized over valid steps only."""

import math

import pytest
import torch

from puffer_tui.engine.algo.ppo_loss import normalize_advantages, ppo_loss


def _loss(new_logprob, advantages, valid=None, *, new_value=None, old_value=None,
          returns=None, clip=0.2, vf_clip=0.0, vf_coef=0.5, ent_coef=0.0, entropy=None):
    n = len(advantages)
    t = lambda x, fill: torch.tensor(x if x is not None else [fill] * n)  # noqa: E731
    return ppo_loss(torch.tensor(new_logprob), torch.zeros(n), t(entropy, 0.0),
                    t(new_value, 0.0), t(old_value, 0.0), torch.tensor(advantages),
                    t(returns, 0.0), t(valid, 1.0), clip, vf_clip, vf_coef, ent_coef)


def test_the_surrogate_is_clipped_on_the_side_that_would_overclaim():
    up = math.log(1.5)  # ratio 1.5, beyond 1 + 0.2
    # a positive advantage gains only up to ratio 1.2; a negative one pays the full 1.5
    loss, stats, ratio = _loss([up, up], [1.0, -1.0])
    assert ratio.tolist() == pytest.approx([1.5, 1.5])
    assert float(stats["policy_loss"]) == pytest.approx((-1.2 + 1.5) / 2)
    assert float(stats["clipfrac"]) == 1.0
    inside, stats, _ = _loss([math.log(1.1)], [2.0])
    assert float(stats["policy_loss"]) == pytest.approx(-2.2) and float(stats["clipfrac"]) == 0


def test_the_value_clip_keeps_the_larger_error():
    # new value 1.0 from old 0.0 and a return of 0.5: unclipped error 0.25; clipped to 0.1,
    # error 0.16; the loss keeps 0.25 (0.5 * 0.25)
    _, stats, _ = _loss([0.0], [0.0], new_value=[1.0], old_value=[0.0], returns=[0.5],
                        vf_clip=0.1)
    assert float(stats["value_loss"]) == pytest.approx(0.5 * 0.25)
    # return 2.0: unclipped error 1.0, clipped (0.1) error 3.61: the clipped one counts
    _, stats, _ = _loss([0.0], [0.0], new_value=[1.0], old_value=[0.0], returns=[2.0],
                        vf_clip=0.1)
    assert float(stats["value_loss"]) == pytest.approx(0.5 * 1.9 ** 2)


def test_masked_rows_contribute_nothing():
    loss, stats, _ = _loss([0.3, 5.0], [1.0, 100.0], [1.0, 0.0], new_value=[0.0, 9.0],
                           returns=[1.0, -9.0], entropy=[0.7, 50.0], ent_coef=0.01)
    alone, alone_stats, _ = _loss([0.3], [1.0], new_value=[0.0], returns=[1.0],
                                  entropy=[0.7], ent_coef=0.01)
    assert float(loss) == pytest.approx(float(alone))
    for key in alone_stats:
        assert float(stats[key]) == pytest.approx(float(alone_stats[key])), key


def test_advantages_are_normalized_over_the_valid_steps_only():
    adv = torch.tensor([1.0, 3.0, 1000.0])
    valid = torch.tensor([1.0, 1.0, 0.0])
    out = normalize_advantages(adv, valid)
    assert out[2] == 0.0
    # mean 2, sample std over 2 valid steps: sqrt(((1-2)^2 + (3-2)^2) / 2) = 1
    assert out[:2].tolist() == pytest.approx([-1.0, 1.0], abs=1e-6)
