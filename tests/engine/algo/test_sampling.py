"""Prioritized segment sampling: priorities from the valid steps' advantages, and importance
weights that match how segments are actually drawn (measured by simulation)."""

import numpy as np
import pytest
import torch

from puffer_tui.engine.algo.sampling import annealed_beta, sample_segments, segment_priorities

SKEWED = torch.tensor([0.40, 0.25, 0.15, 0.10, 0.06, 0.04])


def _effective_weight(probs, count, beta, draws, seed=0):
    """Per segment, the average over minibatches of (times drawn * importance weight)."""
    gen = torch.Generator().manual_seed(seed)
    total = torch.zeros(len(probs), dtype=torch.float64)
    for _ in range(draws):
        idx, weights = sample_segments(probs, count, beta, generator=gen)
        total.index_add_(0, idx, weights.squeeze(1).double())
    return (total / draws).numpy()


def test_importance_weighted_draws_are_unbiased_for_uniform_sampling():
    # With beta = 1 the correction is complete: every segment must count, on average, as much
    # as under uniform sampling of `count` of the N segments, i.e. count / N each.
    count = 3
    got = _effective_weight(SKEWED, count, beta=1.0, draws=20_000)
    np.testing.assert_allclose(got, np.full(6, count / 6), atol=0.05)


def test_partial_correction_keeps_the_preference_order():
    # beta < 1 corrects only partly: likelier segments still weigh more, none more than drawn.
    got = _effective_weight(SKEWED, 3, beta=0.3, draws=5_000, seed=1)
    assert np.all(np.diff(got) < 0)
    assert got[0] < 3 * 0.40  # a plain draw would give count * p


def test_weights_average_one_so_prioritizing_keeps_the_update_scale():
    gen = torch.Generator().manual_seed(2)
    weights = torch.cat([sample_segments(SKEWED, 2, 1.0, generator=gen)[1]
                         for _ in range(20_000)])
    assert weights.mean().item() == pytest.approx(1.0, abs=0.03)


def test_whole_batch_minibatch_uses_every_segment_once_with_unit_weights():
    idx, weights = sample_segments(SKEWED, 6, beta=0.7)
    assert sorted(idx.tolist()) == list(range(6))
    torch.testing.assert_close(weights, torch.ones(6, 1))


def test_alpha_zero_is_uniform_without_replacement_and_unit_weights():
    adv = torch.randn(10, 5) * torch.arange(10).unsqueeze(1)
    probs = segment_priorities(adv, 0.0)
    torch.testing.assert_close(probs, torch.full((10,), 0.1))
    for _ in range(50):
        idx, weights = sample_segments(probs, 4, beta=0.7)
        assert len(set(idx.tolist())) == 4
        torch.testing.assert_close(weights, torch.ones(4, 1))


def test_priorities_follow_advantage_magnitude_and_weights_correct_them():
    adv = torch.zeros(4, 3)
    adv[1] = 1.0
    adv[3] = -3.0  # magnitudes per segment: 0, 3, 0, 9
    probs = segment_priorities(adv, 1.0)
    assert probs[3] / probs[1] == pytest.approx(3.0, rel=1e-4)
    assert probs[0] < 1e-6
    idx, weights = sample_segments(probs, 2, beta=0.5)
    assert set(idx.tolist()) <= {1, 3}
    expected = (4 * probs[idx]).pow(-0.5).unsqueeze(1)
    torch.testing.assert_close(weights, expected)
    counts = np.bincount(
        [sample_segments(probs, 1, 1.0)[0].item() for _ in range(2000)], minlength=4)
    assert counts[3] > 2 * counts[1] > 0 and counts[0] == counts[2] == 0


def test_masked_steps_do_not_raise_a_segments_priority():
    # Segment 0's only large advantages sit on steps of a dead agent (mask 0): they are not
    # training signal and must not make the segment likelier than segment 1.
    adv = torch.tensor([[50.0, 50.0, 1.0, 0.0],
                        [2.0, 2.0, 2.0, 0.0]])
    valid = torch.tensor([[0.0, 0.0, 1.0, 0.0],
                          [1.0, 1.0, 1.0, 0.0]])
    probs = segment_priorities(adv, 1.0, valid)
    assert probs[0] / probs[1] == pytest.approx(1.0 / 6.0, rel=1e-4)
    with pytest.raises(ValueError, match="valid has shape"):
        segment_priorities(adv, 1.0, valid[:, :2])


def test_beta_anneals_from_beta0_to_one():
    assert annealed_beta(0.2, 0.0) == pytest.approx(0.2)
    assert annealed_beta(0.2, 0.5) == pytest.approx(0.6)
    assert annealed_beta(0.2, 2.0) == pytest.approx(1.0)
