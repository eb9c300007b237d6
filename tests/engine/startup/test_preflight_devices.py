"""Device checks before a run dir exists: CUDA asked of a machine without it, and more CUDA
learner ranks than GPUs (NCCL needs one per rank)."""

from __future__ import annotations

import pytest
import torch

from puffer_tui.engine.shared.config import ConfigError, load_config
from puffer_tui.engine.startup.preflight import check_device


def gpus(monkeypatch, count: int) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)


@pytest.mark.parametrize("device", ["cuda", "auto"])
def test_more_cuda_ranks_than_gpus_are_refused(monkeypatch, device):
    gpus(monkeypatch, 1)
    with pytest.raises(ConfigError, match="train.nproc = 2 learner ranks need one GPU each"):
        check_device(load_config("squared", {"train.nproc": 2, "train.device": device}))


def test_ranks_that_fit_the_gpus_or_run_on_the_cpu_pass(monkeypatch):
    gpus(monkeypatch, 2)
    check_device(load_config("squared", {"train.nproc": 2, "train.device": "cuda"}))
    gpus(monkeypatch, 0)  # auto on a CPU machine: gloo ranks, any number
    check_device(load_config("squared", {"train.nproc": 4, "train.device": "auto"}))
    gpus(monkeypatch, 1)
    check_device(load_config("squared", {"train.nproc": 4, "train.device": "cpu"}))


def test_cuda_without_a_gpu_is_refused(monkeypatch):
    gpus(monkeypatch, 0)
    with pytest.raises(ConfigError, match="sees no CUDA device"):
        check_device(load_config("squared", {"train.device": "cuda"}))
