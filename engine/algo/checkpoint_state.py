"""Everything of a trainer's checkpoint beyond its weights and optimizer moments, in one place:

1. what a checkpoint must agree with before a trainer takes its state, and which live values
   a resume keeps (check_compatible, restore_live_fields: Trainer.load_state_dict's rules);
2. the random streams (Python, NumPy, torch CPU and CUDA: capture_rng, restore_rng, seed_all);
3. what lets episodes continue: env state and per-agent LSTM state (save_episodes,
   restore_episodes).

At an epoch boundary the envs have stepped once more than the trainer has seen (the last
send() of the epoch); the vec env's get_state() captures the envs after that step and the
step's result, which the next recv() returns (engine/vec/saved_state.py). With the trainer's
LSTM state and RNG streams that is everything a serial CPU run of native envs needs to go on
bit for bit. Checkpoints load with torch.load(weights_only=True), so bytes are stored as
uint8 tensors, numpy arrays (NumPy's RNG key array too) as tensors.

Not exact (and said so in docs/exact-resume.md): wrapped Gymnasium envs (no state to save:
their episodes start afresh), a multiprocessing pool (batch_size < num_envs: which workers
come back first is timing), and CUDA kernels that are not deterministic.

Tested in: tests/engine/algo/test_exact_resume.py, tests/engine/algo/test_resume_settings.py.
"""

from __future__ import annotations

import random

import numpy as np
import torch

from puffer_tui.engine.shared.config import Config, live_specs

# -- 1. whether a checkpoint fits, and the live fields a resume keeps
# the fields the weights and optimizer moments depend on: a checkpoint differing in one of
# them cannot be loaded into this trainer
SHAPE_FIELDS = ("policy", "hidden_size", "optimizer", "separate_critic", "normalize_observations",
                "exploration")


def check_compatible(config: Config, saved: Config) -> None:
    """ValueError naming the field when the checkpoint's config `saved` cannot go into a
    trainer built from `config`."""
    if saved.env_name != config.env_name:
        raise ValueError(f"checkpoint is for env {saved.env_name!r}, this trainer runs "
                         f"{config.env_name!r}")
    for name in SHAPE_FIELDS:
        ours, theirs = getattr(config.train, name), getattr(saved.train, name)
        if ours != theirs:
            raise ValueError(f"checkpoint has train.{name} = {theirs!r}, this trainer "
                             f"{ours!r}; build the trainer from the checkpoint's config")


def restore_live_fields(config: Config, built: dict, saved: Config,
                        saved_built: dict | None) -> None:
    """Set `config`'s live train fields to the checkpoint's, except those given for this
    resume: a field whose value this trainer was built with (`built`) differs from the value
    the checkpoint's run was built with (`saved_built`) was changed by the user on purpose."""
    ours = built["train"]
    # Checkpoints written before built_config was saved cannot tell: theirs wins.
    theirs = (saved_built or {}).get("train", ours)
    for name in (spec.name for spec in live_specs() if spec.section == "train"):
        if name in theirs and ours[name] != theirs[name]:
            continue  # given for this resume: the new value wins
        setattr(config.train, name, getattr(saved.train, name))


# -- 2. the random streams
def capture_rng(device: torch.device) -> dict:
    np_state = np.random.get_state()
    rng = {
        "torch": torch.get_rng_state(),
        "numpy": {"name": np_state[0], "keys": torch.from_numpy(np_state[1].astype(np.int64)),
                  "pos": int(np_state[2]), "has_gauss": int(np_state[3]),
                  "cached_gaussian": float(np_state[4])},
        "python": random.getstate(),
    }
    if device.type == "cuda":
        rng["cuda"] = torch.cuda.get_rng_state(device)
    return rng


def restore_rng(rng: dict, device: torch.device) -> None:
    """Put back whichever streams `rng` holds (an older checkpoint may lack some)."""
    if "torch" in rng:
        torch.set_rng_state(rng["torch"])
    if "cuda" in rng and device.type == "cuda":
        torch.cuda.set_rng_state(rng["cuda"], device)
    if "numpy" in rng:
        n = rng["numpy"]
        np.random.set_state((n["name"], n["keys"].numpy().astype(np.uint32), n["pos"],
                             n["has_gauss"], n["cached_gaussian"]))
    if "python" in rng:
        version, internal, gauss = rng["python"]
        random.setstate((version, tuple(internal), gauss))


def seed_all(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global streams alike."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


# -- 3. the episodes: env state and LSTM state
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


def save_episodes(vecenv, lstm_state) -> dict:
    """The checkpoint entries: {"vecenv": ... or None, "lstm_state": [h, c] or None}."""
    get_state = getattr(vecenv, "get_state", None)
    vec = get_state() if get_state is not None else None
    lstm = None if lstm_state is None else [t.detach().cpu().clone() for t in lstm_state]
    return {"vecenv": None if vec is None else to_checkpoint(vec), "lstm_state": lstm}


def restore_episodes(vecenv, lstm_state, saved: dict, device) -> tuple[tuple | None, str | None]:
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
