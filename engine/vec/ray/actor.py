"""The Ray actor of the `ray` vec backend: one block of envs stepped together per call.

A plain class (no Ray import here): engine/vec/ray/ray_backend.py turns it into an actor with
`ray.remote`. It owns `num_envs` envs built by the same creator the other backends get,
writing into its own buffers; every call steps (or resets) the whole block and returns the
rows as numpy arrays, which Ray ships through its object store (out-of-band pickle buffers,
read without a copy on the caller's side). One remote call per block and step, never per env.

Tested in: tests/engine/vec/ray/test_ray_backend.py"""

from __future__ import annotations

import os

import numpy as np

from puffer_tui.engine.native.buffers import allocate_buffers

# What a step or reset sends back, in this order (then final observations, then infos).
RESULT_BUFFERS = ("observations", "rewards", "terminals", "truncations", "masks")


class EnvBlock:
    """`num_envs` envs seeded from `seed` (env i of the block from seed + i, as a worker of
    the multiprocessing backend seeds them)."""

    def __init__(self, env_creator, env_kwargs: dict, num_envs: int, seed: int):
        probe = env_creator(num_envs=1, seed=seed, **env_kwargs)
        observation_space, action_space = probe.single_observation_space, probe.single_action_space
        rows = num_envs * probe.agents_per_env
        probe.close()
        self.buffers = allocate_buffers(observation_space, action_space, rows)
        self.env = env_creator(num_envs=num_envs, seed=seed, buf=self.buffers, **env_kwargs)

    def where(self) -> tuple[int, str, str]:
        """(pid, node id, host name) of this actor's process, for the caller's records, the
        dashboard's workers table and tests."""
        import socket

        import ray

        return os.getpid(), ray.get_runtime_context().get_node_id(), socket.gethostname()

    def reset(self, seed: int) -> tuple:
        infos = self.env.reset(seed)[1]
        self.buffers["rewards"][:] = 0
        self.buffers["terminals"][:] = False
        self.buffers["truncations"][:] = False
        return self._result(infos)

    def step(self, actions: np.ndarray) -> tuple:
        infos = self.env.step(actions)[4]
        return self._result(infos)

    def _result(self, infos) -> tuple:
        b = self.buffers
        # final observations matter only on rows truncated this step: skip them otherwise
        final = b["final_observations"] if b["truncations"].any() else None
        return (*(b[name] for name in RESULT_BUFFERS), final, list(infos or ()))

    def frame(self, env_index: int):
        return self.env.frame(env_index)

    def get_state(self):
        return self.env.get_state()

    def set_state(self, state: dict, buffers: dict) -> None:
        """Restore the envs and this block's rows of the saved buffers: envs may read their
        buffers back (e.g. update observations in place), as they do in shared memory."""
        self.env.set_state(state)
        for name, rows in buffers.items():
            np.copyto(self.buffers[name], rows)

    def close(self) -> None:
        self.env.close()
