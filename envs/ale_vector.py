"""Atari through ale-py's own C++ vector env: a block of games stepped by C++ threads.

    creator = ale_vector_creator("ALE/Pong-v5")        # None when ale-py has no vector env
    block = creator(num_envs=8, seed=0)                # one AtariVectorEnv of 8 games

The preprocessing is the standard one, done in C++ as EnvPool does it: up to 30 no-ops and
FIRE (in games that have it) at the start of a game, frame skip 4 with max-pooling of the last
two frames, 84x84 grey, a stack of 4, sticky actions as the id registers them (0.25 for v5).
While training, a lost life ends the episode (terminal: no value is bootstrapped past it) but
the game goes on, as EnvPool's, SB3's and CleanRL's episodic life do; evaluation plays whole
games. The logged episodes are whole games either way, so a logged return is a game's score,
comparable with the peers' figures. Observations are what envs/atari_preprocessing.py gives
(uint8 (4, 84, 84)) at a fraction of the CPU: no Python per game step, no process per game.
Rewards are left as the game gives them (clipping is the trainer's `train.reward_clamp`).

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
from puffer_tui.envs.atari_ids import is_atari_id
from puffer_tui.envs.atari_preprocessing import register_ale

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

    if vector_env_class() is None or not is_atari_id(env_id):
        return None
    if set(settings) - set(SETTINGS) - {"screen_size"} or not settings.get("grayscale_obs", True):
        return None
    options = _options(env_id, settings)
    if options is None:
        return None
    creator = functools.partial(AleVectorBlock, env_id, options, not evaluation)
    # the serial backend with batch_size < num_envs: engine/vec/async_block.py
    creator.async_batches = True
    stack, side = options["stack_num"], options["img_height"]
    actions = _action_count(options)
    creator.layout = EnvLayout(spaces.Box(0, 255, (stack, side, side), np.uint8),
                               spaces.Discrete(actions), 1)
    return creator


def _options(env_id: str, settings: dict) -> dict | None:
    """AtariVectorEnv's keyword arguments for the id's registration and our settings."""
    import gymnasium

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
    most one per game, unless `num_threads` says).

    step() moves every game and copies the results into the buffers (what the serial
    backend returns). The async pool (engine/vec/async_block.py) builds several blocks with
    `copy_observations=False` and drives each with send() and recv(), which return
    ale-py's own arrays, fresh each call."""

    python = True

    def __init__(self, env_id: str, options: dict, training: bool = True, num_envs: int = 1,
                 seed: int = 0, buf: dict | None = None, log_interval: int = 32,
                 num_threads: int | None = None, copy_observations: bool = True):
        self.name = env_id
        cores = len(os.sched_getaffinity(0))
        threads = max(1, min(num_envs, cores if num_threads is None else int(num_threads)))
        self.ale = vector_env_class()(
            num_envs=num_envs, num_threads=threads, autoreset_mode="SameStep",
            # ale-py's own `episodic_life` starts a new game at every lost life, so training
            # would never see a game's later lives (nor a Breakout wall past its first life);
            # `life_loss_info` ends the episode and keeps the game, as the peers do.
            episodic_life=False, life_loss_info=training, reward_clipping=False,
            use_fire_reset=True, maxpool=True,
            **{k: v for k, v in options.items()})
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
        self._lives = np.zeros(num_envs, np.int64)  # each game's lives after the last step
        # the C++ interface itself, past AtariVectorEnv's per-call asserts and allocations
        self._interface = self.ale.ale
        self._strength = np.ones(num_envs, np.float32)  # paddle strength (unused by Atari)
        self._copy = bool(copy_observations)
        self._latest = None  # without copies: the last observations received

    def reset(self, seed: int | None = None):
        """Reset every game; the first observations are also in `self.batch`."""
        if seed is not None:
            self.seed = int(seed)
        # ALE takes C ints: fold seeds past them (eval's SeedSequence draws use all 32 bits)
        first = self.seed % (2**31 - self.num_envs)
        observations, info = self.ale.reset(seed=first)
        self._lives[:] = info["lives"]
        self.rewards[:] = 0
        self.terminals[:] = False
        self.truncations[:] = False
        self.masks[:] = True
        self._returns[:] = 0
        self._lengths[:] = 0
        np.copyto(self.observations, observations)
        self._latest = observations
        n = self.num_envs
        self.batch = (observations, np.zeros(n, np.int32), np.zeros(n, bool),
                      np.zeros(n, bool))
        return self.observations, []

    def step(self, actions):
        self.write_actions(actions)
        self.check_action_values()
        self._interface.send(self.actions.reshape(-1).tolist(), self._strength)
        self.recv()
        return self.observations, self.rewards, self.terminals, self.truncations, \
            self._logs_due()

    def send(self, actions) -> None:
        """Start a step of every game with `actions` (checked first); recv() collects it."""
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,) or actions.dtype.kind not in "iu":
            raise ValueError(f"{self.name}: expected {self.num_envs} integer actions (one "
                             f"per game), got shape {actions.shape} of {actions.dtype}")
        if actions.min() < 0 or actions.max() >= self.single_action_space.n:
            bad = (actions < 0) | (actions >= self.single_action_space.n)
            self._raise_out_of_range(actions, int(np.flatnonzero(bad)[0]))
        self._interface.send(actions.tolist(), self._strength)

    def recv(self):
        """Wait for the step sent: (observations, rewards, terminals, truncations), ale-py's
        arrays, games in order. Copied into the buffers too unless `copy_observations` is
        off (then only final observations are; a game's row is filled when it is drawn)."""
        observations, rewards, terminals, truncations, info = self._interface.recv()
        if self._copy:
            np.copyto(self.observations, observations)
            np.copyto(self.rewards, rewards, casting="unsafe")
            np.copyto(self.terminals, terminals)
            np.copyto(self.truncations, truncations)
        self._latest = observations
        self._returns += rewards
        self._lengths += 1
        lives = info["lives"]
        ended = terminals | truncations
        if ended.any():
            cut = truncations & ~terminals
            if cut.any():  # same-step autoreset: the observation that ended the episode
                self.final_observations[cut] = info["final_obs"][cut]
            # A terminal whose lives fell is a lost life: the game goes on. A game that ended
            # was reset in the same step, so its lives did not fall (games without lives
            # report 0 throughout).
            games = truncations | (terminals & (lives >= self._lives))
            if games.any():
                self._log_episodes(self._returns[games].sum(), self._lengths[games].sum(),
                                   episodes=int(games.sum()))
                self._returns[games] = 0
                self._lengths[games] = 0
        self._lives[:] = lives
        return observations, rewards, terminals, truncations

    def refresh_observation(self, env_index: int) -> None:
        """Without copies: put the game's newest observation into its buffer row (to draw)."""
        if not self._copy and self._latest is not None:
            self.observations[env_index] = self._latest[env_index]

    def frame(self, env_index: int = 0):
        """The newest grey frame of the env's stack, as an RGB image."""
        self.refresh_observation(env_index)
        grey = self.observations[env_index][-1]
        return np.repeat(grey[:, :, None], 3, axis=2)

    def close(self) -> None:
        ale = getattr(self, "ale", None)
        if ale is not None:
            self.ale = None
            ale.close()
