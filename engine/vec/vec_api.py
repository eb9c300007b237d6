"""What every vec backend shares: the batched spaces, the sync API over the async one, and
closing (once; afterwards every call says the vec env is closed, and why when it failed)."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from puffer_tui.engine.vec.errors import WorkerError


def batched(space: spaces.Space, rows: int) -> spaces.Space:
    """`space` repeated over `rows` rows (the leading axis): one row per agent of a batch, beside
    the `single_*` spaces, so `vec.action_space.sample()` is a batch send() accepts."""
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


class VecAPI:
    """Mixin. A backend defines async_reset/send/recv, the `single_*` spaces,
    `agents_per_batch`, and `_release()`: what close() frees."""

    _closed = False
    _error: WorkerError | None = None  # the failure that closed the vec env, if one did

    @property
    def observation_space(self):
        """Gymnasium-style: the observations of one batch (`agents_per_batch` rows)."""
        return batched(self.single_observation_space, self.agents_per_batch)

    @property
    def action_space(self):
        """Gymnasium-style: the actions of one batch; `.sample()` is a valid send()."""
        return batched(self.single_action_space, self.agents_per_batch)

    def reset(self, seed: int | None = None):
        self.async_reset(seed)
        obs, _, _, _, infos, _, _ = self.recv()
        return obs, infos

    def step(self, actions):
        self.send(actions)
        obs, rewards, terminals, truncations, infos, _, _ = self.recv()
        return obs, rewards, terminals, truncations, infos

    def _check_open(self) -> None:
        if self._closed:
            if self._error is not None:
                raise RuntimeError(f"the vec env was closed after an error: {self._error}")
            raise RuntimeError("the vec env is closed")

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._release()

    def _release(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
