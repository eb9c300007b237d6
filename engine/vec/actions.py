"""Action checks in the main process, so a bad action is an ActionError here and now rather
than an exception inside a worker (which would end the run)."""

from __future__ import annotations

import numpy as np

from puffer_tui.engine.native.buffers import action_nvec, action_shape
from puffer_tui.engine.native.pufferenv import ActionError


def check_actions(actions, space, rows: int, dtype: np.dtype) -> np.ndarray:
    """`actions` as an array of shape (rows, *action shape), refusing wrong shapes, dtypes and
    out-of-range discrete values."""
    actions = np.asarray(actions)
    expected = (rows, *action_shape(space))
    if actions.shape != expected:
        raise ActionError(
            f"actions have shape {actions.shape}, expected {expected} "
            f"({rows} agent rows in the batch, action space {space})"
        )
    nvec = action_nvec(space)
    if nvec is None:
        if actions.dtype.kind != "f":
            raise ActionError(f"continuous actions must have a float dtype, got {actions.dtype}")
        return actions
    if actions.dtype.kind not in "iu":
        raise ActionError(f"discrete actions must have an integer dtype, got {actions.dtype}")
    if actions.size and len(nvec) == 1:  # Discrete or one-component MultiDiscrete: min/max
        low, high = int(actions.min()), int(actions.max())
        if low < 0 or high >= nvec[0]:
            row = int(np.argmax((actions < 0) | (actions >= nvec[0])))
            raise ActionError(
                f"action {actions.reshape(-1)[row]} at row {row} is out of range [0, {nvec[0]})"
            )
    elif actions.size:
        per_row = actions.reshape(rows, -1)
        if per_row.min() < 0 or np.any(per_row.max(axis=0) >= nvec):
            bad = np.argwhere((per_row < 0) | (per_row >= nvec))[0]
            raise ActionError(
                f"action {per_row[bad[0], bad[1]]} at row {bad[0]} is out of range "
                f"[0, {nvec[bad[1]]})"
            )
    if actions.dtype != dtype:
        actions = actions.astype(dtype)
    return actions
