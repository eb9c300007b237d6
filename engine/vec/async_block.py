"""An async pool in the caller's process, of a block of envs that steps in batches itself:
for Atari, ale-py's C++ threads step some games while the caller works on the others
(EnvPool's async mode, behind our vec API). The block (envs/ale_vector.py's AleVectorBlock,
its creator marked `async_batches`) takes `batch_size`, and has reset(), send(actions),
recv() -> (observations, rewards, terminals, truncations) with their rows in `batch_rows`,
refresh_observation(i), frame(i) and the PufferEnv episode log.

    vec = make(creator("gym:ALE/Pong-v5"), num_envs=16, backend="serial", batch_size=8)
    vec.async_reset(0)
    obs, rewards, terminals, truncations, infos, env_ids, masks = vec.recv()   # 8 games
    vec.send(actions)                                                           # theirs

With `batch_size == num_envs` the serial backend steps every game at once and the C++ threads
wait while the policy thinks; here recv() returns the first `batch_size` games to finish, and
the rest keep stepping meanwhile. Which games make up a batch is a matter of timing (as in a
gathered multiprocessing pool or EnvPool), so a pooled run is not reproducible, and its
checkpoints carry no env state (Atari games cannot be saved either way: docs/exact-resume.md).
Every game still steps once per send of its actions; `final_observations` and the episode logs
work as in the synchronous block. The pool returns the block's own arrays (ale-py's, fresh
each batch): no copy into the buffers, which hold only final observations (and a game's
observation when it is drawn).
"""

from __future__ import annotations

import numpy as np

from puffer_tui.engine.native.buffers import allocate_buffers
from puffer_tui.engine.vec.vec_api import VecAPI


class AsyncBlockPool(VecAPI):
    """`num_envs` games of one ALE id; recv() returns `batch_size` of them (the first done)."""

    def __init__(self, block_creator, num_envs: int, batch_size: int, seed: int = 0,
                 env_kwargs: dict | None = None):
        if not 1 <= batch_size < num_envs or num_envs % batch_size:
            raise ValueError(f"an async pool's batch_size must divide num_envs={num_envs} and be "
                             f"smaller, got {batch_size}; batch_size={num_envs} is the "
                             f"synchronous serial backend")
        self.num_envs, self.batch_size, self.seed = num_envs, batch_size, int(seed)
        layout = block_creator.layout
        self.single_observation_space = layout.observation_space
        self.single_action_space = layout.action_space
        self.agents_per_env, self.num_agents = 1, num_envs
        self.agents_per_batch = batch_size
        self.buffers = allocate_buffers(self.single_observation_space,
                                        self.single_action_space, num_envs)
        self.env = block_creator(num_envs=num_envs, seed=self.seed, buf=self.buffers,
                                 batch_size=batch_size, **(env_kwargs or {}))
        for name in ("observations", "actions", "rewards", "terminals", "truncations", "masks",
                     "final_observations"):
            setattr(self, name, self.buffers[name])
        self._masks = np.ones(batch_size, bool)
        # The async API alternates strictly: async_reset/send -> recv -> send -> recv ...
        # `_fresh`: reset() has received the first batch, which the next recv() returns.
        self._pending = self._held = self._fresh = self._started = False

    @property
    def driver_env(self):
        return self.env

    def async_reset(self, seed: int | None = None) -> None:
        self._check_open()
        if seed is not None:
            self.seed = int(seed)
        if self._started:  # ale-py resets only with no game in flight: land them all first
            if self._held or self._fresh:  # a batch waits for actions: no-ops, then collect
                self.env.send(np.zeros(self.batch_size, np.int32))
            for _ in range(self.num_envs // self.batch_size):
                self.env.recv()
        self._started = True
        self.env.reset(self.seed)  # receives the first batch too
        self._fresh, self._pending, self._held = True, True, False

    def send(self, actions) -> None:
        self._check_open()
        if not self._held:
            raise RuntimeError("send() needs a batch: call recv() (after async_reset()) first")
        self.env.send(actions)  # refuses a bad batch before any game steps; it stays held
        self._held, self._pending = False, True

    def recv(self):
        self._check_open()
        if not self._pending:
            raise RuntimeError("recv() without a pending async_reset() or send()")
        if self._fresh:  # the batch reset() received
            self._fresh = False
            observations, rewards, terminals, truncations = self.env.batch
        else:
            observations, rewards, terminals, truncations = self.env.recv()
        self._pending, self._held = False, True
        return (observations, rewards.astype(np.float32), terminals, truncations,
                self.env._logs_due(), self.env.batch_rows.astype(np.int64), self._masks)

    def frame(self, env_index: int = 0, view: str = "env"):
        from puffer_tui.engine.native.frames import observation_frame

        if not 0 <= env_index < self.num_envs:
            raise IndexError(f"env_index {env_index} out of range [0, {self.num_envs})")
        if view == "obs":
            self.env.refresh_observation(env_index)
            return observation_frame(self.env, env_index)
        return self.env.frame(env_index)

    def get_state(self) -> None:
        """None: Atari games cannot be saved (a resume starts their episodes afresh)."""
        return None

    def _release(self) -> None:
        self.env.close()
