"""The Python face of an environment: PufferEnv (the API) and NativeEnv (C envs behind it).

A PufferEnv holds `num_envs` environments with `agents_per_env` agents each, so
`num_agents = num_envs * agents_per_env` rows in its buffers. It owns its buffers, or adopts
ones it is given (`buf=`, e.g. rows of a vectorizer's shared memory), and writes into them in
place: the arrays returned by reset/step are the buffers themselves, not copies.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from gymnasium import spaces

from puffer_tui.engine.native.actions import ActionChecker
from puffer_tui.engine.native.buffers import (
    action_shape,
    allocate_buffers,
    check_buffers,
)
from puffer_tui.engine.native.settings import Setting, resolve_settings

# the standard log of an episode (the C envs' PUFFER_STANDARD_LOG, the Python envs' below)
LOG_FIELDS = ("episode_return", "episode_length", "score")
# A log's names of the env's own fields that were not numbers (each said once; not logged).
IGNORED = "ignored"


@dataclass(frozen=True)
class EnvLayout:
    observation_space: spaces.Box
    action_space: spaces.Space
    agents_per_env: int = 1
    frame_shape: tuple[int, int] | None = None


class PufferEnv:
    """Base class: buffers, action checks and the reset/step/frame API."""

    name: str = "env"
    description: str = ""
    # tile id -> (glyph, colour) used by the terminal and window renderers
    palette: dict[int, tuple[str, str]] = {}

    def __init__(
        self,
        observation_space: spaces.Box,
        action_space: spaces.Space,
        num_envs: int,
        agents_per_env: int = 1,
        buf: dict | None = None,
    ):
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.single_observation_space = observation_space
        self.single_action_space = action_space
        self.num_envs = int(num_envs)
        self.agents_per_env = int(agents_per_env)
        self.num_agents = self.num_envs * self.agents_per_env
        self._action_shape = (self.num_agents, *action_shape(action_space))
        self._actions_checker = ActionChecker(action_space, self.num_agents)
        if buf is None:
            buf = allocate_buffers(observation_space, action_space, self.num_agents)
        else:
            check_buffers(buf, observation_space, action_space, self.num_agents)
        self.buffers = buf
        self.observations = buf["observations"]
        self.actions = buf["actions"]
        self.rewards = buf["rewards"]
        self.terminals = buf["terminals"]
        self.truncations = buf["truncations"]
        self.masks = buf["masks"]
        self.final_observations = buf["final_observations"]
        self._reset_done = False  # step() before the first reset() is refused

    @staticmethod
    def check_counts(num_envs: int, log_interval: int) -> None:
        """Refuse impossible counts first, before an env is built (which can be slow)."""
        if log_interval < 1:
            raise ValueError(f"log_interval must be >= 1, got {log_interval}")
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")

    @property
    def action_space(self) -> spaces.Space:
        """The joint action space of all rows (handy for sampling)."""
        single = self.single_action_space
        if isinstance(single, spaces.Box):
            low = np.broadcast_to(single.low, self._action_shape)
            high = np.broadcast_to(single.high, self._action_shape)
            return spaces.Box(low, high, dtype=np.float32)
        sizes = single.n if isinstance(single, spaces.Discrete) else single.nvec
        return spaces.MultiDiscrete(np.broadcast_to(sizes, self._action_shape))

    @property
    def frame_shape(self) -> tuple[int, int] | None:
        """(H, W) of the tile grid from frame(), or None if the env cannot be rendered."""
        return None

    def write_actions(self, actions) -> None:
        """Copy `actions` into the action buffer, refusing wrong shapes, dtypes and values
        (int32 discrete values are range-checked in the buffer: by C, or check_action_values)."""
        if actions is self.actions:
            return
        actions = self._actions_checker.check(actions, self.name, trust_buffer_dtype=True)
        np.copyto(self.actions, actions, casting="unsafe")

    def check_action_values(self) -> None:
        """Range (discrete) or finiteness (continuous) of what reached the action buffer."""
        self._actions_checker.check_values(self.actions, self.name)

    def _raise_out_of_range(self, actions, index: int | None = None) -> None:
        self._actions_checker.raise_bad(actions, index, self.name)

    def _begin_step(self, actions) -> None:
        """step()'s start in every env: refuse a step before reset(), then take the actions."""
        if not self._reset_done:
            raise RuntimeError(f"{self.name}: call reset() before step()")
        self.write_actions(actions)

    def _episodes_begun(self):
        """reset()'s end in envs stepped in Python (a C env's reset clears its own): no reward
        or episode end yet, a fresh log, steps allowed. Returns reset()'s (observations, infos)."""
        self.rewards[:] = 0
        self.terminals[:] = False
        self.truncations[:] = False
        self._start_log(self.log_interval)
        self._reset_done = True
        return self.observations, []

    # -- the API subclasses implement ---------------------------------------------------------

    # -- the episode log: sums kept here for envs stepped in Python (C envs keep theirs) -----

    def _start_log(self, log_interval: int) -> None:
        if log_interval < 1:
            raise ValueError(f"log_interval must be >= 1, got {log_interval}")
        self.log_interval = int(log_interval)
        self._log = dict.fromkeys((*LOG_FIELDS, "n"), 0.0)
        # the env's own fields, as a C env's log has them: {name: [sum, episodes]}
        self._log_fields: dict[str, list[float]] = {}
        self._log_ignored: list[str] = []  # names to say once, with the next log
        self._steps_since_log = 0

    def _log_episodes(self, episode_return: float, length: float, score=None,
                      episodes: float = 1.0, fields: dict | None = None,
                      ignored: tuple = ()) -> None:
        """Add finished episodes (sums over them); `score` defaults to the return, and an
        env's own score counts only when it is a real number. `fields`: the env's own
        numbers (sums over these episodes), each averaged over the episodes that had it;
        `ignored`: names of fields that were not numbers, said once in the next log."""
        if not isinstance(score, numbers.Real) or isinstance(score, bool):
            score = episode_return
        self._log["episode_return"] += float(episode_return)
        self._log["episode_length"] += float(length)
        self._log["score"] += float(score)
        self._log["n"] += float(episodes)
        for name, value in (fields or {}).items():
            total = self._log_fields.setdefault(name, [0.0, 0.0])
            total[0] += value
            total[1] += episodes
        self._log_ignored.extend(ignored)

    def log(self) -> dict:
        """Averaged stats of the episodes finished since the last call ({} if none)."""
        n = self._log["n"]
        if n <= 0:
            return {}
        averaged = {key: self._log[key] / n for key in LOG_FIELDS}
        averaged.update({name: total / count for name, (total, count) in
                         self._log_fields.items() if count > 0})
        averaged["n"] = n
        if self._log_ignored:
            averaged[IGNORED] = tuple(self._log_ignored)
        self._log = dict.fromkeys(self._log, 0.0)
        self._log_fields, self._log_ignored = {}, []
        return averaged

    def _logs_due(self) -> list[dict]:
        """step()'s infos: the averaged log every `log_interval` steps, when episodes ended."""
        self._steps_since_log += 1
        if self._steps_since_log < self.log_interval:
            return []
        self._steps_since_log = 0
        log = self.log()
        return [log] if log else []

    def reset(self, seed: int | None = None):
        """Start every env's episode; returns (observations, infos)."""
        raise NotImplementedError

    def step(self, actions):
        """Step every env; returns (observations, rewards, terminals, truncations, infos).

        `infos` is a list of dicts, each the averaged log of the episodes finished since the
        last one (empty most steps)."""
        raise NotImplementedError

    def frame(self, env_index: int = 0) -> np.ndarray | None:
        """The (H, W) uint8 tile grid of one env, or None if the env cannot be rendered."""
        return None

    def get_state(self) -> dict | None:
        """Everything needed to continue these envs exactly (see NativeEnv), or None when the
        env cannot save its state (wrapped Gymnasium envs): a resume then starts afresh."""
        return None

    def set_state(self, state: dict) -> None:
        raise NotImplementedError(f"{self.name} cannot restore a saved state")

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class NativeEnv(PufferEnv):
    """A PufferEnv whose environments are C structs stepped by a Cython `Binding`.

    Subclasses set `binding` (the env's compiled module) and `settings_schema`, and implement
    `layout(settings)`. Every native env is then built the same way:
    `Env(num_envs=1, seed=0, buf=None, log_interval=32, **settings)`.
    """

    binding = None  # the env's compiled binding module
    order = 100  # place in env lists (lower first, then by name); a literal, read unimported
    settings_schema: tuple[Setting, ...] = ()

    @classmethod
    def layout(cls, settings: dict) -> EnvLayout:
        """Spaces, agents per env and frame shape for these (already checked) settings."""
        raise NotImplementedError

    @classmethod
    def resolve(cls, settings: dict) -> dict:
        """Checked settings with defaults filled in; subclasses add cross-field checks."""
        return resolve_settings(cls.name, cls.settings_schema, settings)

    def __init__(
        self,
        num_envs: int = 1,
        seed: int = 0,
        buf: dict | None = None,
        log_interval: int = 32,
        **settings,
    ):
        self.check_counts(num_envs, log_interval)
        self.settings = self.resolve(settings)
        layout = self.layout(self.settings)
        super().__init__(
            layout.observation_space, layout.action_space, num_envs, layout.agents_per_env, buf
        )
        self.seed = int(seed)
        self.log_interval = int(log_interval)
        self._frame_shape = layout.frame_shape
        self._steps_since_log = 0
        self._c = self.binding.Binding(
            self.buffers, self.num_envs, self.agents_per_env, self.settings,
            self._actions_checker.nvec,
            self.seed & 0xFFFFFFFFFFFFFFFF,
        )

    @property
    def frame_shape(self):
        return self._frame_shape

    def reset(self, seed: int | None = None):
        if seed is not None:
            self.seed = int(seed)
        self.masks[:] = True
        self._c.reset(self.seed & 0xFFFFFFFFFFFFFFFF)
        self._steps_since_log = 0
        self._reset_done = True
        return self.observations, []

    def step(self, actions):
        self._begin_step(actions)
        bad = self._c.step()
        if bad >= 0:
            self._raise_out_of_range(self.actions, bad)
        return self.observations, self.rewards, self.terminals, self.truncations, \
            self._logs_due()

    def get_state(self) -> dict:
        """The C envs' state bytes (structs, heap blocks, RNG streams and logs, see
        puffer_env.h) and the Python-side counters, to continue exactly with set_state()."""
        return {"env": self.name, "settings": dict(self.settings), "num_envs": self.num_envs,
                "c": self._c.get_state(), "steps_since_log": self._steps_since_log,
                "reset_done": self._reset_done}

    def set_state(self, state: dict) -> None:
        """Restore get_state() of envs with this class, settings and number of envs."""
        if state.get("env") != self.name:
            raise ValueError(f"saved env state is for {state.get('env')!r}, not {self.name!r}")
        if state.get("settings") != self.settings:
            raise ValueError(f"saved {self.name} state has settings {state.get('settings')}, "
                             f"these envs {self.settings}")
        if state.get("num_envs") != self.num_envs:
            raise ValueError(f"saved {self.name} state holds {state.get('num_envs')} envs, "
                             f"this object {self.num_envs}")
        self._c.set_state(state["c"])
        self._steps_since_log = int(state["steps_since_log"])
        self._reset_done = bool(state["reset_done"])

    def log(self) -> dict:
        """Averaged stats of the episodes finished since the last call ({} if none)."""
        log = self._c.log()
        return log if log.get("n", 0) > 0 else {}

    def frame(self, env_index: int = 0) -> np.ndarray | None:
        if self._frame_shape is None:
            return None
        tiles = np.zeros(self._frame_shape, dtype=np.uint8)
        self._c.frame(env_index, tiles)
        return tiles
