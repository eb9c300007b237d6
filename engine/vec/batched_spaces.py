"""Gymnasium-style batched spaces of a vec env: one row per agent of a batch, next to the
`single_*` spaces (`vec.action_space.sample()` gives a batch of actions send() accepts)."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces


def batched(space: spaces.Space, rows: int) -> spaces.Space:
    """`space` repeated over `rows` rows (the leading axis)."""
    if isinstance(space, spaces.Discrete):
        if space.start != 0:
            raise ValueError(f"{space} starts at {space.start}; the vec envs use 0-based actions")
        return spaces.MultiDiscrete(np.full(rows, space.n), dtype=np.int32)
    if isinstance(space, spaces.MultiDiscrete):
        nvec = np.broadcast_to(space.nvec, (rows, *space.nvec.shape))
        return spaces.MultiDiscrete(nvec, dtype=np.int32)
    if isinstance(space, spaces.Box):
        low = np.broadcast_to(space.low, (rows, *space.shape))
        high = np.broadcast_to(space.high, (rows, *space.shape))
        return spaces.Box(low, high, dtype=space.dtype)
    raise TypeError(f"no batched form for {type(space).__name__} spaces")
