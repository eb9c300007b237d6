"""Action checks in the main process, so a bad action is an ActionError here and now rather
than an exception inside a worker (which would end the run)."""

from __future__ import annotations

import numpy as np

from puffer_tui.engine.native.buffers import action_nvec, action_shape
from puffer_tui.engine.native.pufferenv import ActionError


class ActionChecker:
    """Checks batches of `rows` actions from `space` (the layout is worked out once)."""

    def __init__(self, space, rows: int, dtype: np.dtype):
        self.space = space
        self.rows = rows
        self.dtype = np.dtype(dtype)
        self.shape = (rows, *action_shape(space))
        self.nvec = action_nvec(space)
        self.single = self.nvec is not None and len(self.nvec) == 1
        self.high = int(self.nvec[0]) if self.single else None

    def __call__(self, actions) -> np.ndarray:
        """`actions` as an array of shape (rows, *action shape) and the buffer's dtype,
        refusing wrong shapes, dtypes and out-of-range discrete values."""
        actions = np.asarray(actions)
        if actions.shape != self.shape:
            raise ActionError(
                f"actions have shape {actions.shape}, expected {self.shape} "
                f"({self.rows} agent rows in the batch, action space {self.space})"
            )
        if self.nvec is None:
            if actions.dtype.kind != "f":
                raise ActionError(
                    f"continuous actions must have a float dtype, got {actions.dtype}"
                )
        elif actions.dtype.kind not in "iu":
            raise ActionError(f"discrete actions must have an integer dtype, got {actions.dtype}")
        elif actions.size:
            self._check_range(actions)
        if actions.dtype != self.dtype:
            actions = actions.astype(self.dtype)
        return actions

    def _check_range(self, actions) -> None:
        if self.single:  # Discrete (or one-component MultiDiscrete): min and max suffice
            if actions.min() >= 0 and actions.max() < self.high:
                return
            per_row = actions.reshape(self.rows, 1)
        else:
            per_row = actions.reshape(self.rows, -1)
            if per_row.min() >= 0 and not np.any(per_row.max(axis=0) >= self.nvec):
                return
        row, column = np.argwhere((per_row < 0) | (per_row >= self.nvec))[0]
        raise ActionError(
            f"action {per_row[row, column]} at row {row} is out of range "
            f"[0, {self.nvec[column]})"
        )
