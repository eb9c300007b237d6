"""A new run of a Python env builds that env once before its checks refuse or pass it, and
never resets or steps it there (a run too big for memory is refused from its spaces' sizes,
before anything is allocated).

The user's module counts its constructions and resets in a file; the command line is run as a
user runs it, from the module's folder.
"""

import subprocess
import sys
import textwrap

import pytest

COUNTED_ENV = textwrap.dedent('''
    import os
    import gymnasium as gym
    import numpy as np

    def _note(what):
        with open(os.environ["COUNT_FILE"], "a") as f:
            f.write(what + "\\n")

    class Counted(gym.Env):
        metadata = {"render_modes": ["rgb_array"]}

        def __init__(self, side=8, render_mode=None):
            _note("built")
            self.render_mode = render_mode
            self.observation_space = gym.spaces.Box(0, 255, (side, side), np.uint8)
            self.action_space = gym.spaces.Discrete(2)

        def reset(self, seed=None, options=None):
            _note("reset")
            return np.zeros(self.observation_space.shape, np.uint8), {}

        def step(self, action):
            _note("step")
            return np.zeros(self.observation_space.shape, np.uint8), 0.0, True, False, {}

    def make(**settings):
        return Counted(**settings)
''')


@pytest.fixture
def counted(tmp_path):
    (tmp_path / "counted_env.py").write_text(COUNTED_ENV)
    return tmp_path


def _train(folder, *flags):
    env = {"COUNT_FILE": str(folder / "count.txt"), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-m", "puffer_tui.app.cli", "train", "counted_env:make", "--headless",
         "--runs-dir", str(folder / "runs"), *flags],
        cwd=folder, env=env, capture_output=True, text=True, timeout=120)
    calls = (folder / "count.txt").read_text().split() if (folder / "count.txt").exists() else []
    return result, calls


@pytest.mark.parametrize("flags, refusal", [
    (["--vec.num-envs", "1000000"], "more than the whole budget"),  # the budget check
    (["--env.side", "4096", "--vec.num-envs", "4096"], "of memory"),  # the memory check
])
def test_a_refused_run_built_its_env_once_and_never_stepped_it(counted, flags, refusal):
    result, calls = _train(counted, *flags)
    assert result.returncode == 2 and refusal in result.stderr, result.stderr
    assert calls == ["built"], calls  # one construction; no reset, no step, no second env
    assert not (counted / "runs").exists() or not any((counted / "runs").iterdir())
