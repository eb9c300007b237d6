"""Policies: shapes for every action space, the one-hot encoder, LSTM state resets."""

import numpy as np
import pytest
import torch
from gymnasium import spaces

from puffer_tui.engine.algo.policy import Policy, make_policy
from puffer_tui.engine.shared.config import TrainConfig

GRID = spaces.Box(0, 2, (9,), np.uint8)
FLOATS = spaces.Box(-1.0, 1.0, (3,), np.float32)
ACTION_SPACES = {
    "discrete": spaces.Discrete(5),
    "multidiscrete": spaces.MultiDiscrete([3, 4, 2]),
    "box": spaces.Box(-1.0, 2.0, (2,), np.float32),
}


def _obs(space, n, seed=0):
    rng = np.random.default_rng(seed)
    if space.dtype == np.uint8:
        return rng.integers(0, 3, (n, *space.shape)).astype(np.uint8)
    return rng.uniform(-1, 1, (n, *space.shape)).astype(np.float32)


@pytest.mark.parametrize("recurrent", [False, True], ids=["mlp", "lstm"])
@pytest.mark.parametrize("kind", list(ACTION_SPACES))
@pytest.mark.parametrize("obs_space", [GRID, FLOATS], ids=["grid", "floats"])
def test_shapes_for_every_action_space(kind, recurrent, obs_space):
    action_space = ACTION_SPACES[kind]
    policy = Policy(obs_space, action_space, hidden_size=16, recurrent=recurrent)
    obs = _obs(obs_space, 7)
    actions, state = policy.act(obs)
    assert actions.shape == (7, *action_space.shape)
    assert all(action_space.contains(a) for a in actions.astype(action_space.dtype))
    assert (state is None) != recurrent
    if recurrent:
        assert state[0].shape == (7, 16) and state[1].shape == (7, 16)

    # log-probs from sampling equal those from evaluating the same actions
    obs_t = torch.from_numpy(obs)
    params, values, _ = policy.step(obs_t)
    sampled, logp = policy.actor.sample(params)
    again, entropy = policy.actor.evaluate(params, sampled)
    torch.testing.assert_close(logp, again)
    assert values.shape == (7,) and entropy.shape == (7,)
    assert torch.all(entropy > 0) if kind != "box" else entropy.shape == (7,)

    # sequences: [B, T] -> B*T rows, row b*T + t
    seq = torch.from_numpy(_obs(obs_space, 2 * 4)).view(2, 4, *obs_space.shape)
    seq_params, seq_values = policy.forward_sequence(seq)
    assert seq_params.shape[0] == 8 and seq_values.shape == (8,)


def test_deterministic_actions_are_the_mode():
    policy = Policy(FLOATS, spaces.Discrete(4), hidden_size=8)
    obs = _obs(FLOATS, 5)
    a1, _ = policy.act(obs, deterministic=True)
    params, _, _ = policy.step(torch.from_numpy(obs))
    np.testing.assert_array_equal(a1, params.argmax(-1).numpy())


def test_box_actions_are_clipped_to_bounds_for_the_env():
    policy = Policy(FLOATS, ACTION_SPACES["box"], hidden_size=8)
    with torch.no_grad():
        policy.actor.log_std.fill_(3.0)  # wide noise: many samples leave the box
    actions, _ = policy.act(_obs(FLOATS, 200))
    assert actions.min() >= -1.0 and actions.max() <= 2.0


def test_categorical_sampling_follows_the_distribution():
    torch.manual_seed(0)
    policy = Policy(FLOATS, spaces.Discrete(3), hidden_size=8)
    logits = torch.log(torch.tensor([[0.7, 0.2, 0.1]])).repeat(20000, 1)
    actions, _ = policy.actor.sample(logits)
    freq = np.bincount(actions.numpy(), minlength=3) / 20000
    np.testing.assert_allclose(freq, [0.7, 0.2, 0.1], atol=0.02)


def test_small_integer_grids_are_one_hot_encoded():
    policy = Policy(GRID, spaces.Discrete(2), hidden_size=8)
    assert policy.encoder.one_hot_values == 3
    assert policy.encoder.table.shape == (9 * 2, 8)  # value 0 is the bias
    floats = Policy(FLOATS, spaces.Discrete(2), hidden_size=8)
    assert floats.encoder.one_hot_values == 0 and floats.encoder.table.shape == (3, 8)


def test_lstm_state_is_reset_where_an_episode_starts():
    torch.manual_seed(0)
    policy = Policy(FLOATS, spaces.Discrete(2), hidden_size=8, recurrent=True)
    obs = torch.from_numpy(_obs(FLOATS, 4))
    _, _, state = policy.step(obs)  # some non-zero state
    starts = torch.tensor([True, False, True, False])
    params, _, _ = policy.step(obs, state, starts)
    fresh, _, _ = policy.step(obs, None)
    kept, _, _ = policy.step(obs, state)
    torch.testing.assert_close(params[starts], fresh[starts])
    torch.testing.assert_close(params[~starts], kept[~starts])
    assert not torch.allclose(kept[starts], fresh[starts])


def test_sequence_replay_equals_stepping_with_resets():
    torch.manual_seed(1)
    policy = Policy(FLOATS, spaces.Discrete(3), hidden_size=8, recurrent=True)
    batch, horizon = 3, 6
    obs = torch.from_numpy(_obs(FLOATS, batch * horizon)).view(batch, horizon, 3)
    starts = torch.zeros(batch, horizon, dtype=torch.bool)
    starts[0, 2] = starts[1, 4] = starts[2, 0] = True
    h0 = torch.randn(batch, 8), torch.randn(batch, 8)
    seq_params, seq_values = policy.forward_sequence(obs, h0, starts)
    state, outs, vals = h0, [], []
    for t in range(horizon):
        p, v, state = policy.step(obs[:, t], state, starts[:, t])
        outs.append(p)
        vals.append(v)
    torch.testing.assert_close(seq_params, torch.stack(outs, 1).reshape(batch * horizon, -1))
    torch.testing.assert_close(seq_values, torch.stack(vals, 1).reshape(-1))


def test_make_policy_reads_the_train_config():
    policy = make_policy(GRID, spaces.Discrete(5), TrainConfig(policy="lstm", hidden_size=32))
    assert policy.recurrent and policy.hidden_size == 32
    assert make_policy(GRID, spaces.Discrete(5), TrainConfig()).recurrent is False


def test_bad_inputs_are_named():
    policy = Policy(FLOATS, spaces.Discrete(2), hidden_size=8)
    with pytest.raises(ValueError, match=r"expected \(N, 3\)"):
        policy.act(np.zeros((2, 4), np.float32))
    with pytest.raises(TypeError, match="unsupported action space"):
        Policy(FLOATS, spaces.Text(4), hidden_size=8)
    with pytest.raises(TypeError, match="Box space"):
        Policy(spaces.Discrete(3), spaces.Discrete(2), hidden_size=8)


@pytest.mark.parametrize("sequence_resets", [True, False])
def test_fused_sequence_path_equals_stepping(sequence_resets):
    # No resets inside the sequences (or resets switched off): one fused LSTM call, which must
    # agree with stepping the cell (a reset at t = 0 is always applied to the start state).
    torch.manual_seed(2)
    policy = Policy(FLOATS, spaces.Discrete(3), hidden_size=8, recurrent=True,
                    sequence_resets=sequence_resets)
    batch, horizon = 3, 5
    obs = torch.from_numpy(_obs(FLOATS, batch * horizon)).view(batch, horizon, 3)
    starts = torch.zeros(batch, horizon, dtype=torch.bool)
    starts[1, 0] = True
    if not sequence_resets:
        starts[2, 3] = True  # ignored inside the sequence when resets are off
    h0 = torch.randn(batch, 8), torch.randn(batch, 8)
    seq_params, _ = policy.forward_sequence(obs, h0, starts)
    state, outs = policy.reset_state(h0, starts[:, 0]), []
    for t in range(horizon):
        p, _, state = policy.step(obs[:, t], state)
        outs.append(p)
    torch.testing.assert_close(seq_params, torch.stack(outs, 1).reshape(batch * horizon, -1))


@pytest.mark.parametrize("dtype", [np.uint8, np.int16], ids=["uint8-kernel", "int16-embedding"])
@pytest.mark.parametrize("nonzero_rate", [0.05, 0.9], ids=["sparse", "dense"])
def test_one_hot_row_sums_equal_the_matmul(nonzero_rate, dtype):
    # the CPU row-sum paths (sparse grids: the C kernels for uint8 cells, embedding_bag for
    # other integers) and the matmul are one function: same values, same gradients of the
    # table and the bias; dense grids take the matmul. 30 cells: 3 words of 8 and a tail of 6.
    from puffer_tui.engine.algo.policy import ObservationEncoder

    torch.manual_seed(0)
    space = spaces.Box(0, 3, (6, 5), dtype)
    encoder = ObservationEncoder(space, 8)
    rng = np.random.default_rng(0)
    grid = rng.integers(1, 4, (7, 6, 5)) * (rng.random((7, 6, 5)) < nonzero_rate)
    grid[2] = 0  # a row with no non-zero cell at all
    grid[3, -1, -1] = 3  # the row's last cell, in the tail after the 8-cell words
    obs = torch.from_numpy(grid.astype(dtype))
    flat = obs.reshape(7, -1)
    one_hot = torch.cat([flat == v for v in (1, 2, 3)], 1).float()
    expected = torch.nn.functional.gelu(one_hot @ encoder.table + encoder.bias)
    got = encoder(obs)
    torch.testing.assert_close(got, expected)
    from puffer_tui.engine.algo.one_hot_sum import fits

    assert fits(flat, encoder.table) == (dtype == np.uint8)  # which sparse path ran
    weights = torch.randn(7, 8)  # a loss whose gradient differs per row and column
    grads_expected = torch.autograd.grad((expected * weights).sum(), (encoder.table, encoder.bias))
    grads_got = torch.autograd.grad((encoder(obs) * weights).sum(), (encoder.table, encoder.bias))
    for got_grad, expected_grad in zip(grads_got, grads_expected):
        torch.testing.assert_close(got_grad, expected_grad)
    assert (encoder._sparse(flat) is None) == (nonzero_rate > 0.5)


def test_the_one_hot_kernel_names_a_cell_value_outside_the_space():
    # an env that breaks its own observation space gets a clear error, not a write past the
    # table (the kernel checks every non-zero cell it reads)
    from puffer_tui.engine.algo.policy import ObservationEncoder

    encoder = ObservationEncoder(spaces.Box(0, 2, (12,), np.uint8), 8)
    obs = torch.zeros(3, 12, dtype=torch.uint8)
    obs[1, 10] = 7
    with pytest.raises(ValueError, match=r"observation value 7 \(row 1, cell 10\) is above "
                                         r"the observation space's high of 2"):
        encoder(obs)


def test_the_one_hot_kernel_under_bfloat16_autocast_matches_float32():
    # the learner's bfloat16 path runs the encoder under autocast: the kernel's float32 sums
    # and gradients are the same there
    from puffer_tui.engine.algo.policy import ObservationEncoder

    torch.manual_seed(0)
    encoder = ObservationEncoder(spaces.Box(0, 2, (40,), np.uint8), 16)
    obs = torch.from_numpy((np.random.default_rng(1).random((64, 40)) < 0.1).astype(np.uint8))
    plain = encoder(obs)
    (grad_plain,) = torch.autograd.grad(plain.sum(), encoder.table)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mixed = encoder(obs)
        (grad_mixed,) = torch.autograd.grad(mixed.float().sum(), encoder.table)
    torch.testing.assert_close(mixed.float(), plain)
    torch.testing.assert_close(grad_mixed, grad_plain)


@pytest.mark.parametrize("rows", [1, 3])
def test_the_one_hot_kernel_leaves_the_parameters_alone(rows):
    # the kernel sums into a fresh output: for one row (the value of one truncated episode's
    # final observation) bias.expand(1, -1).contiguous() is the bias itself, not a copy, and
    # summing into it corrupted the policy (caught by the squared learning test)
    from puffer_tui.engine.algo.policy import ObservationEncoder

    encoder = ObservationEncoder(spaces.Box(0, 2, (10,), np.uint8), 4)
    with torch.no_grad():
        encoder.bias.copy_(torch.arange(4.0))
    before = {name: p.detach().clone() for name, p in encoder.named_parameters()}
    obs = torch.zeros(rows, 10, dtype=torch.uint8)
    obs[:, 3] = 1  # sparse: the row-sum path
    with torch.inference_mode():
        first = encoder(obs)
        second = encoder(obs)
    torch.testing.assert_close(first, second)
    for name, p in encoder.named_parameters():
        torch.testing.assert_close(p.detach(), before[name], msg=f"{name} changed")


def test_a_second_derivative_through_the_one_hot_kernel_is_refused_by_name():
    from puffer_tui.engine.algo.policy import ObservationEncoder

    encoder = ObservationEncoder(spaces.Box(0, 2, (10,), np.uint8), 4)
    obs = torch.zeros(3, 10, dtype=torch.uint8)
    obs[:, 2] = 2
    (grad,) = torch.autograd.grad(encoder(obs).square().sum(), encoder.table, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        grad.sum().backward()
