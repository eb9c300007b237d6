"""The random streams a checkpoint carries (Python, NumPy, torch CPU and CUDA), in a form that
`torch.load(weights_only=True)` accepts: NumPy's key array becomes a tensor."""

from __future__ import annotations

import random

import numpy as np
import torch


def capture(device: torch.device) -> dict:
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


def restore(rng: dict, device: torch.device) -> None:
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
