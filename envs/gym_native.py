"""One native env as a standard `gymnasium.Env` (for tools and code that expect Gymnasium).

    env = puffer_tui.envs.make_gymnasium("squared", seed=0, render_mode="ansi", size=7)
    obs, info = env.reset()
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    print(env.render())

Tested in: tests/envs/test_gymnasium_interop.py
"""

from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec

from puffer_tui.engine.native.actions import ActionError
from puffer_tui.envs.registry import env_class

RENDER_FPS = 30
_UNKNOWN_TILE = "?"


class NativeGymEnv(gymnasium.Env):
    """A single native env (num_envs=1) behind the Gymnasium API.

    Single-agent envs keep their native spaces: a Box of observations and a Discrete,
    MultiDiscrete or Box of actions. `step` returns a fresh copy of the observation, a float
    reward and bool flags.

    Multi-agent envs (`agents_per_env` = A > 1) appear as one joint env: observations of
    shape (A, *obs), one action per agent (MultiDiscrete or Box of shape (A, ...)), the reward
    is the SUM of the agents' rewards, and terminated/truncated are true only on a step where
    every agent's episode ends (each agent also resets on its own). The per-agent values are
    in `info["rewards"]`, `info["terminals"]`, `info["truncations"]` and `info["masks"]`
    (False for agents not acting this step, e.g. dead and waiting to respawn).

    Autoreset: native envs reset themselves inside the step that ends an episode, so on a step
    that returns terminated or truncated the observation is already the FIRST observation of
    the next episode. On a truncation the last observation of the ended episode is in
    `info["final_observation"]` (for a multi-agent env: the rows of the agents in
    `info["truncations"]` are meaningful), as Gymnasium's vector autoreset does. Every step that
    ends an episode (of any agent) has `info["episode"]`: the finished episodes' averaged
    stats (`episode_return`, `episode_length`, `score`, the env's own fields, and their count
    `n`). You may keep stepping, or call `reset()`, which starts another fresh episode.

    Seeding: `reset(seed=s)` reseeds the C env with `s`; a `reset()` without a seed draws the
    next seed from `self.np_random`, so a seeded sequence of resets is reproducible. The
    `seed` given to the constructor is used by the first reset that names none. Reset
    `options` are accepted and ignored: native envs take their settings at construction.

    Rendering: `render_mode="ansi"` makes `render()` return the env's tile grid as text, one
    line per row, drawn with the glyphs of the env's palette.
    """

    # gymnasium.make reads the class's modes before building; an instance narrows them to
    # [] when its env has no tile grid to draw.
    metadata = {"render_modes": ["ansi"], "render_fps": RENDER_FPS}

    def __init__(self, name: str, seed: int | None = None, render_mode: str | None = None,
                 **settings):
        self.name = name
        self._env = env_class(name)(num_envs=1, seed=0, log_interval=1, **settings)
        self.agents = self._env.agents_per_env
        self._single_action_shape = self._env.single_action_space.shape
        if self.agents == 1:
            self.observation_space = self._env.single_observation_space
            self.action_space = self._env.single_action_space
        else:
            self.observation_space = _stacked(self._env.single_observation_space, self.agents)
            self.action_space = self._env.action_space  # one row per agent
        modes = ["ansi"] if self._env.frame_shape is not None else []
        self.metadata = {"render_modes": modes, "render_fps": RENDER_FPS}
        if render_mode is not None and render_mode not in modes:
            self._env.close()
            raise ValueError(
                f"{name} supports render modes {modes or 'none'}, got render_mode={render_mode!r}"
            )
        self.render_mode = render_mode
        self._first_seed = seed
        # A spec lets gymnasium tools (check_env, gymnasium.make(spec)) rebuild this env.
        self.spec = EnvSpec(
            id=f"puffer_tui/{name}-v0",
            entry_point=f"{__name__}:{type(self).__name__}",
            kwargs={"name": name, "seed": seed, **settings},
            nondeterministic=False,
        )
        self._reset_done = False

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is None and self._first_seed is not None:
            seed, self._first_seed = self._first_seed, None
        super().reset(seed=seed)
        native_seed = seed if seed is not None else int(self.np_random.integers(2**63))
        observations, _ = self._env.reset(native_seed)
        self._reset_done = True
        return self._observation(observations), {}

    def step(self, action):
        if not self._reset_done:
            raise RuntimeError(f"{self.name}: call reset() before step()")
        action = np.asarray(action)
        if action.shape != self.action_space.shape:
            raise ActionError(
                f"{self.name}: action has shape {action.shape}, expected "
                f"{self.action_space.shape} for {self.action_space}"
            )
        rows = action.reshape((self.agents, *self._single_action_shape))
        observations, rewards, terminals, truncations, logs = self._env.step(rows)
        info = {}
        if logs:  # log_interval=1: a log appears exactly on the steps that end episodes
            info["episode"] = dict(logs[0])
        if self.agents == 1:
            reward, terminated, truncated = rewards[0], terminals[0], truncations[0]
        else:
            reward, terminated, truncated = rewards.sum(), terminals.all(), truncations.all()
            info.update(rewards=rewards.copy(), terminals=terminals.copy(),
                        truncations=truncations.copy(), masks=self._env.masks.copy())
        if truncations.any():
            info["final_observation"] = self._observation(self._env.final_observations)
        return (
            self._observation(observations), float(reward), bool(terminated), bool(truncated),
            info,
        )

    def _observation(self, observations: np.ndarray) -> np.ndarray:
        """A copy the caller may keep (the buffer changes in place on the next step)."""
        return observations[0].copy() if self.agents == 1 else observations.copy()

    def render(self):
        if self.render_mode is None:
            return None
        tiles = self._env.frame(0)
        glyphs = {tile: glyph for tile, (glyph, _colour) in self._env.palette.items()}
        return "\n".join(
            "".join(glyphs.get(int(tile), _UNKNOWN_TILE) for tile in row) for row in tiles
        )

    def close(self):
        self._env.close()


def _stacked(space: spaces.Box, agents: int) -> spaces.Box:
    """`space` repeated for each agent along a new first axis."""
    shape = (agents, *space.shape)
    return spaces.Box(
        np.broadcast_to(space.low, shape), np.broadcast_to(space.high, shape), shape, space.dtype
    )


def make_gymnasium(name: str, seed: int | None = None, render_mode: str | None = None,
                   **settings) -> gymnasium.Env:
    """One instance of native env `name` as a `gymnasium.Env` (see `NativeGymEnv`)."""
    return NativeGymEnv(name, seed=seed, render_mode=render_mode, **settings)
