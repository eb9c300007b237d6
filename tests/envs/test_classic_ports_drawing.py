"""A Gymnasium id stepped by its C port is drawn as Gymnasium draws it: frame(i) is the
`rgb_array` picture Gymnasium's own env makes of env i's state, for the dashboard, eval
--render and recordings alike; the native envs of the same name keep their tiles."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from puffer_tui.engine.native.frames import RGB, TILES, frame_kind
from puffer_tui.envs.classic_ports import PORTS, port_creator

pytest.importorskip("pygame", reason="Gymnasium's renderer (the classic-control extra)")


@pytest.mark.parametrize("env_id", sorted(PORTS))
def test_the_ports_frame_is_gymnasiums_picture_of_its_state(env_id):
    import gymnasium

    creator = pickle.loads(pickle.dumps(port_creator(env_id, {})))  # as workers get it
    envs = creator(num_envs=3, seed=5)
    try:
        envs.reset(5)
        for _ in range(7):
            envs.step(envs.action_space.sample())
        frame = envs.frame(2)
        assert frame_kind(frame) == RGB, getattr(frame, "shape", frame)
        reference = gymnasium.make(env_id, render_mode="rgb_array").unwrapped
        reference.reset(seed=0)
        reference.state = type(envs).state_of(np.asarray(envs.observations[2], np.float64))
        if hasattr(reference, "last_u"):
            reference.last_u = None
        assert np.array_equal(frame, reference.render())
        reference.close()
        assert not np.array_equal(frame, envs.frame(0)) or env_id == "Pendulum-v1"
    finally:
        envs.close()


def test_the_native_env_of_the_same_name_keeps_its_tiles():
    cls = PORTS["CartPole-v1"][0]  # `puffer-tui train cartpole_v1`: the native env itself
    envs = cls(num_envs=1, seed=1)
    try:
        envs.reset(1)
        assert frame_kind(envs.frame(0)) == TILES
    finally:
        envs.close()
