"""Per-minibatch milliseconds of the three ways PPO can compute a plain MLP's loss and gradients
on the CPU (engine/algo/minibatch_loss.py): NumpyLoss (engine/algo/numpy_mlp.py), AutogradLoss
over engine/algo/ppo_loss.py eagerly, and the same under torch.compile (train.compile).

Each timed minibatch is the whole step: loss, gradients, gradient clipping, Adam. The paths
alternate round by round and the medians of the rounds are printed, with the CPU's name.

    python tools/loss_paths.py [--rounds 7] [--minibatches 300]
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import statistics
import time
from types import SimpleNamespace

import numpy as np
import torch
from gymnasium import spaces

from puffer_tui.engine.algo.minibatch_loss import AutogradLoss, NumpyLoss
from puffer_tui.engine.algo.minibatch_plan import Minibatch
from puffer_tui.engine.algo.numpy_mlp import NumpyMLP
from puffer_tui.engine.algo.optimizers import make_optimizer
from puffer_tui.engine.algo.policy import Policy
from puffer_tui.engine.algo.trainer_setup import set_compute_threads
from puffer_tui.engine.shared.config_fields import TrainConfig

# (name, observation size, action space, minibatch size): the presets' shapes
CASES = (
    ("CartPole-v1", 4, spaces.Discrete(2), 256),
    ("Pendulum-v1", 3, spaces.Box(-2.0, 2.0, (1,), np.float32), 128),
    ("HalfCheetah-v5", 17, spaces.Box(-1.0, 1.0, (6,), np.float32), 64),
)
TRAIN = SimpleNamespace(clip_coef=0.2, vf_clip_coef=0.2, vf_coef=0.5, ent_coef=0.0)


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _minibatch(obs_size: int, action_space, rows: int, rng: np.random.Generator):
    obs = torch.from_numpy(rng.normal(size=(rows, 1, obs_size)).astype(np.float32))
    if isinstance(action_space, spaces.Discrete):
        actions = torch.from_numpy(rng.integers(0, action_space.n, size=(rows, 1)))
    else:
        actions = torch.from_numpy(rng.normal(size=(rows, action_space.shape[0]))
                                   .astype(np.float32))
    f = lambda: torch.from_numpy(rng.normal(size=(rows, 1)).astype(np.float32))  # noqa: E731
    logprob = torch.from_numpy(rng.normal(-1.0, 0.1, size=rows).astype(np.float32))
    starts = torch.zeros(obs.shape[:2], dtype=torch.bool)
    return Minibatch(None, None, obs, actions.reshape(rows, 1, -1), logprob, starts,
                     torch.ones(rows, 1), f(), f(), None)


def _paths(obs_size: int, action_space):
    """{path name: a function doing one minibatch step}, each over its own policy copy."""
    paths = {}
    for name in ("numpy", "autograd", "compiled"):
        torch.manual_seed(0)
        policy = Policy(spaces.Box(-10.0, 10.0, (obs_size,), np.float32), action_space,
                        hidden_size=64, activation="tanh", separate_critic=True)
        optimizer = make_optimizer(policy, TrainConfig(learning_rate=1e-4))  # the trainer's
        if name == "numpy":
            mlp = NumpyMLP.for_policy(policy)
            assert mlp is not None, NumpyMLP.reason_not(policy)
            gradients = NumpyLoss(mlp)
        else:
            gradients = AutogradLoss(policy, optimizer, compile_loss=name == "compiled")

        def step(mb, gradients=gradients, optimizer=optimizer):
            gradients(mb, TRAIN)
            gradients.clip(0.5)
            optimizer.step()
        paths[name] = step
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--minibatches", type=int, default=300)
    args = parser.parse_args()
    set_compute_threads(1)  # as the trainer: 1 torch thread, 1 numpy BLAS thread
    print(f"CPU: {cpu_name()}, torch {torch.__version__}, 1 thread each; "
          f"medians of {args.rounds} rounds of {args.minibatches} minibatches, alternating")
    for env, obs_size, action_space, rows in CASES:
        mb = _minibatch(obs_size, action_space, rows, np.random.default_rng(0))
        paths = _paths(obs_size, action_space)
        # NumpyLoss gets numpy views, as PPO.update gives it
        arrays = Minibatch(*(x.numpy() if isinstance(x, torch.Tensor) else x
                             for x in dataclasses.astuple(mb)))
        batches = {name: arrays if name == "numpy" else mb for name in paths}
        for name, step in paths.items():  # warm up (and compile)
            for _ in range(20):
                step(batches[name])
        times = {name: [] for name in paths}
        for _ in range(args.rounds):
            for name, step in paths.items():
                start = time.perf_counter()
                for _ in range(args.minibatches):
                    step(batches[name])
                times[name].append((time.perf_counter() - start) * 1e3 / args.minibatches)
        ms = {name: statistics.median(t) for name, t in times.items()}
        row = ", ".join(f"{name} {value:.3f} ms" for name, value in ms.items())
        print(f"{env:15s} minibatch {rows:4d}: {row}; autograd/numpy "
              f"{ms['autograd'] / ms['numpy']:.2f}x, compiled/numpy "
              f"{ms['compiled'] / ms['numpy']:.2f}x")


if __name__ == "__main__":
    main()
