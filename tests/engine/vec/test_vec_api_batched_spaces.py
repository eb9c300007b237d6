"""The vec envs' Gymnasium-style batched spaces (engine/vec/vec_api.py): one row per agent of
a batch, on every backend."""

import numpy as np
import pytest
from gymnasium import spaces

import puffer_tui.envs as envs
from puffer_tui.engine import vec
from puffer_tui.engine.vec.vec_api import batched


@pytest.mark.parametrize("backend, kwargs", [
    ("serial", {}),
    ("multiprocessing", {"num_workers": 2, "batch_size": 8}),
])
def test_batched_spaces_describe_one_batch(backend, kwargs):
    with vec.make(envs.creator("squared"), num_envs=16, backend=backend, seed=3,
                  **kwargs) as v:
        v.async_reset(3)
        obs, *_ = v.recv()
        assert v.observation_space.shape == obs.shape == (v.agents_per_batch, 121)
        assert v.observation_space.contains(obs)
        actions = v.action_space.sample()
        assert isinstance(v.action_space, spaces.MultiDiscrete)
        assert actions.shape == (v.agents_per_batch,) and actions.max() < 5
        v.send(actions)
        v.recv()


def test_batched_box_keeps_bounds_and_dtype():
    single = spaces.Box(np.float32([-1, 0]), np.float32([1, 2]), dtype=np.float32)
    space = batched(single, 3)
    assert space.shape == (3, 2) and space.dtype == np.float32
    assert (space.high[:, 1] == 2).all()
    nested = batched(spaces.MultiDiscrete([3, 4]), 2)
    assert nested.nvec.tolist() == [[3, 4], [3, 4]]
