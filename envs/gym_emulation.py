"""Any Gymnasium env as a PufferEnv, so it runs through the same vectorizers as native envs.

    creator = from_gymnasium("CartPole-v1")                    # a registered id, or
    creator = from_gymnasium(my_module.make_env, size=5)       # any picklable callable
    vec = puffer_tui.engine.vec.make(creator, num_envs=8, backend="serial")

`creator(num_envs=, seed=, buf=None)` builds a `GymnasiumPufferEnv` holding `num_envs`
Gymnasium envs. Observations are flattened into one Box and actions into one Discrete,
MultiDiscrete or Box (see `gym_spaces`); `env.observation_layout.unflatten(batch)` gives a
policy the original structure back.

Rendering: `from_gymnasium` builds the envs with `render_mode` "rgb_array" or "ansi" (the
first of them in the env's own list of modes, unless told otherwise), and `frame(i)` returns
env i's `render()` (an image cut to the frame bounds, or text; engine/native/frames.py).
Gymnasium envs draw only when render() is called, so this costs nothing until a renderer asks
for a frame; `observation_frame(i)` draws env i's observation itself when it holds an image.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import os

import gymnasium
from gymnasium import spaces

from puffer_tui.engine.native import frames
from puffer_tui.engine.native.progress import progress
from puffer_tui.engine.native.pufferenv import IGNORED, LOG_FIELDS, EnvLayout, PufferEnv
from puffer_tui.envs.gym_spaces import ActionLayout, ObservationLayout
from puffer_tui.envs.minigrid_codes import observation_space_of
from puffer_tui.envs.minigrid_mission import with_mission_choices

FRAME_MODES = ("rgb_array", "ansi")  # the render modes frame() draws
# An info key: this termination ends the learner's episode (a lost life) but not the game, so
# the logged episode runs on to the game's end (envs/atari_preprocessing.py).
GAME_CONTINUES = "game_continues"
AUTO = "auto"
# Info keys that are not the env's own numbers: ours, the log's, and the ones Gymnasium's
# RecordEpisodeStatistics puts in info["episode"] (its r and l are the return and length
# logged anyway, t a clock).
NOT_FIELDS = {GAME_CONTINUES, IGNORED, "n", *LOG_FIELDS}
EPISODE_STATISTICS = ("r", "l", "t")


def _number(value) -> float | None:
    """A real number (a bool counts as 0 or 1: is_success), a numpy scalar or a one-element
    array as a float; None for anything else, NaN and infinities included."""
    if isinstance(value, numbers.Real):
        number = float(value)
    elif getattr(value, "size", None) == 1 and getattr(value, "dtype", None) is not None \
            and value.dtype.kind in "biuf":
        number = float(value.reshape(-1)[0])
    else:
        return None
    return number if math.isfinite(number) else None


def episode_fields(info, said: set) -> tuple[dict, tuple]:
    """The env's own numbers in an episode's last `info`, and the names of the values that
    are not numbers, each only the first time (`said` keeps them): ({name: value}, names).
    A dict value (e.g. info["episode"]) gives its numbers one level down as "key.name"."""
    fields, ignored = {}, []
    if not isinstance(info, dict):
        return fields, ()
    for key, value in info.items():
        key = str(key)
        if key in NOT_FIELDS:
            continue
        if isinstance(value, dict):
            items = [(f"{key}.{name}", inner) for name, inner in value.items()
                     if not (key == "episode" and name in EPISODE_STATISTICS)]
        else:
            items = [(key, value)]
        for name, inner in items:
            number = _number(inner)
            if number is not None:
                fields[name] = number
            elif name not in said:
                said.add(name)
                ignored.append(f"{name} ({type(inner).__name__})")
    return fields, tuple(ignored)


class GymnasiumPufferEnv(PufferEnv):
    """`num_envs` Gymnasium envs behind the PufferEnv buffers API.

    * Seeding: `reset(seed)` seeds env i with `seed + i`; `reset()` reuses the last seed, so
      reruns are reproducible. Episodes started by autoreset continue each env's own RNG.
    * Autoreset (same-step, as the native envs): the step that ends an episode reports
      terminal/truncated, and the observation written for that env is the first of its next
      episode. On a truncation the episode's final observation goes to `final_observations`
      first (the trainer bootstraps the time-out from its value).
    * Infos: every `log_interval` steps, if episodes finished since the last report, a list
      with one dict of their averages: `episode_return`, `episode_length`, `score` and the
      count `n` (floats, as in native logs). `score` is the final step's `info["score"]` when
      the env reports one, else the episode return. The other numbers of that last info
      (`is_success`, a distance; those of a dict in it such as info["episode"], as
      "episode.name") are the env's own fields, averaged as a C env's log fields are;
      values that are not numbers are named once (`ignored`) and dropped. A
      termination whose info has GAME_CONTINUES (an Atari life lost while training) ends the
      learner's episode, not the logged one: the logs count whole games.
    * Actions are checked by the base class (`write_actions`, `check_action_values`) before
      any env steps, so a bad batch raises `ActionError` and no env is stepped.
    """

    def __init__(
        self,
        env_creator,
        num_envs: int = 1,
        seed: int = 0,
        buf: dict | None = None,
        log_interval: int = 32,
        env_kwargs: dict | None = None,
        optional_kwargs: tuple = (),
    ):
        self.check_counts(num_envs, log_interval)
        env_creator = _resolve_creator(env_creator)
        self.envs = []
        try:
            env_kwargs = dict(env_kwargs or {})
            for _ in range(num_envs):
                try:
                    self.envs.append(env_creator(**env_kwargs))
                except TypeError:  # a kwarg we added that the env does not take: drop it
                    dropped = {k: v for k, v in env_kwargs.items() if k not in optional_kwargs}
                    if dropped == env_kwargs:
                        raise
                    env_kwargs = dropped
                    self.envs.append(env_creator(**env_kwargs))
                progress()  # each env a sign of life: a slow block is not a hung worker
            self.gymnasium_observation_space, self.gymnasium_action_space = _common_spaces(
                self.envs
            )
            self.observation_layout = ObservationLayout(self.gymnasium_observation_space)
            self.action_layout = ActionLayout(self.gymnasium_action_space)
            # Plain Discrete: build the action scalar directly (unflatten's generality was a
            # quarter of a CartPole step); same value and dtype as unflatten gives.
            single = self.gymnasium_action_space
            self._discrete = (
                (single.dtype.type, int(single.start))
                if isinstance(single, gymnasium.spaces.Discrete) else None
            )
            first = self.envs[0]
            self.name = first.spec.id if first.spec is not None else type(first.unwrapped).__name__
            super().__init__(
                self.observation_layout.space, self.action_layout.space, num_envs, 1, buf
            )
        except BaseException:
            self.close()
            raise
        self.seed = int(seed)
        self._start_log(log_interval)
        self._episode_return = [0.0] * num_envs
        self._episode_length = [0] * num_envs
        self._render_error: str | None = None
        self._said: set = set()  # info values already named as not numbers

    # -- frames: what renderers draw (engine/runtime/frame_source.py asks only while someone watches) --

    @property
    def render_mode(self) -> str | None:
        return self.envs[0].render_mode if self.envs else None

    def frame(self, env_index: int = 0):
        """Env `env_index`'s render(): an RGB image within the frame bounds, text, or None
        when the envs render neither way. A render that fails says so as a text frame (once
        failed, it is not retried: the panel shows why instead of waiting for frames)."""
        if self.render_mode not in FRAME_MODES:
            return None
        if self._render_error is not None:
            return self._render_error
        _quiet_headless_sdl()
        try:
            picture = self.envs[env_index].render()
        except IndexError:
            raise
        except Exception as e:
            self._render_error = f"{self.name}: render() failed: {type(e).__name__}: {e}"
            return self._render_error
        if hasattr(picture, "getvalue"):  # older ansi envs return a StringIO
            picture = picture.getvalue()
        return None if picture is None else frames.bound_frame(picture)

    def observation_frame(self, env_index: int = 0):
        """Env `env_index`'s current observation as an RGB image (its first image leaf: an
        Atari frame stack, MiniGrid's `image`), or a text frame saying it holds no image."""
        row = self.observations[env_index].reshape(-1)
        for leaf in self.observation_layout.leaves:
            space = leaf.space
            if isinstance(space, spaces.Box) and len(space.shape) >= 2:
                values = row[leaf.offset:leaf.offset + leaf.size].reshape(space.shape)
                low, high = (space.low, space.high) if space.is_bounded() else (None, None)
                image = frames.observation_image(values, low, high)
                if image is not None:
                    return frames.bound_frame(image)
        return frames.no_image_text(self.gymnasium_observation_space)

    def unflatten_observations(self, flat):
        """Flat observation rows (numpy or torch, any leading dims) -> the Gymnasium structure."""
        return self.observation_layout.unflatten(flat)

    def reset(self, seed: int | None = None):
        if seed is not None:
            self.seed = int(seed)
        for i, env in enumerate(self.envs):
            observation, _ = env.reset(seed=self.seed + i)
            self.observation_layout.flatten(observation, out=self.observations[i])
            progress()
        self.masks[:] = True
        self._episode_return = [0.0] * self.num_envs
        self._episode_length = [0] * self.num_envs
        return self._episodes_begun()

    def step(self, actions):
        self._begin_step(actions)
        self.check_action_values()  # write_actions trusts int32 input; check the buffer
        # Per-env work stays in plain Python objects and the buffers are written once per
        # call: numpy scalar reads/writes inside this loop cost as much as CartPole's physics.
        discrete = self._discrete
        actions = self.actions.tolist() if discrete is not None else self.actions
        flatten = None if self.observation_layout.passthrough else self.observation_layout.flatten
        observations = self.observations
        returns, lengths = self._episode_return, self._episode_length
        rewards, terminals, truncations = [], [], []
        for i, env in enumerate(self.envs):
            if discrete is not None:
                action = discrete[0](actions[i] + discrete[1])
            else:
                action = self.action_layout.unflatten(actions[i])
            observation, reward, terminated, truncated, info = env.step(action)
            rewards.append(reward)
            terminals.append(terminated)
            truncations.append(truncated)
            returns[i] += reward
            lengths[i] += 1
            if terminated or truncated:
                if truncated and not terminated:
                    if flatten is None:
                        self.final_observations[i] = observation
                    else:
                        flatten(observation, out=self.final_observations[i])
                self._end_episode(i, info)
                observation, _ = env.reset()
            if flatten is None:
                observations[i] = observation
            else:
                flatten(observation, out=observations[i])
            progress()
        self.rewards[:] = rewards
        self.terminals[:] = terminals
        self.truncations[:] = truncations
        return self.observations, self.rewards, self.terminals, self.truncations, \
            self._logs_due()

    def _end_episode(self, i: int, info: dict) -> None:
        if isinstance(info, dict) and info.get(GAME_CONTINUES):
            return
        fields, ignored = episode_fields(info, self._said)
        self._log_episodes(self._episode_return[i], self._episode_length[i],
                           info.get("score") if isinstance(info, dict) else None,
                           fields=fields, ignored=ignored)
        self._episode_return[i] = 0
        self._episode_length[i] = 0

    def close(self) -> None:
        envs, self.envs = getattr(self, "envs", []), []
        for env in envs:
            env.close()


def _quiet_headless_sdl() -> None:
    """Without a display, pygame-drawn envs (CartPole...) draw into memory all the same, but
    SDL prints "error: XDG_RUNTIME_DIR is invalid" looking for one; its dummy driver does not
    (no window could open there anyway, so nothing else changes). MuJoCo envs there need an
    OpenGL without a window: Gymnasium tries GLFW first, whose context cannot be made
    without a display ("FatalError: an OpenGL platform library has not been loaded"), so EGL
    is named where its library is installed (read when the env first renders). A MUJOCO_GL
    or PYOPENGL_PLATFORM of the user's own is kept: MuJoCo refuses EGL under another
    PyOpenGL platform."""
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
        chosen = "MUJOCO_GL" in os.environ or "PYOPENGL_PLATFORM" in os.environ
        if not chosen and _has_library("EGL"):
            os.environ["MUJOCO_GL"] = "egl"


def _has_library(name: str) -> bool:
    import ctypes.util

    return ctypes.util.find_library(name) is not None


def _make_registered(env_id: str, **kwargs):
    return gymnasium.make(env_id, **kwargs)


def _resolve_creator(env_creator):
    """A registered id string becomes a (picklable) call to gymnasium.make."""
    if isinstance(env_creator, str):
        return functools.partial(_make_registered, env_creator)
    if not callable(env_creator):
        raise TypeError(
            f"from_gymnasium needs a Gymnasium env id or a callable returning a gymnasium.Env, "
            f"got {env_creator!r}"
        )
    return env_creator


def _common_spaces(envs):
    """The spaces every env shares; a creator whose envs disagree is an error."""
    first = envs[0]
    if not isinstance(first, gymnasium.Env):
        raise TypeError(f"the env creator returned {type(first).__name__}, not a gymnasium.Env")
    for env in envs[1:]:
        if env.observation_space != first.observation_space or (
            env.action_space != first.action_space
        ):
            raise ValueError(
                "the env creator returned envs with different spaces: "
                f"{first.observation_space} / {first.action_space} vs "
                f"{env.observation_space} / {env.action_space}"
            )
    return _observed_space(first), first.action_space


def _observed_space(env) -> gymnasium.spaces.Space:
    """The observation space as the policy reads it: MiniGrid's code image with its codes'
    bounds (it declares 0..255: envs/minigrid_codes.py), its mission as choices
    (envs/minigrid_mission.py)."""
    return with_mission_choices(observation_space_of(env))


def from_gymnasium(gym_env_creator, log_interval: int = 32, render_mode=AUTO, probe=None,
                   **kwargs):
    """A picklable `creator(num_envs=, seed=, buf=None)` of `GymnasiumPufferEnv`s.

    `gym_env_creator` is a registered Gymnasium id (e.g. "CartPole-v1") or a callable that
    returns a `gymnasium.Env`; `kwargs` are passed to it (to `gymnasium.make` for an id). For
    the multiprocessing backend it must pickle: an id or a module-level function, not a lambda.
    One env is built here (or `probe`, one the caller built with these kwargs, is used) and
    closed again, so that unsupported spaces fail now, not later inside a worker; it is never
    reset or stepped, and no buffer is allocated for it. Its spaces are kept on the creator
    as `creator.layout` (an EnvLayout), so nobody builds another env to ask for them: a huge
    observation is refused by the memory check before anything of its size is allocated.

    `render_mode`: "auto" (default) picks the first "rgb_array" or "ansi" in the env's
    metadata["render_modes"] (so toy-text envs such as FrozenLake and Taxi, which list "ansi"
    first, draw text, and CartPole or Atari draw images) and passes it to an id or a callable
    that takes `render_mode` or **kwargs; None passes none (frames only if the envs pick a
    mode themselves); any other value is passed on as given.
    """
    if render_mode not in (AUTO, None):
        kwargs["render_mode"] = render_mode
    env = probe if probe is not None else _resolve_creator(gym_env_creator)(**kwargs)
    try:
        layout = probe_layout(env)
        mode = _auto_render_mode(env) if render_mode == AUTO else None
    finally:
        env.close()
    optional = ()
    if mode is not None and _takes_render_mode(gym_env_creator):
        kwargs = {**kwargs, "render_mode": mode}
        # **kwargs may not reach an env that takes render_mode: then it draws nothing (found
        # when the envs are built, not by building one more here)
        optional = () if _names_render_mode(gym_env_creator) else ("render_mode",)
    creator = functools.partial(
        GymnasiumPufferEnv, gym_env_creator, log_interval=log_interval, env_kwargs=kwargs,
        optional_kwargs=optional,
    )
    creator.layout = layout  # partial objects keep attributes, and pickle them
    return creator


def probe_layout(env) -> EnvLayout:
    """The spaces a GymnasiumPufferEnv of `env`'s kind has (ValueError/TypeError for spaces it
    cannot take), read from one built env without allocating anything for it."""
    if not isinstance(env, gymnasium.Env):
        raise TypeError(f"the env creator returned {type(env).__name__}, not a gymnasium.Env")
    return EnvLayout(ObservationLayout(_observed_space(env)).space,
                     ActionLayout(env.action_space).space, 1)


def _names_render_mode(gym_env_creator) -> bool:
    """An id (gymnasium.make) or a callable that names `render_mode` surely takes it."""
    if isinstance(gym_env_creator, str):
        return True
    try:
        return "render_mode" in inspect.signature(gym_env_creator).parameters
    except (TypeError, ValueError):
        return False


def _auto_render_mode(env) -> str | None:
    """The frame mode to build with: None when the env already renders one, or draws neither."""
    if getattr(env, "render_mode", None) in FRAME_MODES:
        return None
    supported = (env.metadata or {}).get("render_modes") or ()
    return next((mode for mode in supported if mode in FRAME_MODES), None)


def _takes_render_mode(gym_env_creator) -> bool:
    """Whether render_mode= can be passed: always to gymnasium.make, to a callable that names
    it or takes **kwargs."""
    if isinstance(gym_env_creator, str):
        return True
    try:
        parameters = inspect.signature(gym_env_creator).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "render_mode" or p.kind == p.VAR_KEYWORD for p in parameters)
