"""The vec envs' Gymnasium-style batched spaces, and worker start-up without the caller's
__main__ (a creator defined there either works with the script guard or is refused in one
line)."""

import subprocess
import sys
import textwrap

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


CREATOR_IN_MAIN = textwrap.dedent("""
    import functools
    import puffer_tui.envs as envs
    from puffer_tui.engine import vec

    def make_squared(**kwargs):
        return envs.make("squared", **kwargs)

    if __name__ == "__main__":
        with vec.make(make_squared, num_envs=4, backend="multiprocessing", num_workers=2) as v:
            v.reset(0)
        print("worked")
""")


def test_a_creator_defined_in_a_guarded_script_works(tmp_path):
    script = tmp_path / "mine.py"
    script.write_text(CREATOR_IN_MAIN)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "worked" in result.stdout


def test_a_creator_defined_in_python_c_is_refused_in_one_line():
    result = subprocess.run([sys.executable, "-c", CREATOR_IN_MAIN.replace(
        'if __name__ == "__main__":', "if True:")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("TypeError: env_creator") and "define it in a module file" in last
