"""Checks a new or resumed run must pass before its run dir is written or an engine started.

    check_start(config)    # ConfigError naming the problem and the fix

One place, so `train`, `sweep` and the app's launcher refuse the same things in the same
words: an env spec that cannot be built, batch sizes its agents cannot fill, a CUDA device
torch cannot see, and sizes that cannot fit in memory.
"""

from __future__ import annotations

from puffer_tui.engine.shared.config import (
    Config,
    ConfigError,
    apply,
    eval_env_settings,
    fix_flags,
)
from puffer_tui.engine.startup.memory_estimate import check_memory
from puffer_tui.engine.startup.wandb_check import check_wandb


def check_device(config: Config) -> None:
    """A CUDA run on a machine whose torch sees no GPU, or more CUDA learner ranks than GPUs
    (NCCL needs one each), fails here, before a run dir exists."""
    ranks = config.train.nproc
    if config.train.device != "cuda" and not (config.train.device == "auto" and ranks > 1):
        return
    import torch

    if config.train.device == "cuda" and not torch.cuda.is_available():
        build = "a CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}"
        raise ConfigError(f"--train.device cuda: torch {torch.__version__} ({build}) sees no "
                          f"CUDA device here; use --train.device auto or cpu")
    if ranks > 1 and torch.cuda.is_available() and ranks > torch.cuda.device_count():
        raise ConfigError(f"train.nproc = {ranks} learner ranks need one GPU each and torch sees "
                          f"{torch.cuda.device_count()}: lower train.nproc to "
                          f"{torch.cuda.device_count()} or use --train.device cpu")


def check_env(config: Config):
    """The env's layout (for a Python env, one env is built to learn its spaces), or
    ConfigError with the reason it cannot be built and the fix. Evaluation envs with their
    own settings (eval.env_overrides) must give the policy the same spaces."""
    # lazy: pulls gymnasium, which this module does not load
    from puffer_tui.envs import env_class

    try:
        cls = env_class(config.env_name)
        layout = cls.layout(cls.resolve(dict(config.env)))
        if config.eval.env_overrides:
            evaluated = cls.layout(cls.resolve(eval_env_settings(config)))
            if _spaces(evaluated) != _spaces(layout):
                raise ConfigError(
                    f"eval.env_overrides {config.eval.env_overrides} changes what the policy "
                    f"sees or does ({_spaces(layout)} -> {_spaces(evaluated)}); evaluate "
                    "with settings that keep the observation and action spaces")
        return layout
    except (KeyError, ValueError) as e:
        raise ConfigError(str(e)) from None


def _spaces(layout) -> str:
    return (f"{layout.observation_space} / {layout.action_space}, "
            f"{layout.agents_per_env} agent(s) per env")


def check_batch(config: Config, agents_per_env: int) -> None:
    """The trainer's batch rules, which need the env's agent count (so not in config.py)."""
    found = _batch_problem(config, agents_per_env)
    if found is not None:
        _refuse(config, agents_per_env, *found)


def check_budget(config: Config, agents_per_env: int) -> None:
    """One epoch may not be larger than the whole budget: such a run collects far more than
    asked for (1,000,000 envs x horizon 64 with a 100,000-step budget: 64M steps and ~12 GB
    before its first update), and its first safe point after an update comes late."""
    found = _budget_problem(config, agents_per_env)
    if found is not None:
        _refuse(config, agents_per_env, *found)


def _refuse(config: Config, agents_per_env: int, text: str, fixes: list[dict]) -> None:
    """Refuse with `text`, naming only the fixes that are then accepted: each completed with
    the changes the rules ask for next, and checked against them all (config.py's included)."""
    shown = [fix for fix in (_accepted(config, agents_per_env, f) for f in fixes) if fix]
    if shown:
        text += "; use " + " or ".join(fix_flags(fix) for fix in shown)
    raise ConfigError(text)


def _accepted(config: Config, agents_per_env: int, fix: dict, rounds: int = 3) -> dict | None:
    fix = dict(fix)
    for _ in range(rounds):
        try:
            changed = apply(config, fix)  # config.py's own rules, its fixes already checked
        except ConfigError:
            return None
        found = _batch_problem(changed, agents_per_env) or \
            _budget_problem(changed, agents_per_env)
        if found is None:
            try:
                check_memory(changed)  # a larger budget or more envs must still fit
            except ConfigError:
                return None
            return fix
        if not found[1]:
            return None
        fix.update(found[1][0])
    return None


def _batch_problem(config: Config, agents_per_env: int):
    t = config.train
    agents = config.vec.num_envs * agents_per_env
    batch = t.batch_size or agents * t.horizon
    if batch < agents * t.horizon:
        return (f"train.batch_size ({batch}) is smaller than num_agents * horizon ({agents} * "
                f"{t.horizon}); every agent needs a segment", [{"train.batch_size": 0}])
    if t.minibatch_size > batch:
        return (f"train.minibatch_size ({t.minibatch_size}) exceeds the batch ({batch} = "
                f"{agents} agents * horizon {t.horizon} unless train.batch_size is set)",
                [{"train.minibatch_size": _whole_minibatch(t, batch)},
                 {"vec.num_envs": _envs_for(config, agents_per_env, t.minibatch_size)}])
    return None


def _whole_minibatch(t, batch: int) -> int:
    """The largest minibatch a batch of `batch` steps takes (whole segments unless shuffled)."""
    return batch if t.shuffle_steps else max(t.horizon, batch // t.horizon * t.horizon)


def _envs_for(config: Config, agents_per_env: int, steps: int) -> int:
    """The fewest envs whose batch holds `steps`, a multiple of the worker count."""
    per_env = config.train.horizon * agents_per_env
    envs = -(-steps // per_env)
    if config.vec.backend in ("multiprocessing", "ray"):
        envs = -(-envs // config.vec.num_workers) * config.vec.num_workers
    return envs


def _budget_problem(config: Config, agents_per_env: int):
    t = config.train
    agents = config.vec.num_envs * agents_per_env
    ranks = max(1, t.nproc)
    epoch = (t.batch_size or agents * t.horizon) * ranks
    if epoch <= t.total_timesteps:
        return None
    fixes: list[dict] = [{"train.total_timesteps": epoch}]
    fit = t.total_timesteps // (t.horizon * agents_per_env * ranks)  # envs whose epoch fits
    if config.vec.backend in ("multiprocessing", "ray"):
        workers = min(config.vec.num_workers, fit)
        fit = fit // workers * workers if workers else 0
        fewer = {"vec.num_envs": fit}
        if workers and workers != config.vec.num_workers:
            fewer["vec.num_workers"] = workers
    else:
        fewer = {"vec.num_envs": fit}
    if fit >= 1:
        if t.batch_size:
            fewer["train.batch_size"] = 0  # the batch follows the envs
        fixes.append(fewer)
    return (f"one epoch is {epoch:,} agent steps ({agents:,} agents x train.horizon {t.horizon}"
            f"{f' x {t.nproc} ranks' if t.nproc > 1 else ''}), more than the whole budget "
            f"train.total_timesteps {t.total_timesteps:,}", fixes)


def check_policy(config: Config, layout) -> None:
    """train.policy must fit the observations (cnn needs images); train.exploration gsde
    needs Box actions."""
    if config.train.exploration == "gsde":
        from gymnasium import spaces

        if not isinstance(layout.action_space, spaces.Box):
            raise ConfigError(f"train.exploration gsde is for Box actions, the env's are "
                              f"{layout.action_space}; use --train.exploration gaussian")
    if config.train.policy != "cnn":  # the only choice that can misfit; spares a torch import
        return
    # lazy: pulls gymnasium, torch, which this module does not load
    from puffer_tui.engine.algo.encoders import check_encoder_choice

    try:
        check_encoder_choice(layout.observation_space, config.train.policy)
    except ValueError as e:
        raise ConfigError(str(e)) from None


def check_start(config: Config) -> None:
    """Everything that can be known to fail before anything is created."""
    layout = check_env(config)
    check_batch(config, layout.agents_per_env)
    check_budget(config, layout.agents_per_env)
    check_policy(config, layout)
    check_device(config)
    if config.train.optimizer != "adam":  # (imports torch: only when it matters)
        # lazy: pulls torch, which this module does not load
        from puffer_tui.engine.algo.optimizers import check_available

        check_available(config.train)  # muon needs torch.optim.Muon (torch >= 2.9)

    check_wandb(config)  # train.wandb without the package: `pip install "puffer-tui[wandb]"`
    check_memory(config)  # sizes that cannot fit: refused before the run dir exists
