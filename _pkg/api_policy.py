"""`Policy`, a trained policy for a script: raw observations in, the env's actions out (and
V(s), and export to ONNX or TorchScript); `policy_of` gives one from a run or a checkpoint file.
Used by _pkg/api.py.

Tested in: tests/test_api.py"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path

from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.checkpoint import CheckpointError

BEST = "best.pt"  # the checkpoint evaluation keeps, beside the numbered ones


def policy_of(target: str | os.PathLike, checkpoint: str | os.PathLike = "latest",
              runs_dir: str | os.PathLike | None = None, device: str = "cpu") -> Policy:
    """The policy of a run (its directory or its name: its "latest" checkpoint, "best", or a
    checkpoint path) or of a checkpoint file: `puffer_tui.load` and `Run.policy`."""
    path = _checkpoint_path(target, checkpoint, runs_dir)
    # lazy: pulls torch, which importing puffer_tui does not load
    from puffer_tui.engine.algo.policy import load_policy

    ckpt.load_checkpoint(path)  # a clear CheckpointError naming the file if it is damaged
    try:
        module, config = load_policy(path, device=device)
    except ValueError as e:
        raise CheckpointError(str(e)) from None
    return Policy(module, config, path)


def _checkpoint_path(target, checkpoint, runs_dir) -> Path:
    path = Path(target)
    if path.is_file():
        return path
    run_dir = path if rd.is_run_dir(path) else rd.find_run(target, rd.runs_root(runs_dir))
    if checkpoint == "latest":
        latest = ckpt.latest_checkpoint(run_dir)
        if latest is None:
            raise CheckpointError(f"{run_dir.name} has no checkpoint yet (none in "
                                  f"{ckpt.checkpoint_dir(run_dir)})")
        return latest
    if checkpoint == "best":
        best = ckpt.checkpoint_dir(run_dir) / BEST
        if not best.is_file():
            raise CheckpointError(f"{run_dir.name} has no {BEST}: it is kept by evaluation "
                                  f"during training when eval.interval is set")
        return best
    path = Path(checkpoint)
    if not path.is_absolute() and not path.exists():
        path = ckpt.checkpoint_dir(run_dir) / path
    if not path.is_file():
        raise CheckpointError(f"no checkpoint {checkpoint} in {ckpt.checkpoint_dir(run_dir)} "
                              f"(\"latest\", \"best\" or a file)")
    return path


class Policy:
    """A trained policy: raw observations in, the env's actions out.

    `module` is the underlying `torch.nn.Module` (engine/algo/policy.py), `config` the run's
    settings, `checkpoint` the file it came from."""

    def __init__(self, module, config, checkpoint: Path | None = None):
        self.module = module
        self.config = config
        self.checkpoint = checkpoint
        self.observation_space = module.observation_space
        self.action_space = module.action_space
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        kind = "LSTM" if self.recurrent else "MLP"
        return (f"Policy({self.config.env_name}, {kind}, {self.module.num_parameters():,} "
                f"parameters, checkpoint={str(self.checkpoint) if self.checkpoint else None!r})")

    @property
    def recurrent(self) -> bool:
        return bool(self.module.recurrent)

    @property
    def env_name(self) -> str:
        return self.config.env_name

    def act(self, obs, deterministic: bool = True, state=None, episode_start=None):
        """The action for one observation (as the env gives it) or a batch ([N, *shape]).
        Deterministic by default: the most likely action, or the Gaussian's mean clipped to
        the bounds; `deterministic=False` samples. The run's observation normalization is
        applied. A recurrent policy returns `(actions, state)`: pass `state` back on the next
        call (None at the start), and `episode_start` (a bool per row) where an episode
        begins."""
        batch, single = self._batch(obs)
        starts = None if episode_start is None else \
            (self._as_rows(episode_start, len(batch)) if not single else [bool(episode_start)])
        with self._lock:
            actions, state = self.module.act(batch, state, deterministic=deterministic,
                                             starts=starts)
        action = _unbatch(actions, self.action_space) if single else actions
        return (action, state) if self.recurrent else action

    def value(self, obs, state=None):
        """The critic's estimate V(s) for one observation (a float) or a batch ([N])."""
        import torch

        batch, single = self._batch(obs)
        module = self.module
        device = next(module.parameters()).device
        with torch.no_grad():
            tensor = torch.as_tensor(batch, device=device)
            if module.obs_norm is not None:
                tensor = module.obs_norm(tensor)
            _, values, _ = module.step(tensor, state)
        values = values.cpu().numpy()
        return float(values[0]) if single else values

    def export(self, path: str | os.PathLike, format: str | None = None) -> Path:
        """One ONNX or TorchScript file mapping observations to actions (and the value),
        normalization and the deterministic choice included; see `puffer-tui export`."""
        # lazy: pulls the exporter (and onnx), which importing puffer_tui does not load
        from puffer_tui.engine.evaluation.policy_export import export

        return export(self.module, path, format)

    def _batch(self, obs):
        """(observations as [N, *shape] of the space's dtype, whether one was given)."""
        import numpy as np

        space = self.observation_space
        leaves = getattr(space, "leaves", None)
        if leaves is not None and (isinstance(obs, Mapping) or isinstance(obs, tuple)):
            return flatten_structured(obs, space)[None], True
        if leaves is not None and isinstance(obs, list) and obs and \
                isinstance(obs[0], (Mapping, tuple)):
            return np.stack([flatten_structured(o, space) for o in obs]), False
        if isinstance(obs, tuple) and len(obs) == 2 and isinstance(obs[1], Mapping):
            raise ValueError("got (observation, info), as env.reset() returns it: pass the "
                             "observation alone (obs, info = env.reset())")
        array = np.asarray(obs)
        shape = tuple(space.shape)
        if array.shape == shape:
            return array.astype(space.dtype, copy=False)[None], True
        if array.shape[1:] == shape:
            return array.astype(space.dtype, copy=False), False
        raise ValueError(f"observations of shape {array.shape}: {self.env_name}'s policy takes "
                         f"{shape} (one) or (N, {', '.join(map(str, shape))}) (a batch)")

    @staticmethod
    def _as_rows(values, rows: int):
        import numpy as np

        flags = np.asarray(values, dtype=bool).reshape(-1)
        if flags.size != rows:
            raise ValueError(f"episode_start has {flags.size} flags for {rows} observations")
        return flags


def flatten_structured(obs, space):
    """A Dict/Tuple observation as the flat row the policy takes (the env's own flattening,
    envs/gym_spaces.py)."""
    # lazy: pulls gymnasium, which importing puffer_tui does not load
    from puffer_tui.envs.gym_spaces import flatten_by_leaves

    return flatten_by_leaves(obs, space)


def _unbatch(actions, space):
    """One row's action as the env takes it: a Python int for Discrete, else the array."""
    action = actions[0]
    if getattr(action, "ndim", 1) == 0:
        return int(action) if getattr(space, "dtype", None) is None or \
            space.dtype.kind in "iu" else action.item()
    return action
