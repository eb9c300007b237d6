"""The advantage kernels (C for CPU, torch for CUDA) against the plain numpy reference."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from puffer_tui.engine.algo.advantage import (
    advantage_reference,
    advantage_torch,
    compute_advantage,
)


@st.composite
def rollouts(draw):
    segments = draw(st.integers(1, 6))
    horizon = draw(st.integers(1, 24))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    shape = (segments, horizon)
    boundary_rate = draw(st.sampled_from([0.0, 0.1, 0.5]))
    return dict(
        values=rng.normal(0, 3, shape).astype(np.float32),
        rewards=rng.normal(0, 1, shape).astype(np.float32),
        terminals=(rng.random(shape) < boundary_rate).astype(np.float32),
        truncations=(rng.random(shape) < boundary_rate).astype(np.float32),
        ratio=rng.uniform(0.2, 2.5, shape).astype(np.float32),
        gamma=draw(st.floats(0.0, 1.0)),
        gae_lambda=draw(st.floats(0.0, 1.0)),
        rho_clip=draw(st.floats(0.1, 3.0)),
        c_clip=draw(st.floats(0.1, 3.0)),
    )


def _args(r, convert):
    names = ("values", "rewards", "terminals", "truncations", "ratio")
    return [convert(r[n]) for n in names] + [r["gamma"], r["gae_lambda"], r["rho_clip"], r["c_clip"]]


@settings(max_examples=150, deadline=None)
@given(rollouts())
def test_c_kernel_matches_reference(r):
    expected = advantage_reference(*_args(r, lambda a: a))
    got = compute_advantage(*_args(r, torch.from_numpy)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-3)


@settings(max_examples=150, deadline=None)
@given(rollouts())
def test_torch_implementation_matches_reference(r):
    expected = advantage_reference(*_args(r, lambda a: a))
    got = advantage_torch(*_args(r, torch.from_numpy)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-3)


def test_plain_gae_without_boundaries():
    # ratio 1 with clips >= 1 is ordinary GAE; check one row by hand.
    v = np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)
    r = np.array([[9.0, 1.0, 1.0, 1.0]], np.float32)  # r[0] arrived before the row: unused
    zeros, ones = np.zeros_like(v), np.ones_like(v)
    gamma, lam = 0.9, 0.5
    d2 = 1 + gamma * 4 - 3
    d1 = 1 + gamma * 3 - 2
    d0 = 1 + gamma * 2 - 1
    a2 = d2
    a1 = d1 + gamma * lam * a2
    a0 = d0 + gamma * lam * a1
    got = compute_advantage(*map(torch.from_numpy, (v, r, zeros, zeros, ones)), gamma, lam, 1, 1)
    np.testing.assert_allclose(got.numpy(), [[a0, a1, a2, 0.0]], rtol=1e-6)


def test_terminal_stops_bootstrap_and_trace():
    v = np.array([[5.0, 5.0, 5.0]], np.float32)
    r = np.array([[0.0, 1.0, 0.0]], np.float32)
    term = np.array([[0, 1, 0]], np.float32)  # observation 1 starts a new episode
    zeros, ones = np.zeros_like(v), np.ones_like(v)
    got = compute_advantage(*map(torch.from_numpy, (v, r, term, zeros, ones)), 0.9, 1.0, 1, 1)
    # step 0 ended its episode with reward 1: advantage 1 - 5, nothing from step 1 onward
    assert got[0, 0].item() == pytest.approx(1.0 - 5.0)
    assert got[0, 1].item() == pytest.approx(0.0 + 0.9 * 5.0 - 5.0)


def test_truncation_bootstraps_from_last_value_but_cuts_trace():
    v = np.array([[2.0, 100.0, 7.0]], np.float32)
    r = np.array([[0.0, 1.0, 3.0]], np.float32)
    trunc = np.array([[0, 1, 0]], np.float32)
    zeros, ones = np.zeros_like(v), np.ones_like(v)
    got = compute_advantage(*map(torch.from_numpy, (v, r, zeros, trunc, ones)), 0.5, 1.0, 1, 1)
    # bootstrap with V[0] (the true final observation is gone), not V[1] of the next episode
    assert got[0, 0].item() == pytest.approx(1.0 + 0.5 * 2.0 - 2.0)


def test_vtrace_clips_the_importance_ratio():
    v = np.zeros((1, 2), np.float32)
    r = np.array([[0.0, 1.0]], np.float32)
    zeros = np.zeros_like(v)
    ratio = np.array([[3.0, 3.0]], np.float32)
    got = compute_advantage(*map(torch.from_numpy, (v, r, zeros, zeros, ratio)), 0.9, 0.9, 1.5, 1.0)
    assert got[0, 0].item() == pytest.approx(1.5)


# Hand-computed V-trace cases (numbers worked out on paper, not by the kernels' formula), run
# through all three implementations. rho_t = min(ratio_t, rho_clip), c_t = min(ratio_t, c_clip);
# the transition of step t is (V[t], r[t+1], done[t+1], V[t+1]).
IMPLEMENTATIONS = {
    "c": lambda *a: compute_advantage(*map(torch.from_numpy, a[:5]), *a[5:]).numpy(),
    "torch": lambda *a: advantage_torch(*map(torch.from_numpy, a[:5]), *a[5:]).numpy(),
    "reference": lambda *a: advantage_reference(*a),
}


def _row(*values):
    return np.array([values], np.float32)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_vtrace_clips_rho_and_c_separately_by_hand(impl):
    # gamma 0.9, lambda 0.8, rho_clip 1.5, c_clip 1.0, ratio 2, 0.5, 3:
    #   rho = 1.5, 0.5, 1.5        c = 1.0 (clipped from 2), 0.5, 1.0
    #   delta2 = 1.5 * (2 + 0.9*4 - 3) = 3.9                    adv2 = 3.9
    #   delta1 = 0.5 * (0 + 0.9*3 - 2) = 0.35                   adv1 = 0.35 + 0.72*0.5*3.9 = 1.754
    #   delta0 = 1.5 * (1 + 0.9*2 - 1) = 2.7                    adv0 = 2.7 + 0.72*1.0*1.754 = 3.96288
    v, r = _row(1, 2, 3, 4), _row(9, 1, 0, 2)
    zeros = np.zeros_like(v)
    got = IMPLEMENTATIONS[impl](v, r, zeros, zeros, _row(2.0, 0.5, 3.0, 7.0), 0.9, 0.8, 1.5, 1.0)
    np.testing.assert_allclose(got, [[3.96288, 1.754, 3.9, 0.0]], rtol=1e-5)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_c_clip_below_one_cuts_the_trace_but_not_the_td_error(impl):
    # ratio 1, rho_clip 2 (rho = 1), c_clip 0.3 (c = 0.3), gamma = lambda = 1, V = 0, r = 1:
    #   every delta is 1;  adv2 = 1,  adv1 = 1 + 0.3*1 = 1.3,  adv0 = 1 + 0.3*1.3 = 1.39
    v = np.zeros((1, 4), np.float32)
    r, ones = _row(0, 1, 1, 1), np.ones((1, 4), np.float32)
    got = IMPLEMENTATIONS[impl](v, r, v, v, ones, 1.0, 1.0, 2.0, 0.3)
    np.testing.assert_allclose(got, [[1.39, 1.3, 1.0, 0.0]], rtol=1e-5)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_terminal_cuts_a_clipped_trace_by_hand(impl):
    # gamma 0.5, lambda 1, both clips 1, ratio 0.5, 2, 2; observation 2 starts a new episode:
    #   t=2: delta2 = 1 * (1 + 0.5*1 - 1) = 0.5                 adv2 = 0.5
    #   t=1: terminal: delta1 = 1 * (2 + 0 - 1) = 1, no trace    adv1 = 1
    #   t=0: delta0 = 0.5 * (0.5 + 0.5*1 - 1) = 0               adv0 = 0 + 0.5*1*0.5*1 = 0.25
    # A second, independent row in the same batch: no boundaries, ratio 1 (plain TD(1)).
    v = np.array([[1, 1, 1, 1], [0, 0, 0, 0]], np.float32)
    r = np.array([[0, 0.5, 2, 1], [0, 1, 1, 1]], np.float32)
    term = np.array([[0, 0, 1, 0], [0, 0, 0, 0]], np.float32)
    ratio = np.array([[0.5, 2, 2, 1], [1, 1, 1, 1]], np.float32)
    got = IMPLEMENTATIONS[impl](v, r, term, np.zeros_like(v), ratio, 0.5, 1.0, 1.0, 1.0)
    # row 2: adv2 = 1, adv1 = 1 + 0.5*1 = 1.5, adv0 = 1 + 0.5*1.5 = 1.75
    np.testing.assert_allclose(got, [[0.25, 1.0, 0.5, 0.0], [1.75, 1.5, 1.0, 0.0]], rtol=1e-5)


def test_shape_mismatch_is_a_clear_error():
    a = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="rewards has shape"):
        compute_advantage(a, torch.zeros(2, 4), a, a, a, 0.9, 0.9, 1, 1)


def test_writes_into_out_and_accepts_non_contiguous_inputs():
    rng = np.random.default_rng(0)
    v = torch.from_numpy(rng.normal(size=(6, 5)).astype(np.float32)).t()  # non-contiguous
    r = torch.from_numpy(rng.normal(size=(5, 6)).astype(np.float32))
    z = torch.zeros(5, 6)
    out = torch.empty(5, 6)
    result = compute_advantage(v, r, z, z, torch.ones(5, 6), 0.99, 0.95, 1, 1, out=out)
    assert result is out
    expected = advantage_reference(v.numpy(), r.numpy(), z.numpy(), z.numpy(),
                                   np.ones((5, 6)), 0.99, 0.95, 1, 1)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4, atol=1e-5)
