"""An async pool in the caller's process, of blocks of envs that step in the background
themselves: for Atari, ale-py's C++ threads step some games while the caller works on the
others (EnvPool's async mode, behind our vec API).

    vec = make(creator("gym:ALE/Pong-v5"), num_envs=16, backend="serial", batch_size=8)
    vec.async_reset(0)
    obs, rewards, terminals, truncations, infos, env_ids, masks = vec.recv()   # 8 games
    vec.send(actions)                                                           # theirs

With `batch_size == num_envs` the serial backend steps every game at once and the C++ threads
wait while the policy thinks. Here the games are split into `num_envs / batch_size` blocks
(one AtariVectorEnv each, its threads a share of the cores), and blocks are taken in turn:
recv() waits for the block sent longest ago while the others step. So, as with the zero-copy
multiprocessing pool, a batch holds the same transitions as stepping all games at once, the
games are seeded as one block would be (`seed + i` for game i), and runs are reproducible.
(ale-py's own async mode, `batch_size` in one AtariVectorEnv, returns the first games to
finish instead; its threads wait whenever a batch is full and the caller has not taken it,
which on a busy machine left them idle half the time.)

recv() returns the block's own arrays (ale-py's, fresh each step): no copy into the buffers,
which hold final observations (and a game's observation when it is drawn). Checkpoints carry
no env state: Atari games cannot be saved (docs/exact-resume.md).

A block (envs/ale_vector.py's AleVectorBlock, its creator marked `async_batches`) takes
`num_threads` and `copy_observations`, and has reset(seed), send(actions), recv() ->
(observations, rewards, terminals, truncations), `batch` (the reset's), frame(i),
refresh_observation(i) and the PufferEnv episode log.
"""

from __future__ import annotations

import collections
import os

import numpy as np

from puffer_tui.engine.native.buffers import allocate_buffers
from puffer_tui.engine.native.frames import observation_frame
from puffer_tui.engine.vec.vec_api import VecAPI


class AsyncBlockPool(VecAPI):
    """`num_envs` envs in blocks of `batch_size`; recv() returns the block sent longest ago."""

    def __init__(self, block_creator, num_envs: int, batch_size: int, seed: int = 0,
                 env_kwargs: dict | None = None):
        if not 1 <= batch_size < num_envs or num_envs % batch_size:
            raise ValueError(f"an async pool's batch_size must divide num_envs={num_envs} and "
                             f"be smaller, got {batch_size}; batch_size={num_envs} is the "
                             f"synchronous serial backend")
        self.num_envs, self.batch_size, self.seed = num_envs, batch_size, int(seed)
        layout = block_creator.layout
        self.single_observation_space = layout.observation_space
        self.single_action_space = layout.action_space
        self.agents_per_env, self.num_agents = 1, num_envs
        self.agents_per_batch = batch_size
        self.buffers = allocate_buffers(self.single_observation_space,
                                        self.single_action_space, num_envs)
        for name, array in self.buffers.items():
            setattr(self, name, array)
        count = num_envs // batch_size
        # the cores shared out between the blocks' threads (at least one each)
        threads = max(1, len(os.sched_getaffinity(0)) // count)
        self.blocks = []
        try:
            for j in range(count):
                rows = slice(j * batch_size, (j + 1) * batch_size)
                self.blocks.append(block_creator(
                    num_envs=batch_size, seed=self._block_seed(j),
                    buf={k: v[rows] for k, v in self.buffers.items()}, num_threads=threads,
                    copy_observations=False, **(env_kwargs or {})))
        except BaseException:
            self._release()
            raise
        self._env_ids = [np.arange(j * batch_size, (j + 1) * batch_size, dtype=np.int64)
                         for j in range(count)]
        self._masks = np.ones(batch_size, bool)
        self._queue: collections.deque[int] = collections.deque()  # results due, oldest first
        self._fresh: set[int] = set()  # blocks whose due result is their reset's
        self._held: int | None = None  # the block returned by recv(), awaiting actions

    @property
    def driver_env(self):
        return self.blocks[0]

    def _block_seed(self, j: int) -> int:
        return self.seed + j * self.batch_size  # game i gets seed + i, as in one block

    def async_reset(self, seed: int | None = None) -> None:
        self._check_open()
        if seed is not None:
            self.seed = int(seed)
        for j in self._queue:  # steps in flight land first (ale-py resets only idle games)
            if j not in self._fresh:
                self.blocks[j].recv()
        for j, block in enumerate(self.blocks):
            block.reset(self._block_seed(j))
        self._queue = collections.deque(range(len(self.blocks)))
        self._fresh, self._held = set(self._queue), None

    def send(self, actions) -> None:
        self._check_open()
        if self._held is None:
            raise RuntimeError("send() needs a batch: call recv() (after async_reset()) first")
        self.blocks[self._held].send(actions)  # a bad batch is refused before any game steps
        self._queue.append(self._held)
        self._held = None

    def recv(self):
        self._check_open()
        if self._held is not None or not self._queue:
            raise RuntimeError("recv() needs a pending async_reset() or send()")
        j = self._queue.popleft()
        block = self.blocks[j]
        if j in self._fresh:
            self._fresh.discard(j)
            observations, rewards, terminals, truncations = block.batch
        else:
            observations, rewards, terminals, truncations = block.recv()
        self._held = j
        return (observations, rewards.astype(np.float32), terminals, truncations,
                block._logs_due(), self._env_ids[j], self._masks)

    def frame(self, env_index: int = 0, view: str = "env"):
        if not 0 <= env_index < self.num_envs:
            raise IndexError(f"env_index {env_index} out of range [0, {self.num_envs})")
        block, local = self.blocks[env_index // self.batch_size], env_index % self.batch_size
        if view == "obs":
            block.refresh_observation(local)
            return observation_frame(block, local)
        return block.frame(local)

    def get_state(self) -> None:
        """None: Atari games cannot be saved (a resume starts their episodes afresh)."""
        return None

    def _release(self) -> None:
        blocks, self.blocks = self.blocks, []
        for block in blocks:
            block.close()
