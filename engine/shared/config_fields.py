"""The typed sections of a run's configuration: every field with its default, bounds, help,
whether it may change live, and its default sweep range. engine/shared/config.py builds,
checks and stores configs of these sections.

Tested in: tests/engine/shared/test_field_rules.py, tests/engine/sweep/test_sweep_space.py (the
default ranges), tests/test_cli_reference.py (every field's flag and help in docs/cli.md)
"""

from __future__ import annotations

from dataclasses import dataclass, field

STOP_WINDOW = 5  # epochs whose mean episode score train.stop_at_score compares


# `search`: the field's default sweep distribution (engine/sweep/space.py), (low, high, scale)
# with scale "linear", "log", or "log-relative" (bounds are factors of the preset's value).
def _f(default, help, low=None, high=None, live=False, choices=None, search=None):
    meta = {"help": help, "low": low, "high": high, "live": live, "choices": choices,
            "search": search}
    return field(default=default, metadata=meta)


@dataclass
class VecConfig:
    backend: str = _f("serial", "vectorization backend (ray: pip install puffer-tui[ray])",
                      choices=("serial", "multiprocessing", "ray"))
    num_envs: int = _f(4096, "environments simulated in parallel", 1, 1_000_000)
    num_workers: int = _f(2, "worker processes (multiprocessing) or Ray actors (ray)", 1, 1024)
    batch_size: int = _f(0, "envs per recv() (0: num_envs, i.e. synchronous)", 0, 1_000_000)
    zero_copy: bool = _f(True, "pool returns contiguous blocks of envs in turn (no copies); "
                         "off: any finished workers, gathered")
    inline: bool = _f(False, "multiprocessing: the trainer's process steps one block of envs "
                      "itself, one worker process fewer (faster when the workers fill the "
                      "cores; a crash of an env in that block ends the run)")
    worker_timeout: float = _f(15.0, "the least seconds a busy worker may go without a sign "
                               "of progress before it is reported hung, with its stack; "
                               "multiprocessing allows 5x the slowest step or reset measured "
                               "when that is longer (ray: the limit itself)", 0.1, 86400.0)
    ray_address: str = _f("", "Ray cluster host:port (ray backend; empty: RAY_ADDRESS or a "
                          "running local Ray, else start one here)")
    ray_num_cpus: float = _f(1.0, "CPUs each Ray actor asks the cluster for (ray backend)",
                             0.01, 1024.0)


@dataclass
class TrainConfig:
    total_timesteps: int = _f(20_000_000, "agent steps to train for", 1, 10**13, live=True,
        search=(0.25, 2.0, "log-relative"))
    seed: int = _f(1, "seed for torch, numpy and the envs", 0, 2**31 - 1)
    device: str = _f("auto", "torch device (auto: CUDA when present)", choices=("auto", "cpu", "cuda"))
    torch_threads: int = _f(0, "CPU threads for torch (0: one per core not taken by env workers or other load)", 0, 512)
    compile: bool = _f(False, "torch.compile the PPO loss, the policy's forward in it "
                       "(under DDP the policy alone)")
    numpy_math: bool = _f(True, "a plain MLP in float32 on the CPU runs its forward and gradients in "
                          "numpy (false: through torch's autograd, the reference it is tested against)")
    policy: str = _f("auto", "policy network (auto: a CNN for image observations, else an MLP)",
                     choices=("auto", "mlp", "cnn", "lstm"))
    cnn_channels: int = _f(32, "CNN: channels of the first conv layer (the next two have twice "
                           "as many)", 4, 1024)
    hidden_size: int = _f(128, "width of the policy's hidden layers", 4, 8192,
        search=(32, 512, "log"))
    activation: str = _f("gelu", "MLP nonlinearity (tanh: the usual one for continuous control)",
                         choices=("gelu", "tanh", "relu"))
    separate_critic: bool = _f(False, "MLP: the value function has its own network (no trunk "
                               "shared with the policy)")
    init_log_std: float = _f(0.0, "Box actions: initial log std of the Gaussian (kept within "
                             "[-5, 2] while training)", -5.0, 2.0)
    action_squash: str = _f("clip", "Box actions: clip the Gaussian sample to the bounds, or "
                            "squash it into them with tanh", choices=("clip", "tanh"))
    exploration: str = _f("gaussian", "Box actions: the Gaussian's noise is drawn afresh each "
                          "step (gaussian), or is the actor's last hidden layer times a "
                          "random matrix per env held for train.sde_sample_freq steps (gsde: "
                          "smooth, state-dependent exploration; init_log_std is then the log "
                          "std of that matrix's entries)", choices=("gaussian", "gsde"))
    sde_sample_freq: int = _f(0, "gsde: steps of an env between new exploration matrices (0: "
                              "one per collection, drawn at its start)", 0, 10**9)
    normalize_observations: bool = _f(False, "running mean/std normalization of float vector "
                                      "observations (images and integer grids: left alone)")
    observation_clip: float = _f(10.0, "clip normalized observations to [-c, c] (0: off)",
                                 0.0, 1e6)
    normalize_rewards: bool = _f(False, "divide rewards by the running std of the discounted "
                                 "return")
    reward_clip: float = _f(10.0, "clip scaled rewards to [-c, c] (0: off)", 0.0, 1e9)
    lstm_sequence_resets: bool = _f(
        True, "LSTM: reset the state at episode ends inside training sequences too (exact; "
        "off: one fused LSTM call per minibatch, faster on CPU)")
    horizon: int = _f(64, "steps per segment of the rollout buffer (and BPTT length)", 2, 8192)
    batch_size: int = _f(0, "samples per epoch (0: num_agents * horizon)", 0, 2**31 - 1)
    minibatch_size: int = _f(8192, "samples per gradient step", 1, 2**31 - 1)
    shuffle_steps: bool = _f(False, "feedforward policies: minibatches of single steps from the whole "
                             "batch, each epoch a permutation (standard PPO; off: whole "
                             "segments, drawn by train.prio_alpha)")
    update_epochs: int = _f(1, "passes over each batch", 1, 64, live=True,
        search=(1, 4, "linear"))
    learning_rate: float = _f(0.015, "Adam learning rate", 0.0, 1.0, live=True,
        search=(1e-4, 1e-1, "log"))
    anneal_lr: bool = _f(True, "cosine-anneal the learning rate to 0 over the run", live=True)
    adaptive_lr_kl: float = _f(0.03, "the approx_kl an update is held to: after an update above "
                               "2x it the learning rate is scaled by 1/1.5, below 1/2 of it by "
                               "1.5, within the scale bounds below (0: off)", 0.0, 1.0,
                               live=True)
    adaptive_lr_min_scale: float = _f(0.02, "adaptive_lr_kl: the least scale on the scheduled "
                                      "learning rate", 1e-6, 1.0, live=True)
    adaptive_lr_max_scale: float = _f(1.0, "adaptive_lr_kl: the largest scale on the scheduled "
                                      "learning rate (1: the set rate is a ceiling)", 1.0,
                                      100.0, live=True)
    target_kl: float = _f(0.0, "early stop (SB3's): an update's remaining minibatches are "
                          "skipped once a minibatch's approx_kl exceeds 1.5x this (0: off)",
                          0.0, 10.0, live=True)
    gamma: float = _f(0.995, "discount factor", 0.0, 1.0, live=True,
        search=(0.9, 0.999, "linear"))
    gamma_from_time_limit: bool = _f(False, "before the run, one env takes random actions "
                                     "for up to 4 episodes: if none terminates and all end at "
                                     "the time limit T, gamma = 1 - 1/T (at most 0.999); a "
                                     "gamma given turns it off")
    gae_lambda: float = _f(0.90, "GAE lambda", 0.0, 1.0, live=True,
        search=(0.8, 0.99, "linear"))
    vtrace_rho_clip: float = _f(1.0, "V-trace importance-ratio clip for advantages", 0.0, 100.0, live=True)
    vtrace_c_clip: float = _f(1.0, "V-trace trace-cutting clip", 0.0, 100.0, live=True)
    refresh_advantages: bool = _f(True, "recompute advantages before each minibatch with the "
                                  "latest values and ratios (V-trace; off: once per batch, "
                                  "as standard PPO)", live=True)
    prio_alpha: float = _f(0.8, "prioritized segment sampling exponent (0: uniform)", 0.0, 1.0, live=True,
        search=(0.0, 1.0, "linear"))
    prio_beta0: float = _f(0.2, "initial importance-weight exponent, annealed to 1", 0.0, 1.0, live=True)
    clip_coef: float = _f(0.2, "PPO policy clip", 0.0, 10.0, live=True,
        search=(0.05, 0.5, "linear"))
    vf_coef: float = _f(2.0, "value loss coefficient", 0.0, 100.0, live=True,
        search=(0.25, 5.0, "log"))
    vf_clip_coef: float = _f(0.2, "value clip (0: off)", 0.0, 100.0, live=True)
    ent_coef: float = _f(0.001, "entropy bonus coefficient", 0.0, 1.0, live=True,
        search=(1e-5, 1e-1, "log"))
    max_grad_norm: float = _f(1.5, "gradient norm clip", 0.0, 1000.0, live=True,
        search=(0.1, 5.0, "log"))
    reward_clamp: float = _f(0.0, "clamp rewards to [-c, c] (0: off)", 0.0, 1e9, live=True)
    adam_beta1: float = _f(0.95, "Adam beta1", 0.0, 0.9999,
        search=(0.8, 0.99, "linear"))
    adam_beta2: float = _f(0.999, "Adam beta2", 0.0, 0.99999)
    adam_eps: float = _f(1e-8, "Adam epsilon", 1e-12, 1e-2)
    optimizer: str = _f("adam", "optimizer (muon: torch.optim.Muon for the hidden 2-D weights, "
                        "Adam for the rest)", choices=("adam", "muon"))
    precision: str = _f("float32", "autocast of the policy's passes (bfloat16: mixed "
                        "precision; auto: bfloat16 where native)",
                        choices=("float32", "bfloat16", "auto"))
    wandb: bool = _f(False, "log metrics, config, live changes and recordings to Weights & "
                     "Biases (pip install puffer-tui[wandb]; WANDB_MODE=offline needs no account)")
    wandb_project: str = _f("puffer-tui", "Weights & Biases project name")
    nproc: int = _f(1, "learner processes (torchrun ranks, DistributedDataParallel)", 1, 1024)
    stop_at_score: float = _f(0.0, "finish once the mean episode score of the last "
                              f"{STOP_WINDOW} epochs with episodes reaches this (0: off)",
                              -1e12, 1e12, live=True)
    checkpoint_interval: int = _f(200, "epochs between checkpoints (0: only on stop)", 0, 10**9)
    autopilot: bool = _f(False, "apply the diagnosis' live fixes by themselves, each logged as "
                         "an event with its evidence and reverted if the score fell after it",
                         live=True)


@dataclass
class EvalConfig:
    interval: int = _f(0, "epochs between evaluations of the policy on separate envs (0: off)",
                       0, 10**9, live=True)
    episodes: int = _f(8, "episodes per evaluation", 1, 100_000, live=True)
    num_envs: int = _f(8, "envs the evaluation steps at once (its own, not the training envs)",
                       1, 65_536)
    deterministic: bool = _f(True, "evaluate the most likely action (false: sample)", live=True)
    record_every: int = _f(0, "evaluations between recordings of an episode into "
                           "RUN_DIR/recordings/ (0: never)", 0, 10**9, live=True)
    record_format: str = _f("gif", "format of periodic recordings", choices=("gif", "mp4"))
    record_scale: int = _f(0, "pixels per tile (or image pixel) in recordings (0: about "
                           "400 px wide, as eval --record)", 0, 64)
    env_overrides: str = _f("", "env settings of the evaluation envs only, as a TOML inline "
                            "table, e.g. {max_steps = 1000} (empty: the run's own)")


# The sections held as dataclasses (env is a plain dict: its fields belong to the env class).
TYPED_SECTIONS = {"vec": VecConfig, "train": TrainConfig, "eval": EvalConfig}
