"""A trained policy as one file that runs without puffer-tui: ONNX or TorchScript.

    module = InferenceModule(policy)           # obs -> action (LSTM: obs, h, c -> action, h, c)
    export(policy, "cartpole.onnx")            # the format from the suffix, or format="onnx"
    export(policy, "cartpole.pt", format="torchscript")

The module holds everything between an observation and the action the env takes: the
observation normalization the policy trained with (its frozen statistics and clip), the
encoder, the core, and the deterministic choice (`ActionHead.mode`: the most likely index per
head, or the Gaussian's mean clipped or squashed into the action bounds). Observations go in
as the env gives them (the flat row of `puffer-tui envs`' observation space, its dtype: uint8
grids and Atari frames stay uint8), batched: [N, *shape]. A recurrent policy takes its state
as explicit inputs `h`, `c` ([N, hidden], zeros at an episode's start) and returns the next
state; the caller zeroes a row whose episode ended. Outputs: `action` ([N] int32 for Discrete,
[N, heads] for MultiDiscrete, [N, *shape] float32 for Box) and `value` ([N], the critic's
estimate, handy to check a port).

ONNX goes through torch's TorchScript-based exporter (`dynamo=False`): the policy's graph is
small and static, and that exporter needs no package beyond `onnx`. Both formats are traced
with a batch of the observation space's own samples, and the batch dimension stays dynamic.
Tested in: tests/engine/evaluation/test_policy_export.py (parity with `Policy.act` under
onnxruntime and torch.jit.load, for discrete, continuous, image and LSTM policies).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

FORMATS = ("onnx", "torchscript")
SUFFIXES = {".onnx": "onnx", ".pt": "torchscript", ".ts": "torchscript",
            ".torchscript": "torchscript"}
OPSET = 17


class ExportError(ValueError):
    """An export that cannot be made; the text says why and what to do."""


class InferenceModule(nn.Module):
    """obs -> (action, value), or (obs, h, c) -> (action, value, h, c) for an LSTM policy."""

    def __init__(self, policy):
        super().__init__()
        self.policy = policy
        self.recurrent = bool(policy.recurrent)

    def forward(self, obs: torch.Tensor, h: torch.Tensor | None = None,
                c: torch.Tensor | None = None):
        policy = self.policy
        if policy.obs_norm is not None:
            obs = policy.obs_norm(obs)
        state = (h, c) if self.recurrent else None
        params, value, state = policy.step(obs, state)
        action = policy.actor.mode(params)
        if self.recurrent:
            return action, value, state[0], state[1]
        return action, value


def format_for(path: str | os.PathLike, format: str | None = None) -> str:
    """The export format asked for, or the one the file's suffix names."""
    if format is not None:
        if format not in FORMATS:
            raise ExportError(f"unknown export format {format!r}; choose one of "
                              f"{', '.join(FORMATS)}")
        return format
    suffix = Path(path).suffix.lower()
    if suffix not in SUFFIXES:
        raise ExportError(f"{Path(path).name}: say the format (--format onnx|torchscript) or "
                          f"name the file .onnx or .pt")
    return SUFFIXES[suffix]


def example_inputs(policy, rows: int = 2) -> tuple:
    """A batch of `rows` observations sampled from the policy's observation space (and the
    zero LSTM state): the inputs the module is traced with."""
    space = policy.observation_space
    space.seed(0)
    obs = torch.as_tensor(np.stack([space.sample() for _ in range(rows)]))
    if not policy.recurrent:
        return (obs,)
    h, c = policy.initial_state(rows)
    return obs, h, c


def export(policy, path: str | os.PathLike, format: str | None = None) -> Path:
    """Write `policy` (engine/algo/policy.py, on the CPU) to `path` as ONNX or TorchScript;
    the file appears whole or not at all. Returns the path."""
    format = format_for(path, format)
    path = Path(path)
    policy = policy.cpu().eval()
    module = InferenceModule(policy).eval()
    inputs = example_inputs(policy)
    names = ["obs", "h", "c"][: len(inputs)]
    outputs = ["action", "value", "h_out", "c_out"][: 2 + 2 * policy.recurrent]
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with torch.no_grad(), warnings.catch_warnings():
            # torch.jit and its ONNX exporter announce their deprecation on every call; both
            # still write files every runtime loads (torch.export's programs need torch)
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", FutureWarning)
            if format == "torchscript":
                traced = torch.jit.trace(module, inputs, check_trace=False)
                torch.jit.save(traced, str(temp))
            else:
                _export_onnx(module, inputs, names, outputs, temp)
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    return path


def _export_onnx(module, inputs, names, outputs, temp: Path) -> None:
    try:
        import onnx  # noqa: F401  (torch's exporter writes through it)
    except ImportError:
        raise ExportError("ONNX export needs the onnx package: pip install "
                          "\"puffer-tui[export]\"") from None
    batch = {0: "batch"}
    torch.onnx.export(module, inputs, str(temp), input_names=names, output_names=outputs,
                      dynamic_axes={name: batch for name in names + outputs},
                      opset_version=OPSET, dynamo=False)
