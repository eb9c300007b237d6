"""The paths the trainer takes on CUDA, checked on CPU against the CPU ones: the vectorised
advantage scan against the C kernel, and device storage of the rollout buffer against the
numpy storage."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from puffer_tui.engine.algo.advantage import advantage_torch, compute_advantage
from puffer_tui.engine.algo.rollout import RolloutBuffer


class _CountOps(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def _batch(segments: int, horizon: int, seed: int):
    rng = np.random.default_rng(seed)
    shape = (segments, horizon)
    values = rng.normal(size=shape).astype(np.float32)
    rewards = rng.normal(size=shape).astype(np.float32)
    terminals = (rng.random(shape) < 0.05).astype(np.float32)
    truncations = ((rng.random(shape) < 0.05) & (terminals == 0)).astype(np.float32)
    ratio = rng.uniform(0.5, 1.6, size=shape).astype(np.float32)
    final_values = (rng.normal(size=shape) * truncations).astype(np.float32)
    return [torch.from_numpy(a) for a in (values, rewards, terminals, truncations, ratio,
                                          final_values)]


@pytest.mark.parametrize("horizon", [2, 3, 17, 64, 100])
@pytest.mark.parametrize("clips", [(1.0, 1.0), (100.0, 100.0), (0.8, 1.2)])
def test_torch_scan_equals_the_c_kernel(horizon, clips):
    values, rewards, terminals, truncations, ratio, final = _batch(37, horizon, horizon)
    rho_clip, c_clip = clips
    kernel = compute_advantage(values, rewards, terminals, truncations, ratio, 0.995, 0.9,
                               rho_clip, c_clip, final_values=final)  # CPU: the C kernel
    scan = advantage_torch(values, rewards, terminals, truncations, ratio, 0.995, 0.9,
                           rho_clip, c_clip, final_values=final)
    torch.testing.assert_close(scan, kernel, rtol=1e-5, atol=1e-5)
    assert torch.all(scan[:, -1] == 0)  # the last step has no successor


def test_torch_scan_without_final_values_matches_the_kernel():
    values, rewards, terminals, truncations, ratio, _ = _batch(8, 33, 5)
    args = (values, rewards, terminals, truncations, ratio, 0.99, 0.95, 1.0, 1.0)
    torch.testing.assert_close(advantage_torch(*args), compute_advantage(*args),
                               rtol=1e-5, atol=1e-5)


def test_torch_scan_op_count_grows_with_log_horizon_not_horizon():
    """A loop over time issues a dozen kernels per step (on CUDA, a launch each); the scan
    issues a few per doubling of the horizon."""
    counts = {}
    for horizon in (16, 256):
        args = _batch(4, horizon, 0)
        with _CountOps() as ops:
            advantage_torch(*args[:5], 0.99, 0.95, 1.0, 1.0, final_values=args[5])
        counts[horizon] = ops.count
    assert counts[256] < 2 * counts[16], counts
    assert counts[256] < 300, counts  # a loop over time: thousands


# -- rollout buffer on the device ----------------------------------------------------------


def _fill(buffer: RolloutBuffer, seed: int, as_tensors: bool, whole: float = 0.0):
    """The same pseudo-random steps into a buffer: partial rows (an asynchronous backend),
    rows idling once the batch is full, truncations with final values, LSTM state; with
    probability `whole` a step of every row (host storage copies those as row slices)."""
    rng = np.random.default_rng(seed)
    agents = buffer.num_agents
    steps = 0
    while not buffer.ready:
        env_ids = np.arange(agents) if rng.random() < whole else \
            np.sort(rng.choice(agents, size=rng.integers(1, agents + 1), replace=False))
        n = len(env_ids)
        obs = rng.integers(0, 3, size=(n, 5), dtype=np.uint8)
        rewards = rng.normal(size=n).astype(np.float32)
        terminals = rng.random(n) < 0.1
        truncations = (rng.random(n) < 0.1) & ~terminals
        masks = rng.random(n) < 0.9
        actions = rng.integers(0, 4, size=n).astype(np.int32)
        logprobs = rng.normal(size=n).astype(np.float32)
        values = rng.normal(size=n).astype(np.float32)
        state = (rng.normal(size=(n, 3)).astype(np.float32),
                 rng.normal(size=(n, 3)).astype(np.float32))
        final = (rng.normal(size=n) * truncations).astype(np.float32) if truncations.any() \
            else None
        if as_tensors:  # what the trainer passes a device buffer: the policy's own tensors
            obs_in = torch.from_numpy(obs)
            actions, logprobs, values = map(torch.from_numpy, (actions, logprobs, values))
            state = tuple(map(torch.from_numpy, state))
        else:
            obs_in = obs
        buffer.store(env_ids, obs_in, rewards, terminals, truncations, masks, actions,
                     logprobs, values, state, final)
        steps += 1
    return steps


@pytest.mark.parametrize("whole", [0.0, 0.7])
def test_device_storage_holds_the_same_batch_as_host_storage(whole):
    def make(device):
        return RolloutBuffer(7, 6, 5, (5,), np.uint8, (), torch.int32, state_size=3,
                             device=device)

    host, device = make(None), make(torch.device("cpu"))
    assert host.device is None and device.device == torch.device("cpu")
    assert _fill(host, 3, False, whole) == _fill(device, 3, True, whole) > 6
    ours, theirs = host.tensors(torch.device("cpu")), device.tensors(torch.device("cpu"))
    assert ours.keys() == theirs.keys()
    for name in ours:
        assert ours[name].dtype == theirs[name].dtype, name
        assert torch.equal(ours[name], theirs[name]), name
    assert ours["final_values"].abs().sum() > 0 and ours["state_h"].abs().sum() > 0


def test_device_storage_is_handed_over_without_a_copy():
    buffer = RolloutBuffer(2, 2, 2, (1,), np.float32, (), torch.int32,
                           device=torch.device("cpu"))
    data = buffer.tensors(torch.device("cpu"))
    assert data["observations"].data_ptr() == buffer.observations.data_ptr()
    assert not buffer.observations.is_pinned()


def test_the_trainer_collects_the_same_batch_into_device_storage():
    """The trainer's CUDA collection path (the policy's tensors and the observations handed
    to the buffer as tensors) run on CPU: the batch equals the host storage's."""
    from puffer_tui.engine.algo.episode_log import EpisodeLog
    from puffer_tui.engine.algo.trainer import Trainer
    from puffer_tui.engine.shared.config import load_config

    overrides = {"vec.num_envs": 8, "train.horizon": 8, "train.minibatch_size": 16,
                 "train.hidden_size": 16, "train.torch_threads": 1, "train.policy": "lstm"}
    batches = []
    for on_device in (False, True):
        with Trainer(load_config("squared", overrides)) as trainer:
            if on_device:
                old = trainer.buffer
                trainer.buffer = RolloutBuffer(
                    old.segments, old.horizon, old.num_agents, old.observations.shape[2:],
                    old.observations.numpy().dtype, old.actions.shape[2:],
                    old.actions.dtype, state_size=old.state_size, device=torch.device("cpu"))
            trainer._collect(EpisodeLog())
            batches.append({k: v.clone() for k, v in
                            trainer.buffer.tensors(torch.device("cpu")).items()})
    host, device = batches
    for name in host:
        assert torch.equal(host[name], device[name]), name
