"""Serial: every env in the calling process, writing straight into the vec's buffers."""

from __future__ import annotations

import numpy as np

from puffer_tui.engine.native.buffers import allocate_buffers
from puffer_tui.engine.native.frames import observation_frame
from puffer_tui.engine.vec import saved_state
from puffer_tui.engine.vec.vec_api import VecAPI


class Serial(VecAPI):
    """One PufferEnv holding all `num_envs` envs; send() steps it, recv() returns the buffers."""

    def __init__(self, env_creator, num_envs: int = 1, seed: int = 0, env_kwargs=None):
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.num_envs = num_envs
        self.seed = seed
        # Build once without buffers to learn the spaces, then for real into our buffers.
        probe = env_creator(num_envs=1, seed=seed, **(env_kwargs or {}))
        self.single_observation_space = probe.single_observation_space
        self.single_action_space = probe.single_action_space
        self.agents_per_env = probe.agents_per_env
        probe.close()
        self.num_agents = num_envs * self.agents_per_env
        self.buffers = allocate_buffers(
            self.single_observation_space, self.single_action_space, self.num_agents
        )
        self.env = env_creator(num_envs=num_envs, seed=seed, buf=self.buffers, **(env_kwargs or {}))
        self.observations = self.buffers["observations"]
        self.actions = self.buffers["actions"]
        self.rewards = self.buffers["rewards"]
        self.terminals = self.buffers["terminals"]
        self.truncations = self.buffers["truncations"]
        self.masks = self.buffers["masks"]
        # the observation that ended a truncated episode, on the step its truncation is reported
        self.final_observations = self.buffers["final_observations"]
        self.env_ids = np.arange(self.num_agents, dtype=np.int64)
        self.agents_per_batch = self.num_agents
        self._infos: list = []
        # The async API alternates strictly, as in the Multiprocessing backend:
        # async_reset/send -> recv -> send -> recv ... A result is `_pending` until received,
        # and a received batch is `_held` until its actions are sent.
        self._pending = False
        self._held = False
        self._closed = False

    @property
    def driver_env(self):
        return self.env

    def async_reset(self, seed: int | None = None) -> None:
        self._check_open()
        if seed is not None:
            self.seed = seed
        _, self._infos = self.env.reset(self.seed)
        self.rewards[:] = 0
        self.terminals[:] = False
        self.truncations[:] = False
        self._pending = True
        self._held = False

    def send(self, actions) -> None:
        self._check_open()
        if not self._held:
            raise RuntimeError("send() needs a batch: call recv() (after async_reset()) first")
        # A bad batch raises ActionError before any env steps; the batch stays held.
        _, _, _, _, self._infos = self.env.step(actions)
        self._held = False
        self._pending = True

    def recv(self):
        self._check_open()
        if not self._pending:
            raise RuntimeError("recv() without a pending async_reset() or send()")
        self._pending = False
        self._held = True
        infos, self._infos = self._infos, []
        return (
            self.observations, self.rewards, self.terminals, self.truncations,
            infos, self.env_ids, self.masks,
        )

    def frame(self, env_index: int = 0, view: str = "env"):
        """Env `env_index`'s frame: its own drawing ("env"), or its observation ("obs")."""
        if view == "obs":
            return observation_frame(self.env, env_index)
        return self.env.frame(env_index)

    def get_state(self) -> dict | None:
        """The envs' state and the pending step result (engine/vec/saved_state.py), or None when
        the envs cannot save theirs. Call between send() and recv() (or after async_reset)."""
        self._check_open()
        if self._held:
            raise RuntimeError("get_state() while a batch is held: send() its actions first")
        return saved_state.capture(self.buffers, saved_state.join([self.env.get_state()]),
                                 self._infos, self._pending)

    def set_state(self, state: dict) -> None:
        """Continue from get_state() of a vec env of the same env, settings and num_envs."""
        self._check_open()
        saved_state.check_matches(state["envs"], self.env)
        (part,) = saved_state.split(state["envs"], [self.num_envs])
        self.env.set_state(part)
        saved_state.restore_buffers(self.buffers, state["buffers"])
        self._infos = list(state["infos"])
        self._pending, self._held = bool(state["pending"]), False

    def _release(self) -> None:
        self.env.close()
