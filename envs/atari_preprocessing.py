"""Atari with the standard preprocessing, built from Gymnasium's own wrappers.

    env = atari_env("ALE/Pong-v5")                       # training: episodic life on
    env = atari_env("ALE/Pong-v5", training=False)       # evaluation: whole games
    creator = from_gymnasium(functools.partial(atari_env, "ALE/Pong-v5"))

AtariPreprocessing: up to 30 no-op actions at reset, frame skip 4 with max-pooling of the last
two frames, 84x84 grayscale; then FIRE at the start of a game that has it; FrameStackObservation:
the last 4 frames, so observations are uint8 (4, 84, 84), channels first (the policy picks its
CNN for them). While training a lost life ends the episode, but the game goes on
(`LifeLossEndsEpisode`, as EnvPool's, SB3's and CleanRL's episodic life; Gymnasium's own
`terminal_on_life_loss` would start a new game instead, so training would never see a game's
later lives); evaluation plays whole games. This is what ale-py's C++ vector env does for
envs/ale_vector.py, step for step. Rewards are left as the game gives them: clipping is the
trainer's `train.reward_clamp 1` (envs/gym_presets/ALE.toml), and the logged episodes are whole
games, so logged returns are game scores.
"""

from __future__ import annotations

import gymnasium

from puffer_tui.envs.gym_emulation import GAME_CONTINUES

# Keyword arguments that shape the preprocessing; every other one goes to gymnasium.make.
PREPROCESSING_DEFAULTS = {"noop_max": 30, "frame_skip": 4, "screen_size": 84,
                          "grayscale_obs": True, "frame_stack": 4}

INSTALL_HINT = "pip install 'puffer-tui[atari]' (or: pip install ale-py)"


def register_ale() -> None:
    """Make the ALE/* ids known to Gymnasium; a clear ImportError naming the fix if ale-py
    is missing."""
    try:
        import ale_py
    except ImportError as exc:
        raise ImportError(f"Atari envs need the ale-py package: {INSTALL_HINT}") from exc
    gymnasium.register_envs(ale_py)


def atari_env(env_id: str, training: bool = True, **kwargs) -> gymnasium.Env:
    """`env_id` (e.g. "ALE/Pong-v5") with the standard Atari preprocessing.

    Preprocessing keywords (defaults in PREPROCESSING_DEFAULTS): noop_max, frame_skip,
    screen_size, grayscale_obs, frame_stack. The rest go to gymnasium.make (e.g.
    repeat_action_probability, full_action_space). The emulator itself skips no frames
    (frameskip=1): AtariPreprocessing does the skipping, with max-pooling."""
    register_ale()
    options = {key: kwargs.pop(key, default) for key, default in PREPROCESSING_DEFAULTS.items()}
    if "frameskip" in kwargs:
        raise ValueError(
            f"{env_id}: frameskip is done by the preprocessing here; pass frame_skip instead")
    if int(options["frame_stack"]) < 1:
        raise ValueError(f"{env_id}: frame_stack must be >= 1, got {options['frame_stack']}")
    env = gymnasium.make(env_id, frameskip=1, **kwargs)
    env = gymnasium.wrappers.AtariPreprocessing(
        env,
        noop_max=int(options["noop_max"]),
        frame_skip=int(options["frame_skip"]),
        screen_size=int(options["screen_size"]),
        terminal_on_life_loss=False,
        grayscale_obs=bool(options["grayscale_obs"]),
    )
    env = FireAtGameStart(env)
    if int(options["frame_stack"]) > 1:
        env = gymnasium.wrappers.FrameStackObservation(env, int(options["frame_stack"]))
    if training:
        env = LifeLossEndsEpisode(env)
    return env


class FireAtGameStart(gymnasium.Wrapper):
    """A new game starts with FIRE (after the no-ops) in games that have it, as ale-py's and
    EnvPool's `use_fire_reset`: Breakout's ball is not served until then."""

    def __init__(self, env: gymnasium.Env):
        super().__init__(env)
        meanings = env.unwrapped.get_action_meanings()
        self.fire = meanings.index("FIRE") if "FIRE" in meanings else None

    def reset(self, **kwargs):
        observation, info = self.env.reset(**kwargs)
        if self.fire is None:
            return observation, info
        observation, _, terminated, truncated, info = self.env.step(self.fire)
        if terminated or truncated:  # the game ended already: start another, unfired
            observation, info = self.env.reset()
        return observation, info


class LifeLossEndsEpisode(gymnasium.Wrapper):
    """While training: a lost life ends the episode (terminated, so no value is bootstrapped
    past it), but the game goes on. The reset() that follows returns the observation the life
    ended on, and the next step continues the same game, as in ale-py's vector env with
    `life_loss_info`. Such a step's info has GAME_CONTINUES, so the logs count whole games."""

    def __init__(self, env: gymnasium.Env):
        super().__init__(env)
        self.lives = 0
        self.continued_observation = None

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        lives = self.env.unwrapped.ale.lives()
        if lives < self.lives and not (terminated or truncated):
            terminated = True
            info = {**info, GAME_CONTINUES: True}
            self.continued_observation = observation
        self.lives = lives
        return observation, reward, terminated, truncated, info

    def reset(self, **kwargs):
        observation, self.continued_observation = self.continued_observation, None
        if observation is not None and kwargs.get("seed") is None:
            return observation, {GAME_CONTINUES: True}
        observation, info = self.env.reset(**kwargs)
        self.lives = self.env.unwrapped.ale.lives()
        return observation, info
