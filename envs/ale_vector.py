"""Atari through ale-py's own C++ vector env: a block of games stepped by C++ threads.

    creator = ale_vector_creator("ALE/Pong-v5")        # None when ale-py has no vector env
    block = creator(num_envs=8, seed=0)                # one AtariVectorEnv of 8 games

The preprocessing is the standard one, done in C++ as EnvPool does it: up to 30 no-ops at
reset, frame skip 4 with max-pooling of the last two frames, 84x84 grey, a stack of 4, sticky
actions as the id registers them (0.25 for v5), a lost life ending the episode while training
(whole games in evaluation). So observations are what envs/atari_preprocessing.py gives (uint8
(4, 84, 84)) at a fraction of the CPU: no Python per game step, no process per game. Rewards
are left as the game gives them (clipping is the trainer's `train.reward_clamp`).

The block is a PufferEnv like any other: the vec backends run it inline (serial) or one per
worker process; truncated episodes hand their last observation over in `final_observations`
(ale-py's same-step autoreset). What it cannot do: save the games' state (a resume starts
episodes afresh, as for every Gymnasium env: docs/exact-resume.md) or draw the game in colour
(`frame` shows the newest grey frame of the stack).
"""

from __future__ import annotations

import os

import numpy as np
from gymnasium import spaces

from puffer_tui.engine.native.pufferenv import EnvLayout, PufferEnv

# our preprocessing settings (envs/atari_preprocessing.py's names) -> AtariVectorEnv's
SETTINGS = {"noop_max": "noop_max", "frame_skip": "frameskip", "grayscale_obs": "grayscale",
            "frame_stack": "stack_num", "repeat_action_probability": "repeat_action_probability",
            "full_action_space": "full_action_space",
            "max_num_frames_per_episode": "max_num_frames_per_episode"}
DEFAULTS = {"noop_max": 30, "frame_skip": 4, "screen_size": 84, "grayscale_obs": True,
            "frame_stack": 4}


def vector_env_class():
    """ale-py's AtariVectorEnv, or None when the installed ale-py has none (before 0.11)."""
    try:
        from ale_py.vector_env import AtariVectorEnv
    except ImportError:
        return None
    return AtariVectorEnv


def ale_vector_creator(env_id: str, evaluation: bool = False, **settings):
    """A picklable creator of AleVectorBlocks for `env_id`, with `.layout`; None when this id
    or these settings need the Gymnasium path (no vector env, an id it cannot name, a setting
    it does not know, colour frames)."""
    import functools

    if vector_env_class() is None or not env_id.startswith("ALE/"):
        return None
    if set(settings) - set(SETTINGS) - {"screen_size"} or not settings.get("grayscale_obs", True):
        return None
    options = _options(env_id, settings)
    if options is None:
        return None
    creator = functools.partial(AleVectorBlock, env_id, options, not evaluation)
    stack, side = options["stack_num"], options["img_height"]
    actions = _action_count(options)
    creator.layout = EnvLayout(spaces.Box(0, 255, (stack, side, side), np.uint8),
                               spaces.Discrete(actions), 1)
    return creator


def _options(env_id: str, settings: dict) -> dict | None:
    """AtariVectorEnv's keyword arguments for the id's registration and our settings."""
    import gymnasium

    from puffer_tui.envs.atari_preprocessing import register_ale

    register_ale()
    try:
        registered = dict(gymnasium.spec(env_id).kwargs)
    except gymnasium.error.Error:
        return None
    if "game" not in registered or registered.get("obs_type", "rgb") != "rgb":
        return None
    given = {**DEFAULTS, **settings}
    options = {"game": registered["game"],
               "repeat_action_probability": registered.get("repeat_action_probability", 0.25),
               "full_action_space": registered.get("full_action_space", False),
               "max_num_frames_per_episode": registered.get("max_num_frames_per_episode",
                                                            108000)}
    for ours, theirs in SETTINGS.items():
        if ours in given:
            options[theirs] = given[ours]
    options["img_height"] = options["img_width"] = int(given["screen_size"])
    options["stack_num"] = int(options.get("stack_num", 4))
    return options


def _action_count(options: dict) -> int:
    env = vector_env_class()(options["game"], num_envs=1, num_threads=1,
                             full_action_space=options["full_action_space"])
    try:
        return int(env.single_action_space.n)
    finally:
        env.close()


class AleVectorBlock(PufferEnv):
    """`num_envs` games of one ALE id in one AtariVectorEnv (C++ threads: one per core, at
    most one per game)."""

    python = True

    def __init__(self, env_id: str, options: dict, training: bool = True, num_envs: int = 1,
                 seed: int = 0, buf: dict | None = None, log_interval: int = 32):
        self.name = env_id
        threads = max(1, min(num_envs, len(os.sched_getaffinity(0))))
        self.ale = vector_env_class()(
            num_envs=num_envs, num_threads=threads, autoreset_mode="SameStep",
            episodic_life=training, reward_clipping=False, use_fire_reset=False,
            maxpool=True, **{k: v for k, v in options.items()})
        try:
            super().__init__(self.ale.single_observation_space, self.ale.single_action_space,
                             num_envs, 1, buf)
        except BaseException:
            self.ale.close()
            raise
        self.seed = int(seed)
        self._start_log(log_interval)
        self._returns = np.zeros(num_envs, np.float64)
        self._lengths = np.zeros(num_envs, np.int64)
        self._actions = np.zeros(num_envs, np.int32)

    def reset(self, seed: int | None = None):
        if seed is not None:
            self.seed = int(seed)
        observations, info = self.ale.reset(seed=self.seed)
        self.observations[info["env_id"]] = observations
        self.rewards[:] = 0
        self.terminals[:] = False
        self.truncations[:] = False
        self.masks[:] = True
        self._returns[:] = 0
        self._lengths[:] = 0
        return self.observations, []

    def step(self, actions):
        self.write_actions(actions)
        self.check_action_values()
        np.copyto(self._actions, self.actions.reshape(-1), casting="unsafe")
        self.ale.send(self._actions)
        observations, rewards, terminals, truncations, info = self.ale.recv()
        rows = info["env_id"]
        self.observations[rows] = observations
        self.rewards[rows] = rewards
        self.terminals[rows] = terminals
        self.truncations[rows] = truncations
        self._returns[rows] += rewards
        self._lengths[rows] += 1
        ended = terminals | truncations
        if ended.any():
            cut = truncations & ~terminals
            if cut.any():  # same-step autoreset: the observation that ended the episode
                self.final_observations[rows[cut]] = info["final_obs"][cut]
            done = rows[ended]
            self._log_episodes(self._returns[done].sum(), self._lengths[done].sum(),
                               episodes=len(done))
            self._returns[done] = 0
            self._lengths[done] = 0
        return self.observations, self.rewards, self.terminals, self.truncations, \
            self._logs_due()

    def frame(self, env_index: int = 0):
        """The newest grey frame of the env's stack, as an RGB image."""
        grey = self.observations[env_index][-1]
        return np.repeat(grey[:, :, None], 3, axis=2)

    def close(self) -> None:
        ale = getattr(self, "ale", None)
        if ale is not None:
            self.ale = None
            ale.close()
