"""Atari with the standard preprocessing, built from Gymnasium's own wrappers.

    env = atari_env("ALE/Pong-v5")                       # training: episodic life on
    env = atari_env("ALE/Pong-v5", training=False)       # evaluation: whole games
    creator = from_gymnasium(functools.partial(atari_env, "ALE/Pong-v5"))

AtariPreprocessing: up to 30 no-op actions at reset, frame skip 4 with max-pooling of the last
two frames, 84x84 grayscale; FrameStackObservation: the last 4 frames, so observations are
uint8 (4, 84, 84), channels first (the policy picks its CNN for them). While training a lost
life ends the episode (Gymnasium's `terminal_on_life_loss`); evaluation plays whole games.
Rewards are left as the game gives them: clipping is the trainer's `train.reward_clamp 1`
(envs/gym_presets/ALE.toml), so logged returns stay game scores.
"""

from __future__ import annotations

import gymnasium

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
        terminal_on_life_loss=bool(training),
        grayscale_obs=bool(options["grayscale_obs"]),
    )
    if int(options["frame_stack"]) > 1:
        env = gymnasium.wrappers.FrameStackObservation(env, int(options["frame_stack"]))
    return env
