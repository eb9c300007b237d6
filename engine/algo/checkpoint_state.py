"""The part of a checkpoint that lets episodes continue: env state and per-agent LSTM state.

At an epoch boundary the envs have stepped once more than the trainer has seen (the last
send() of the epoch); the vec env's get_state() captures the envs after that step and the
step's result, which the next recv() returns (engine/vec/saved_state.py). With the trainer's
LSTM state and RNG streams that is everything a serial CPU run of native envs needs to go on
bit for bit. Checkpoints load with torch.load(weights_only=True), so bytes are stored as
uint8 tensors and numpy arrays as tensors.

Not exact (and said so in docs/exact-resume.md): wrapped Gymnasium envs (no state to save:
their episodes start afresh), a multiprocessing pool (batch_size < num_envs: which workers
come back first is timing), and CUDA kernels that are not deterministic.
"""

from __future__ import annotations

import numpy as np
import torch

_BYTES = "__bytes__"


def to_checkpoint(value):
    """bytes -> {"__bytes__": uint8 tensor}, numpy arrays -> tensors, recursively."""
    if isinstance(value, (bytes, bytearray)):
        return {_BYTES: torch.frombuffer(bytearray(value), dtype=torch.uint8)
                if value else torch.zeros(0, dtype=torch.uint8)}
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.array(value))
    if isinstance(value, dict):
        return {k: to_checkpoint(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_checkpoint(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def from_checkpoint(value):
    """Inverse of to_checkpoint: tensors come back as numpy arrays."""
    if isinstance(value, dict):
        if set(value) == {_BYTES}:
            return value[_BYTES].numpy().tobytes()
        return {k: from_checkpoint(v) for k, v in value.items()}
    if isinstance(value, torch.Tensor):
        return value.numpy()
    if isinstance(value, list):
        return [from_checkpoint(v) for v in value]
    return value


def save(vecenv, lstm_state) -> dict:
    """The checkpoint entries: {"vecenv": ... or None, "lstm_state": [h, c] or None}."""
    get_state = getattr(vecenv, "get_state", None)
    vec = get_state() if get_state is not None else None
    lstm = None if lstm_state is None else [t.detach().cpu().clone() for t in lstm_state]
    return {"vecenv": None if vec is None else to_checkpoint(vec), "lstm_state": lstm}


def restore(vecenv, lstm_state, saved: dict, device) -> tuple[tuple | None, str | None]:
    """Put the saved env and LSTM state back. Returns (the LSTM state to use, None) or, when
    they cannot be restored (a checkpoint without them, other envs or settings, another
    number of agents), (the current LSTM state, why not): episodes then start afresh."""
    vec, lstm = saved.get("vecenv"), saved.get("lstm_state")
    if vec is None:  # a branch with a new seed says so (engine/startup/branch.py)
        return lstm_state, saved.get("episodes_afresh") or \
            "the checkpoint holds no env state (Gymnasium envs or an old one)"
    if (lstm is None) != (lstm_state is None) or (
            lstm is not None and tuple(lstm[0].shape) != tuple(lstm_state[0].shape)):
        return lstm_state, "the checkpoint's recurrent state does not fit this policy/agents"
    try:
        vecenv.set_state(from_checkpoint(vec))
    except (ValueError, KeyError, AttributeError) as exc:
        return lstm_state, f"its env state does not fit these envs ({exc})"
    if lstm is None:
        return None, None
    return tuple(t.to(device).clone() for t in lstm), None
