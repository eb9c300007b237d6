"""Shapes and dtypes of the buffers an environment writes into, shared by envs and vectorizers.

Every env, native or wrapped, reads and writes rows of seven arrays: observations, actions,
rewards, terminals, truncations, masks (one row per agent) and final_observations, where an
env keeps the last observation of an episode it truncated before the autoreset overwrites it
(a row is meaningful only on the step whose truncation flag is set). Whoever creates the env (the
env itself, a Serial vectorizer, or a worker over shared memory) can allocate them from the
same layout, so that switching backends never changes what an env sees.

Tested in: tests/engine/native/test_pufferenv.py, tests/engine/vec/mp/test_shared_memory.py"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

BUFFER_NAMES = ("observations", "actions", "rewards", "terminals", "truncations", "masks",
                "final_observations")


def action_dtype(space: spaces.Space) -> np.dtype:
    """int32 for discrete spaces, float32 for continuous ones."""
    if isinstance(space, (spaces.Discrete, spaces.MultiDiscrete)):
        return np.dtype(np.int32)
    if isinstance(space, spaces.Box):
        return np.dtype(np.float32)
    raise TypeError(f"unsupported action space {space!r}: use Discrete, MultiDiscrete or Box")


def action_shape(space: spaces.Space) -> tuple[int, ...]:
    """Per-agent shape of an action row: () for Discrete."""
    if isinstance(space, spaces.Discrete):
        return ()
    return tuple(space.shape)


def action_nvec(space: spaces.Space) -> np.ndarray | None:
    """int32 sizes of the discrete action components, or None for a continuous space."""
    if isinstance(space, spaces.Discrete):
        if space.start != 0:
            raise ValueError(f"Discrete action spaces must start at 0, got start={space.start}")
        return np.array([space.n], dtype=np.int32)
    if isinstance(space, spaces.MultiDiscrete):
        if np.any(space.start != 0):
            raise ValueError("MultiDiscrete action spaces must start at 0")
        return np.ascontiguousarray(space.nvec.ravel(), dtype=np.int32)
    return None


def buffer_layout(
    observation_space: spaces.Box, action_space: spaces.Space, rows: int
) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """name -> (shape, dtype) for `rows` agent rows."""
    return {
        "observations": ((rows, *observation_space.shape), np.dtype(observation_space.dtype)),
        "actions": ((rows, *action_shape(action_space)), action_dtype(action_space)),
        "rewards": ((rows,), np.dtype(np.float32)),
        "terminals": ((rows,), np.dtype(np.bool_)),
        "truncations": ((rows,), np.dtype(np.bool_)),
        "masks": ((rows,), np.dtype(np.bool_)),
        "final_observations": (
            (rows, *observation_space.shape), np.dtype(observation_space.dtype)),
    }


def allocate_buffers(observation_space, action_space, rows: int) -> dict[str, np.ndarray]:
    """Fresh zeroed buffers (masks all True) in ordinary process memory."""
    bufs = {
        name: np.zeros(shape, dtype=dtype)
        for name, (shape, dtype) in buffer_layout(observation_space, action_space, rows).items()
    }
    bufs["masks"][:] = True
    return bufs


def check_buffers(bufs: dict, observation_space, action_space, rows: int) -> None:
    """Raise ValueError naming the first buffer that does not match the layout."""
    for name, (shape, dtype) in buffer_layout(observation_space, action_space, rows).items():
        if name not in bufs:
            raise ValueError(f"buffer '{name}' is missing (need {', '.join(BUFFER_NAMES)})")
        array = bufs[name]
        if array.shape != shape or array.dtype != dtype:
            raise ValueError(
                f"buffer '{name}' has shape {array.shape} dtype {array.dtype}, "
                f"expected shape {shape} dtype {dtype}"
            )
        if not array.flags.c_contiguous:
            raise ValueError(f"buffer '{name}' must be C-contiguous")
