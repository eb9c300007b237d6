"""An observation subspace no flat row holds (MiniGrid's `mission` text) is named once, as one
plain line on stderr, not as Python's `file:line: UserWarning` with the source line under it;
code that records warnings still gets it."""

import subprocess
import sys
import textwrap
import warnings

from gymnasium import spaces

from puffer_tui.envs import gym_spaces

PROGRAM = textwrap.dedent("""
    import gymnasium, numpy as np
    from gymnasium import spaces
    from puffer_tui.envs.gym_emulation import from_gymnasium

    class Mission(gymnasium.Env):
        observation_space = spaces.Dict({"mission": spaces.Text(8),
                                         "pos": spaces.Box(0, 9, (2,), np.int64)})
        action_space = spaces.Discrete(2)
        def reset(self, seed=None, options=None):
            return {"mission": "go", "pos": np.zeros(2, np.int64)}, {}
        def step(self, action):
            return self.reset()[0], 0.0, False, False, {}

    from_gymnasium(Mission)(num_envs=1, seed=0).close()
    from_gymnasium(Mission)(num_envs=1, seed=0).close()  # the same again: no second line
""")


def test_the_note_is_one_clean_line():
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == ["puffer-tui: note: observation subspaces dropped (no encoder for them): "
                     "mission (Text); the policy sees the rest"], done.stderr


def test_recorded_warnings_still_get_it(monkeypatch):
    monkeypatch.setattr(gym_spaces, "_warned_drops", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gym_spaces.ObservationLayout(spaces.Dict({"mission": spaces.Text(4),
                                                  "pos": spaces.Discrete(3)}))
    assert [w.category for w in caught] == [gym_spaces.DroppedSubspacesWarning]
