"""The advantage kernels (C for CPU, torch for CUDA) against the plain numpy reference."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from puffer_tui.engine.advantage import (
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
