"""How much memory a run's sizes need, checked before anything is allocated.

    check_memory(config)     # MemoryEstimateError (a ConfigError) naming the figures

Values inside every field's bounds can still add up to more memory than the machine has
(`--vec.num-envs 1000000` with a long horizon): the engine would be OOM-killed with nothing
said. The estimate counts the big allocations from the sizes alone (no torch, no env built):
the env buffers (shared memory for the workers), the rollout buffer, the per-agent recurrent
state, the model with its gradients and Adam moments, and the activations of a forward pass
over all agents and of a minibatch's backward pass; fixed costs (the interpreter, torch)
are a constant allowance. Calibrated against a measured run: squared, 100,000 envs,
horizon 16, estimated 0.75 GB, peak RSS 0.77 GB after one epoch (CPU).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from puffer_tui.engine.shared.config import Config, ConfigError

BASE_PROCESS_BYTES = 250 << 20  # python + torch + numpy in the engine
WORKER_PROCESS_BYTES = 40 << 20  # each env worker process (python + numpy + the env module)
ACTIVATIONS_PER_HIDDEN = 4  # float32 [rows, hidden] tensors alive at the peak (measured)
MAX_ONE_HOT_VALUES = 16  # engine/algo/policy.py one-hot encodes integer cells below this


class MemoryEstimateError(ConfigError):
    """The chosen sizes need more memory than is available."""


@dataclass(frozen=True)
class MemoryEstimate:
    envs: int
    rollout: int
    model: int
    activations: int
    fixed: int

    @property
    def total(self) -> int:
        return self.envs + self.rollout + self.model + self.activations + self.fixed


def format_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def _action_elements(space) -> tuple[int, int]:
    """(elements per agent in the actions buffer, logits per agent)."""
    from gymnasium import spaces

    if isinstance(space, spaces.Discrete):
        return 1, int(space.n)
    if isinstance(space, spaces.MultiDiscrete):
        nvec = np.asarray(space.nvec).ravel()
        return len(nvec), int(nvec.sum())
    size = int(np.prod(space.shape))
    return size, size


def _encoder_width(obs_space) -> int:
    cells = int(np.prod(obs_space.shape))
    if np.issubdtype(obs_space.dtype, np.integer) and cells:
        low, high = int(np.min(obs_space.low)), int(np.max(obs_space.high))
        if low >= 0 and high < MAX_ONE_HOT_VALUES:
            return max(cells * high, 1)
    return max(cells, 1)


def estimate(config: Config) -> MemoryEstimate:
    # lazy: pulls gymnasium, which this module does not load
    from puffer_tui.envs import env_class

    cls = env_class(config.env_name)
    layout = cls.layout(cls.resolve(dict(config.env)))
    obs_space, train, vec = layout.observation_space, config.train, config.vec
    agents = vec.num_envs * layout.agents_per_env
    obs_bytes = int(np.prod(obs_space.shape)) * np.dtype(obs_space.dtype).itemsize
    act_elements, logits = _action_elements(layout.action_space)
    hidden = train.hidden_size

    # obs, actions (4 bytes each), reward (4), terminal/truncation/mask (1 each)
    env_row = obs_bytes + 4 * act_elements + 4 + 3
    envs = agents * env_row
    if vec.backend == "multiprocessing":
        envs += vec.num_workers * WORKER_PROCESS_BYTES

    batch = train.batch_size or agents * train.horizon
    segments = max(batch // train.horizon, agents)
    # per step: obs, actions, and float32 logprob, value, reward, terminal, truncation, mask;
    # the learner keeps ~5 more [segments, horizon] float32 tensors (values, ratio, valid...)
    step_bytes = obs_bytes + 4 * act_elements + 4 * 6 + 4 * 5
    rollout = segments * train.horizon * step_bytes
    recurrent = train.policy == "lstm"
    if recurrent:
        rollout += segments * hidden * 2 * 4 + agents * hidden * 2 * 4

    core = 4 * (2 * hidden * hidden + 2 * hidden) if recurrent else hidden * hidden + hidden
    params = _encoder_width(obs_space) * hidden + hidden + core + (hidden + 1) * (logits + 1)
    model = params * 4 * 4  # weights, gradients, two Adam moments

    minibatch = min(train.minibatch_size, segments * train.horizon)
    activations = (agents + minibatch) * hidden * 4 * ACTIVATIONS_PER_HIDDEN
    activations += (agents + minibatch) * logits * 4 * 2
    # train.nproc learner ranks on this machine each hold all of the above (vec.num_envs is
    # per rank); under DDP each also keeps gradient buckets, one more copy of the gradients
    ranks = max(1, train.nproc)
    if ranks > 1:
        model += params * 4
    return MemoryEstimate(envs * ranks, rollout * ranks, model * ranks, activations * ranks,
                          BASE_PROCESS_BYTES * ranks)


def available_memory() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:
        return None


def check_memory(config: Config, available: int | None = None) -> MemoryEstimate:
    """Raise MemoryEstimateError if the run cannot fit in the memory available now."""
    need = estimate(config)
    available = available_memory() if available is None else available
    if available is not None and need.total > available:
        parts = {"rollout": need.rollout, "envs": need.envs, "model": need.model,
                 "activations": need.activations}
        detail = ", ".join(f"{k} {format_bytes(v)}" for k, v in parts.items()
                           if v >= need.total / 100 or k == "rollout")
        raise MemoryEstimateError(
            f"these sizes need about {format_bytes(need.total)} of memory ({detail}) but "
            f"{format_bytes(available)} is available; lower vec.num_envs "
            f"({config.vec.num_envs}), train.nproc ({config.train.nproc}), "
            f"train.horizon ({config.train.horizon}), "
            f"train.batch_size or train.hidden_size")
    return need

