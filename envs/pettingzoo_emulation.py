"""Any PettingZoo parallel env as a multi-agent PufferEnv: one buffer row per possible agent.

    from mpe2 import simple_spread_v3
    creator = from_pettingzoo(simple_spread_v3.parallel_env, N=3)
    vec = puffer_tui.engine.vec.make(creator, num_envs=8, backend="multiprocessing")

`creator(num_envs=, seed=, buf=None)` builds a `PettingZooPufferEnv` of `num_envs` parallel
envs with `len(possible_agents)` rows each (env i's agent j is row i * agents + j). Every
agent must share one observation space and one action space; they are flattened as for
Gymnasium envs (envs/gym_spaces.py: Dict/Tuple observations keep their leaf layout).
"""

from __future__ import annotations

import functools
import importlib
import pickle
import sys
import types

import numpy as np

from puffer_tui.engine.native import frames
from puffer_tui.engine.native.progress import progress
from puffer_tui.engine.native.pufferenv import PufferEnv
from puffer_tui.envs.gym_emulation import (
    FRAME_MODES,
    _quiet_headless_sdl,
    _takes_render_mode,
    episode_fields,
)
from puffer_tui.envs.gym_spaces import ActionLayout, ObservationLayout

INSTALL_HINT = "pip install 'puffer-tui[pettingzoo]' (or: pip install pettingzoo mpe2)"


class PettingZooPufferEnv(PufferEnv):
    """`num_envs` PettingZoo parallel envs behind the PufferEnv buffers API.

    Masks follow the native multi-agent envs (envs/cpr, envs/snake):
    * an agent present this step has mask 1 and its observation in its row;
    * on the step an agent's episode ends while others go on, its row reports terminal (or
      truncated, its final observation in `final_observations`) with its reward, mask 0 and
      zeros; it stays masked with zeros until the env's episode ends. Agents not spawned yet
      are masked the same way until they appear;
    * when no agent is left the env resets in the same step (autoreset): rows of agents
      ending then report their terminal/truncation next to the new episode's observation.
    Rewards are per agent (absent agents get 0). Every `log_interval` steps the averages over
    the agents' finished episodes since the last report: episode_return, episode_length,
    score (the agent's final `infos[agent]["score"]` if a number, else its return) and n,
    with the other numbers of that info as the env's own fields (gym_emulation.py).
    Seeding: `reset(seed)` seeds env i with `seed + i`; autoresets continue each env's RNG.
    """

    def __init__(self, env_creator, num_envs: int = 1, seed: int = 0, buf: dict | None = None,
                 log_interval: int = 32, env_kwargs: dict | None = None):
        self.check_counts(num_envs, log_interval)
        env_creator = _resolve_creator(env_creator)
        self.envs = []
        try:
            for _ in range(num_envs):
                self.envs.append(env_creator(**(env_kwargs or {})))
                progress()  # each env a sign of life: a slow block is not a hung worker
            self.agents = _check_parallel(self.envs[0])
            observation_space, action_space = _common_spaces(self.envs, self.agents)
            self.observation_layout = ObservationLayout(observation_space)
            self.action_layout = ActionLayout(action_space)
            first = self.envs[0]
            metadata = getattr(first, "metadata", None) or {}
            self.name = str(metadata.get("name") or type(first).__name__)
            super().__init__(self.observation_layout.space, self.action_layout.space,
                             num_envs, len(self.agents), buf)
        except BaseException:
            self.close()
            raise
        self.seed = int(seed)
        self._start_log(log_interval)
        self._row = {agent: j for j, agent in enumerate(self.agents)}
        self._returns = np.zeros(self.num_agents, np.float64)
        self._lengths = np.zeros(self.num_agents, np.int64)
        self._said: set = set()  # info values already named as not numbers

    def unflatten_observations(self, flat):
        return self.observation_layout.unflatten(flat)

    # -- rows --------------------------------------------------------------------------------

    def _write_present(self, i: int, env, observations: dict) -> None:
        """Rows of env i: the observations of the agents in the env now (mask 1), zeros and
        mask 0 for the others (dead, or not spawned yet)."""
        base = i * self.agents_per_env
        present = set(env.agents)
        for agent, j in self._row.items():
            row = base + j
            if agent in present and agent in observations:
                self.observation_layout.flatten(observations[agent], out=self.observations[row])
                self.masks[row] = True
            else:
                self.observations[row] = 0
                self.masks[row] = False

    def reset(self, seed: int | None = None):
        if seed is not None:
            self.seed = int(seed)
        for i, env in enumerate(self.envs):
            observations, _ = env.reset(seed=self.seed + i)
            self._write_present(i, env, observations)
            progress()
        self._returns[:] = 0
        self._lengths[:] = 0
        return self._episodes_begun()

    def step(self, actions):
        self._begin_step(actions)
        self.check_action_values()
        self.rewards[:] = 0
        self.terminals[:] = False
        self.truncations[:] = False
        agents_per_env = self.agents_per_env
        for i, env in enumerate(self.envs):
            base = i * agents_per_env
            acting = list(env.agents)
            joint = {agent: self.action_layout.unflatten(self.actions[base + self._row[agent]])
                     for agent in acting}
            observations, rewards, terminations, truncations, infos = env.step(joint)
            for agent in acting:
                row = base + self._row[agent]
                reward = float(rewards.get(agent, 0.0))
                self.rewards[row] = reward
                self._returns[row] += reward
                self._lengths[row] += 1
                terminated = bool(terminations.get(agent, False))
                truncated = bool(truncations.get(agent, False)) and not terminated
                if not (terminated or truncated):
                    continue
                self.terminals[row] = terminated
                self.truncations[row] = truncated
                if truncated and agent in observations:
                    self.observation_layout.flatten(
                        observations[agent], out=self.final_observations[row])
                self._end_episode(row, infos.get(agent) if isinstance(infos, dict) else None)
            if not env.agents:  # everyone is done: autoreset in this step
                observations, _ = env.reset()
            self._write_present(i, env, observations)
            progress()
        return self.observations, self.rewards, self.terminals, self.truncations, \
            self._logs_due()

    def _end_episode(self, row: int, info) -> None:
        """One agent's episode ended (the log averages per agent; the other numbers of its
        last info are its own fields, as for Gymnasium envs)."""
        fields, ignored = episode_fields(info, self._said)
        self._log_episodes(self._returns[row], self._lengths[row],
                           info.get("score") if isinstance(info, dict) else None,
                           fields=fields, ignored=ignored)
        self._returns[row] = 0.0
        self._lengths[row] = 0

    def frame(self, env_index: int = 0):
        """Env `env_index`'s render() (all its agents in one picture): an RGB image within the
        frame bounds, text, or None when the envs were built to render neither way."""
        env = self.envs[env_index]
        if getattr(env, "render_mode", None) not in FRAME_MODES:
            return None
        _quiet_headless_sdl()
        try:
            picture = env.render()
        except Exception as e:  # shown in the panel instead of "waiting for frames"
            return f"{self.name}: render() failed: {type(e).__name__}: {e}"
        return None if picture is None else frames.bound_frame(picture)

    def close(self) -> None:
        envs, self.envs = getattr(self, "envs", []), []
        for env in envs:
            close = getattr(env, "close", None)  # absent on what a bad creator returned
            if close is not None:
                close()


def _check_parallel(env) -> list:
    """The env's possible agents; a clear error for AEC envs and non-PettingZoo objects."""
    if hasattr(env, "agent_selection"):
        raise TypeError(
            f"{type(env).__name__} is a PettingZoo AEC env; pass its parallel version (the "
            "module's parallel_env, or pettingzoo.utils.conversions.aec_to_parallel)")
    missing = [name for name in ("possible_agents", "observation_space",
                                 "action_space", "reset", "step") if not hasattr(env, name)]
    if missing:
        raise TypeError(f"the env creator returned {type(env).__name__}, not a PettingZoo "
                        f"ParallelEnv (it lacks {', '.join(missing)})")
    agents = list(env.possible_agents)
    if not agents:
        raise ValueError(f"{type(env).__name__}: possible_agents is empty")
    return agents


def _common_spaces(envs, agents):
    """The observation and action space every agent of every env shares."""
    first = envs[0]
    obs, act = first.observation_space(agents[0]), first.action_space(agents[0])
    for env in envs:
        for agent in agents:
            if env.observation_space(agent) != obs or env.action_space(agent) != act:
                raise ValueError(
                    f"agent {agent!r} has spaces {env.observation_space(agent)} / "
                    f"{env.action_space(agent)}, agent {agents[0]!r} {obs} / {act}: every agent "
                    "must share one observation and one action space (pad them, e.g. with "
                    "supersuit's pad_observations_v0 / pad_action_space_v0)")
    return obs, act


def _module_attribute_call(module_name: str, attribute: str, **kwargs):
    return getattr(importlib.import_module(module_name), attribute)(**kwargs)


def _by_reference(module_name: str, attribute: str):
    """A picklable call of `module_name.attribute`, checked to exist now."""
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        hint = f"; {INSTALL_HINT}" if module_name.split(".")[0] in ("pettingzoo", "mpe2") else ""
        raise ImportError(f"cannot import {module_name!r} ({exc}){hint}") from exc
    if not callable(getattr(module, attribute, None)):
        raise TypeError(f"{module_name} has no callable {attribute!r}")
    return functools.partial(_module_attribute_call, module_name, attribute)


def _named_in_a_module(obj):
    """(module name, attribute) under which a loaded module holds `obj`, else None. PettingZoo
    modules' `parallel_env` is a local function (parallel_wrapper_fn), which cannot pickle:
    the multiprocessing backend gets it by name instead."""
    for name, module in list(sys.modules.items()):
        namespace = getattr(module, "__dict__", None) or {}
        for attribute in ("parallel_env", "env", getattr(obj, "__name__", "")):
            if attribute and namespace.get(attribute) is obj:
                return name, attribute
    return None


def _resolve_creator(env_creator):
    """A callable returning a ParallelEnv, picklable for the vec workers. Accepted: such a
    callable; "module.path:callable"; a module with `parallel_env` (mpe2.simple_spread_v3)."""
    if isinstance(env_creator, str):
        module_name, sep, attribute = env_creator.partition(":")
        if not sep or not module_name or not attribute:
            raise ValueError(f"{env_creator!r}: expected 'module.path:callable'")
        return _by_reference(module_name, attribute)
    if isinstance(env_creator, types.ModuleType):
        return _by_reference(env_creator.__name__, "parallel_env")
    if not callable(env_creator):
        raise TypeError("from_pettingzoo needs a callable returning a PettingZoo ParallelEnv "
                        f"(or 'module:callable', or a module with parallel_env), got {env_creator!r}")
    try:
        pickle.dumps(env_creator)
    except Exception:
        found = _named_in_a_module(env_creator)
        if found is not None:
            return _by_reference(*found)
    return env_creator


def from_pettingzoo(env_creator, log_interval: int = 32, **kwargs):
    """A picklable `creator(num_envs=, seed=, buf=None)` of `PettingZooPufferEnv`s.

    `env_creator` is a callable returning a PettingZoo ParallelEnv (for the multiprocessing
    backend it must pickle, or be found by name in a loaded module, as PettingZoo's
    `parallel_env` functions are), "module.path:callable", or a module with `parallel_env`;
    `kwargs` go to it. One env is built and closed here so that a bad creator fails now, not in a worker."""
    resolved = _resolve_creator(env_creator)
    creator = functools.partial(PettingZooPufferEnv, resolved, log_interval=log_interval,
                                env_kwargs=kwargs)
    probe = creator(num_envs=1)
    try:  # draw frames when the env can and nobody chose a render mode: as from_gymnasium
        supported = (getattr(probe.envs[0], "metadata", None) or {}).get("render_modes") or ()
        mode = next((m for m in supported if m in FRAME_MODES), None)
    finally:
        probe.close()
    if mode is None or "render_mode" in kwargs or not _takes_render_mode(resolved):
        return creator
    drawing = functools.partial(PettingZooPufferEnv, resolved, log_interval=log_interval,
                                env_kwargs={**kwargs, "render_mode": mode})
    try:
        drawing(num_envs=1).close()
    except TypeError:  # render_mode does not reach the env: draw nothing
        return creator
    return drawing
