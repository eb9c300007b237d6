"""Data for `puffer-tui bench learn`: the envs it compares on and the peer's settings.

ZOO_PPO holds rl-baselines3-zoo's PPO hyperparameters, copied by hand (values and keys as the
YAML has them, "lin_X" schedules and policy_kwargs strings included) from
DLR-RM/rl-baselines3-zoo, hyperparams/ppo.yml at commit 208b6fdf3a9aa24de44b2e068c6e5f6a07d97fcc
(rl_zoo3 2.x). Nothing is downloaded at run time. learn_sb3.translate() turns an entry into
Stable-Baselines3 arguments the way rl_zoo3's ExperimentManager does.

Where the zoo has no entry for the version we run, the closest one is used and said so:
HalfCheetah-v5 and Hopper-v5 take the zoo's tuned -v4 entries (same bodies, same rewards
apart from v5's bug fixes), InvertedDoublePendulum-v5 (validation) its -v2 entry; Pong and
Breakout take the zoo's `atari` defaults.

Tested in: tests/benchmarks/test_bench_learn.py (the zoo's settings as SB3 arguments),
tests/benchmarks/test_validation.py
"""

from __future__ import annotations

from dataclasses import dataclass

ZOO_SOURCE = ("rl-baselines3-zoo hyperparams/ppo.yml @ 208b6fdf3a9aa24de44b2e068c6e5f6a07d97fcc")

_MINIGRID = {  # the zoo's &minigrid-defaults ("Following lcswillems/rl-starter-files")
    "env_wrapper": "minigrid.wrappers.FlatObsWrapper",
    "normalize": True,
    "n_envs": 8,
    "n_timesteps": 1e5,
    "policy": "MlpPolicy",
    "n_steps": 128,
    "batch_size": 64,
    "gae_lambda": 0.95,
    "gamma": 0.99,
    "n_epochs": 10,
    "ent_coef": 0.0,
    "learning_rate": 2.5e-4,
    "clip_range": 0.2,
}

ZOO_PPO: dict[str, dict] = {
    "atari": {
        "env_wrapper": "stable_baselines3.common.atari_wrappers.AtariWrapper",
        "frame_stack": 4,
        "policy": "CnnPolicy",
        "n_envs": 8,
        "n_steps": 128,
        "n_epochs": 4,
        "batch_size": 256,
        "n_timesteps": 1e7,
        "learning_rate": "lin_2.5e-4",
        "clip_range": "lin_0.1",
        "vf_coef": 0.5,
        "ent_coef": 0.01,
    },
    "Pendulum-v1": {  # "# Tuned"
        "n_envs": 4,
        "n_timesteps": 1e5,
        "policy": "MlpPolicy",
        "n_steps": 1024,
        "gae_lambda": 0.95,
        "gamma": 0.9,
        "n_epochs": 10,
        "ent_coef": 0.0,
        "learning_rate": 1e-3,
        "clip_range": 0.2,
        "use_sde": True,
        "sde_sample_freq": 4,
    },
    "CartPole-v1": {  # "# Tuned"
        "n_envs": 8,
        "n_timesteps": 1e5,
        "policy": "MlpPolicy",
        "n_steps": 32,
        "batch_size": 256,
        "gae_lambda": 0.8,
        "gamma": 0.98,
        "n_epochs": 20,
        "ent_coef": 0.0,
        "learning_rate": "lin_0.001",
        "clip_range": "lin_0.2",
    },
    "MountainCarContinuous-v0": {  # "# Tuned"
        "normalize": True,
        "n_envs": 1,
        "n_timesteps": 20000,
        "policy": "MlpPolicy",
        "batch_size": 256,
        "n_steps": 8,
        "gamma": 0.9999,
        "learning_rate": 7.77e-05,
        "ent_coef": 0.00429,
        "clip_range": 0.1,
        "n_epochs": 10,
        "gae_lambda": 0.9,
        "max_grad_norm": 5,
        "vf_coef": 0.19,
        "use_sde": True,
        "policy_kwargs": "dict(log_std_init=-3.29, ortho_init=False)",
    },
    "Acrobot-v1": {
        "normalize": True,
        "n_envs": 16,
        "n_timesteps": 1e6,
        "policy": "MlpPolicy",
        "n_steps": 256,
        "gae_lambda": 0.94,
        "gamma": 0.99,
        "n_epochs": 4,
        "ent_coef": 0.0,
    },
    "MiniGrid-DoorKey-5x5-v0": {**_MINIGRID, "n_timesteps": 1e5},
    "HalfCheetah-v4": {  # "# Tuned / # 10 mujoco envs"
        "normalize": True,
        "n_envs": 1,
        "policy": "MlpPolicy",
        "n_timesteps": 1e6,
        "batch_size": 64,
        "n_steps": 512,
        "gamma": 0.98,
        "learning_rate": 2.0633e-05,
        "ent_coef": 0.000401762,
        "clip_range": 0.1,
        "n_epochs": 20,
        "gae_lambda": 0.92,
        "max_grad_norm": 0.8,
        "vf_coef": 0.58096,
        "policy_kwargs": "dict(log_std_init=-2, ortho_init=False, activation_fn=nn.ReLU, "
                         "net_arch=dict(pi=[256, 256], vf=[256, 256]))",
    },
    "Hopper-v4": {
        "normalize": True,
        "n_envs": 1,
        "policy": "MlpPolicy",
        "n_timesteps": 1e6,
        "batch_size": 32,
        "n_steps": 512,
        "gamma": 0.999,
        "learning_rate": 9.80828e-05,
        "ent_coef": 0.00229519,
        "clip_range": 0.2,
        "n_epochs": 5,
        "gae_lambda": 0.99,
        "max_grad_norm": 0.7,
        "vf_coef": 0.835671,
        "policy_kwargs": "dict(log_std_init=-2, ortho_init=False, activation_fn=nn.ReLU, "
                         "net_arch=dict(pi=[256, 256], vf=[256, 256]))",
    },
    # Not the zoo's: it has no settings for a multi-agent env. PettingZoo's own SB3 tutorial
    # (tutorials/SB3/waterworld/sb3_waterworld_vector.py: SB3's PPO defaults with lr 1e-3 and
    # minibatches of 256, 8 games through SuperSuit, no normalization), for the validation
    # set's MPE env; n_timesteps is the validation budget, counted in agent steps as ours
    "pettingzoo-tutorial": {
        "n_envs": 8,
        "policy": "MlpPolicy",
        "n_timesteps": 1e6,
        "learning_rate": 1e-3,
        "batch_size": 256,
    },
    # for the validation set's balance env (benchmarks/validation.py): the zoo publishes no
    # PPO figure for it, so SB3 runs this entry beside ours; the zoo has no -v4/-v5 entry
    "InvertedDoublePendulum-v2": {
        "normalize": True,
        "n_envs": 1,
        "policy": "MlpPolicy",
        "n_timesteps": 1e6,
        "batch_size": 512,
        "n_steps": 128,
        "gamma": 0.98,
        "learning_rate": 0.000155454,
        "ent_coef": 1.05057e-06,
        "clip_range": 0.4,
        "n_epochs": 10,
        "gae_lambda": 0.8,
        "max_grad_norm": 0.5,
        "vf_coef": 0.695929,
    },
}


@dataclass(frozen=True)
class BenchEnv:
    name: str  # as given on the command line
    ours: str  # our env spec, trained as `puffer-tui train SPEC --headless`
    zoo: str | None  # the ZOO_PPO entry of the peer; None: no peer (said in the report)
    sb3_id: str | None = None  # the id SB3 makes (default: name)
    sb3_env_kwargs: tuple = ()  # (key, value) pairs for gymnasium.make on SB3's side
    needs: tuple[str, ...] = ()  # modules both sides import; missing: skipped, naming `extra`
    extra: str | None = None
    steps: int | None = None  # default budget when not the zoo's n_timesteps
    eval_episodes: int = 10  # final-policy evaluation, one env, episodes in sequence
    eval_deterministic: bool = True  # the zoo's own choice: stochastic for Atari and MiniGrid
    rise: float | None = None  # report the first step the return rose this much (Pong)
    note: str = ""


ENVS: dict[str, BenchEnv] = {e.name: e for e in (
    BenchEnv("CartPole-v1", "gym:CartPole-v1", "CartPole-v1"),
    BenchEnv("Acrobot-v1", "gym:Acrobot-v1", "Acrobot-v1"),
    BenchEnv("Pendulum-v1", "gym:Pendulum-v1", "Pendulum-v1"),
    BenchEnv("MountainCarContinuous-v0", "gym:MountainCarContinuous-v0",
             "MountainCarContinuous-v0"),
    BenchEnv("HalfCheetah-v5", "gym:HalfCheetah-v5", "HalfCheetah-v4", needs=("mujoco",),
             extra="mujoco", note="SB3: the zoo's tuned HalfCheetah-v4 entry"),
    BenchEnv("Hopper-v5", "gym:Hopper-v5", "Hopper-v4", needs=("mujoco",), extra="mujoco",
             note="SB3: the zoo's tuned Hopper-v4 entry"),
    BenchEnv("MiniGrid-DoorKey-5x5-v0", "gym:MiniGrid-DoorKey-5x5-v0",
             "MiniGrid-DoorKey-5x5-v0", needs=("minigrid",), extra="minigrid",
             eval_deterministic=False),
    # Both sides play ALE/Pong-v5 (sticky actions 0.25, as ours): SB3 through the zoo's
    # AtariWrapper, which does its own 4-frame skip, so the env's is turned off there.
    BenchEnv("Pong", "gym:ALE/Pong-v5", "atari", sb3_id="ALE/Pong-v5",
             sb3_env_kwargs=(("frameskip", 1),), needs=("ale_py", "cv2"), extra="atari",
             steps=200_000, eval_episodes=0, rise=1.0,
             note="short budget: steps/s and the first rise of the return only"),
    # A game with lives: both sides end the training episode at a lost life and go on with
    # the game; both log whole games (SB3's Monitor sits under its AtariWrapper). SB3 also
    # presses FIRE after every lost life; ours only at a game's start (EnvPool's and ale-py's
    # way), so its agent must learn to serve.
    BenchEnv("Breakout", "gym:ALE/Breakout-v5", "atari", sb3_id="ALE/Breakout-v5",
             sb3_env_kwargs=(("frameskip", 1),), needs=("ale_py", "cv2"), extra="atari",
             steps=300_000, eval_deterministic=False,
             note="short budget: the zoo trains Atari for 10M steps"),
    # SB3 has no multi-agent PPO and the zoo no settings for MPE: SB3 trains one policy for
    # every agent through SuperSuit, with PettingZoo's own tutorial settings (since 2026-12-07;
    # before, ours alone)
    BenchEnv("simple_spread", "pz:mpe2.simple_spread_v3:parallel_env", "pettingzoo-tutorial",
             needs=("pettingzoo", "mpe2", "supersuit"), extra="pettingzoo,bench", steps=500_000,
             note="SB3: PettingZoo's SB3 tutorial settings through SuperSuit (no zoo settings "
                  "for MPE)"),
)}


def default_steps(env: BenchEnv) -> int:
    """The budget when --steps is not given: the zoo's n_timesteps for the env, or ours."""
    if env.steps is not None:
        return env.steps
    return int(float(ZOO_PPO[env.zoo]["n_timesteps"]))
