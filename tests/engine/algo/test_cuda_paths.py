"""The trainer's CUDA paths, on a CUDA GPU, against the CPU ones where the results can be
compared: the torch advantage scan against the C kernel, device storage of the rollout buffer
against host storage, Muon's step on both devices; bfloat16 autocast and training on the GPU;
NCCL for `--train.nproc 2` when two GPUs exist. Every test here is marked `cuda`: without a
GPU each is skipped with the reason (tests/conftest.py). Run them with `pytest -m cuda`."""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys

import numpy as np
import pytest
import torch

from puffer_tui.engine.algo.advantage import compute_advantage
from puffer_tui.engine.algo.optimizers import MuonWithAdam, make_optimizer
from puffer_tui.engine.algo.rollout import RolloutBuffer
from puffer_tui.engine.algo.trainer import Trainer
from puffer_tui.engine.algo.trainer_setup import resolve_precision
from puffer_tui.engine.shared.config import load_config
from puffer_tui.engine.shared.protocol import LOSSES
from tests.engine.algo.test_device_paths_on_cpu import _batch, _fill

pytestmark = pytest.mark.cuda
CUDA = torch.device("cuda")
SMALL = {"vec.num_envs": 32, "train.horizon": 16, "train.minibatch_size": 128,
         "train.hidden_size": 32, "train.device": "cuda"}


@pytest.mark.parametrize("horizon", [2, 17, 64, 256])
@pytest.mark.parametrize("clips", [(1.0, 1.0), (0.8, 1.2)])
def test_advantage_on_cuda_equals_the_c_kernel(horizon, clips):
    cpu = _batch(53, horizon, horizon + 1)
    kernel = compute_advantage(*cpu[:5], 0.995, 0.9, *clips, final_values=cpu[5])
    on_gpu = [t.to(CUDA) for t in cpu]
    out = torch.full_like(on_gpu[0], float("nan"))  # poisoned: every element must be written
    scan = compute_advantage(*on_gpu[:5], 0.995, 0.9, *clips, out=out, final_values=on_gpu[5])
    assert scan.device.type == "cuda" and not torch.isnan(scan).any()
    torch.testing.assert_close(scan.cpu(), kernel, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("whole", [0.0, 0.7])
def test_rollout_buffer_on_cuda_holds_the_host_batch(whole):
    """The policy's outputs arrive on the GPU (as in the trainer), the env's data on the host."""
    def make(device):
        return RolloutBuffer(7, 6, 5, (5,), np.uint8, (), torch.int32, state_size=3,
                             device=device)

    host, device = make(None), make(CUDA)
    store = device.store

    def store_from_the_gpu(env_ids, obs, rewards, terminals, truncations, masks, actions,
                           logprobs, values, state=None, final=None):
        moved = [t.to(CUDA) for t in (actions, logprobs, values)]
        return store(env_ids, obs, rewards, terminals, truncations, masks, *moved,
                     tuple(s.to(CUDA) for s in state), final)

    device.store = store_from_the_gpu
    assert _fill(host, 11, False, whole) == _fill(device, 11, True, whole) > 6
    ours, theirs = host.tensors(torch.device("cpu")), device.tensors(CUDA)
    assert ours.keys() == theirs.keys()
    for name in ours:
        assert theirs[name].device.type == "cuda", name
        assert torch.equal(ours[name], theirs[name].cpu()), name


def test_the_trainer_on_cuda_keeps_its_batch_on_the_gpu_and_trains():
    with Trainer(load_config("squared", SMALL)) as trainer:
        assert trainer.device.type == "cuda" and trainer.buffer.device.type == "cuda"
        before = {k: v.detach().clone() for k, v in trainer.policy.state_dict().items()}
        for _ in range(3):
            row = trainer.run_epoch()
        assert all(math.isfinite(v) for v in row[LOSSES].values()), row[LOSSES]
        changed = [k for k, v in trainer.policy.state_dict().items()
                   if not torch.equal(v, before[k])]
        assert changed


def test_bfloat16_autocasts_on_cuda_and_trains_finite():
    assert resolve_precision("auto", CUDA) == ("bfloat16" if torch.cuda.get_device_capability()
                                               [0] >= 8 else "float32")
    with Trainer(load_config("squared", {**SMALL, "train.precision": "bfloat16"})) as trainer:
        seen = []
        hook = trainer.policy.hidden.register_forward_hook(
            lambda _m, _i, out: seen.append(out.dtype) if torch.is_grad_enabled() else None)
        for _ in range(3):
            row = trainer.run_epoch()
        hook.remove()
        assert seen and set(seen) == {torch.bfloat16}
        assert trainer.policy.hidden.weight.dtype == torch.float32
        assert all(math.isfinite(v) for v in row[LOSSES].values()), row[LOSSES]


def test_muon_steps_alike_on_cuda_and_cpu():
    """The same gradients give the same update on both devices, to bfloat16 rounding (the
    Newton-Schulz iteration may run in reduced precision on the GPU)."""
    train = load_config("squared", {**SMALL, "train.optimizer": "muon"}).train
    with Trainer(load_config("squared", {**SMALL, "train.device": "cpu",
                                         "train.optimizer": "muon"})) as cpu_trainer:
        cpu_policy = copy.deepcopy(cpu_trainer.policy)
    gpu_policy = copy.deepcopy(cpu_policy).to(CUDA)
    steps = {}
    for device, policy in ((torch.device("cpu"), cpu_policy), (CUDA, gpu_policy)):
        optimizer = make_optimizer(policy, train, device)
        assert isinstance(optimizer, MuonWithAdam)
        generator = torch.Generator().manual_seed(3)
        before = {n: p.detach().clone() for n, p in policy.named_parameters()}
        for p in policy.parameters():
            p.grad = torch.randn(p.shape, generator=generator).to(device)
        optimizer.step()
        steps[device.type] = {n: (p.detach() - before[n]).cpu()
                              for n, p in policy.named_parameters()}
    for name, cpu_step in steps["cpu"].items():
        gpu_step = steps["cuda"][name]
        assert cpu_step.norm() > 0, name
        rel = (gpu_step - cpu_step).norm() / cpu_step.norm()
        assert rel < 2e-2, (name, float(rel))


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="NCCL across ranks needs 2 GPUs; "
                    f"torch sees {torch.cuda.device_count()}")
def test_two_ranks_train_over_nccl(tmp_path):
    runs = tmp_path / "runs"
    done = subprocess.run(
        [sys.executable, "-m", "puffer_tui.app.cli", "train", "squared", "--headless",
         "--runs-dir", str(runs), "--train.nproc", "2", "--train.device", "cuda",
         "--vec.num-envs", "64", "--train.total-timesteps", "200000"],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for m in runs.glob("*/metrics.jsonl")
            for line in m.read_text().splitlines() if line.strip()]
    assert rows and max(r["global_step"] for r in rows) >= 200_000
