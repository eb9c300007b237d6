"""The one action checker: shape, dtype and range of a batch of actions, for envs (PufferEnv,
wrapped Gymnasium envs) and vectorizers alike, so a bad action is an ActionError with the same
words wherever it is caught. It lives in the native contract because envs may import only that.

Tested in: tests/engine/vec/test_serial.py (action validation in detail),
tests/engine/native/test_pufferenv.py"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from puffer_tui.engine.native.buffers import action_dtype, action_nvec, action_shape


class ActionError(ValueError):
    """Actions of the wrong shape, dtype or range."""


class ActionChecker:
    """Checks batches of `rows` actions from `space` (the layout is worked out once).

    `rows_label` says what a row is in the shape message ("agents" of an env, "agent rows in
    the batch" of a vectorizer); `who`, given per call, prefixes every message (an env's name).
    """

    def __init__(self, space: spaces.Space, rows: int, dtype=None, rows_label: str = "agents"):
        self.space = space
        self.rows = int(rows)
        self.dtype = np.dtype(dtype) if dtype is not None else action_dtype(space)
        self.shape = (self.rows, *action_shape(space))
        self.nvec = action_nvec(space)
        self.rows_label = rows_label
        self._single = self.nvec is not None and len(self.nvec) == 1

    def __call__(self, actions, who: str = "") -> np.ndarray:
        """`actions` checked in full and in the buffer's dtype."""
        actions = self.check(actions, who)
        return actions if actions.dtype == self.dtype else actions.astype(self.dtype)

    def check(self, actions, who: str = "", trust_buffer_dtype: bool = False) -> np.ndarray:
        """`actions` as an array, refusing wrong shapes, dtypes and out-of-range discrete values.

        With `trust_buffer_dtype`, discrete actions already in the buffer's dtype skip the range
        check (the caller checks the buffer afterwards, e.g. in C); others are still checked
        before narrowing, so a huge int64 cannot wrap into a valid action."""
        prefix = f"{who}: " if who else ""
        actions = np.asarray(actions)
        if actions.shape != self.shape:
            raise ActionError(
                f"{prefix}actions have shape {actions.shape}, expected {self.shape} "
                f"({self.rows} {self.rows_label}, action space {self.space})"
            )
        if self.nvec is None:
            if actions.dtype.kind != "f":
                raise ActionError(
                    f"{prefix}continuous actions must have a float dtype, got {actions.dtype}"
                )
        elif actions.dtype.kind not in "iu":
            raise ActionError(
                f"{prefix}discrete actions must have an integer dtype, got {actions.dtype}"
            )
        elif actions.size and not (trust_buffer_dtype and actions.dtype == self.dtype):
            self.check_values(actions, who)
        return actions

    def check_values(self, actions, who: str = "") -> None:
        """Discrete values in range, continuous values finite (for actions already shaped)."""
        if self.nvec is None:
            bad = np.flatnonzero(~np.isfinite(actions))
            if bad.size:
                self.raise_bad(actions, int(bad[0]), who)
        elif not self._in_range(actions):
            self.raise_bad(actions, None, who)

    def _in_range(self, actions) -> bool:
        if self._single:  # Discrete (or one-component MultiDiscrete): min and max suffice
            return bool(actions.min() >= 0 and actions.max() < self.nvec[0])
        per_row = actions.reshape(self.rows, -1)
        return bool(per_row.min() >= 0 and not np.any(per_row.max(axis=0) >= self.nvec))

    def raise_bad(self, actions, index: int | None = None, who: str = "") -> None:
        """Raise for the action at flat `index` (found here when None): out of range, or not
        finite for a continuous space."""
        prefix = f"{who}: " if who else ""
        flat = np.asarray(actions).reshape(-1)
        if self.nvec is None:
            raise ActionError(f"{prefix}action {index} is not finite ({flat[index]})")
        k = len(self.nvec)
        if index is None:
            per_row = flat.reshape(-1, k)
            row, column = np.argwhere((per_row < 0) | (per_row >= self.nvec))[0]
            index = int(row * k + column)
        raise ActionError(
            f"{prefix}action {flat[index]} at row {index // k} is out of range "
            f"[0, {self.nvec[index % k]})"
        )
