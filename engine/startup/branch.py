"""Branching: a new run that starts from another run's checkpoint, with changed settings.

    plan = plan_branch("squared-20261122-001401/best.pt", {"train.learning_rate": "1e-3"}, root)
    run_dir = create_branch(plan, root)     # then the engine starts it with --resume

The branch's config is the config its parent's checkpoint trained with (live changes
included) plus the overrides, with `parent` naming that checkpoint. Any field may change as
long as the parent's weights fit the branch's policy: train.hidden_size, train.policy, or env
settings that reshape observations or actions cannot, and the env itself stays.

The branch starts as a resume of a seed checkpoint written into its own checkpoints/: the
parent's weights, its optimizer moments (same optimizer kind; a new one starts afresh), its
counters (global_step goes on from the parent's) and lr schedule (re-anchored if the budget
changed, engine/algo/schedule.py); its RNG streams and episodes too unless train.seed changed.
Everything is checked before the branch's run dir exists.
"""

from __future__ import annotations

import dataclasses
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.checkpoint import CheckpointError
from puffer_tui.engine.shared.config import Config, ConfigError
from puffer_tui.engine.shared.events import EventLog
from puffer_tui.engine.startup.preflight import check_env, check_start

# train fields besides hidden_size that shape the network (env settings may too)
SHAPING_TRAIN_FIELDS = ("train.policy", "train.cnn_channels")


@dataclass
class BranchPlan:
    parent_run: Path
    checkpoint: Path
    config: Config  # the branch's, `parent` set
    state: dict  # the seed checkpoint
    changes: list[str] = field(default_factory=list)  # "train.learning_rate 0.015 -> 0.001"
    notes: list[str] = field(default_factory=list)  # what does not carry over, and why

    @property
    def step(self) -> int:
        return int(self.state["global_step"])


def resolve_source(source: str, root) -> tuple[Path, Path]:
    """(parent run dir, checkpoint) of `RUN` (its latest checkpoint), `RUN/NAME` (a file in
    its checkpoints/, e.g. best.pt) or a checkpoint file's path."""
    text = str(source).rstrip("/")
    path = Path(text).expanduser()
    name = None
    if path.is_file() and path.parent.name == rd.CHECKPOINT_DIR and \
            rd.is_run_dir(path.parent.parent):
        run, name = path.parent.parent.resolve(), path.name
    else:
        try:
            run = rd.find_run(text, root)
        except rd.RunDirError:
            head, sep, tail = text.rpartition("/")
            if not sep or not head:
                raise
            head = head.removesuffix("/" + rd.CHECKPOINT_DIR)
            run, name = rd.find_run(head, root), tail
    if name is None:
        latest = ckpt.latest_checkpoint(run)
        if latest is None:
            raise CheckpointError(f"{run.name} has no checkpoint to branch from (none in "
                                  f"{ckpt.checkpoint_dir(run)}); resume or finish it first")
        return run, latest.resolve()
    chosen = ckpt.checkpoint_dir(run) / name
    if not chosen.is_file():
        found = sorted(p.name for p in ckpt.checkpoint_dir(run).glob("*.pt"))
        raise CheckpointError(f"{run.name} has no checkpoint {name!r}; it has "
                              f"{', '.join(found) if found else 'none'}")
    return run, chosen.resolve()


def plan_branch(source: str, overrides: dict, root, env: str | None = None,
                check_overrides=None) -> BranchPlan:
    """Every check of a branch, nothing written. `check_overrides(overrides, env_name)` may
    vet the flags first (the CLI's, which suggests spellings). Raises ConfigError,
    CheckpointError or RunDirError, each one line naming the problem and the fix."""
    parent_run, path = resolve_source(source, root)
    state = ckpt.load_checkpoint(path)
    if not isinstance(state.get("policy"), dict) or "config" not in state:
        raise CheckpointError(f"{path} holds no trainer state (policy and config) to branch from")
    try:
        base = cfg.from_dict(state["config"])
    except ConfigError as e:
        raise ConfigError(f"{path}: its config is not valid here ({e})") from None
    if env and env != base.env_name:
        raise ConfigError(f"{parent_run.name} trains {base.env_name}: a branch keeps its "
                          f"parent's env (not {env}); to train {env}, start a new run with "
                          f"`puffer-tui train {env}`")
    if check_overrides is not None:
        check_overrides(overrides, base.env_name)
    child = dataclasses.replace(cfg.apply(base, overrides), parent=str(path))
    changes = config_changes(base, child)
    _check_weights_fit(base, child, state["policy"], changes)
    step = int(state["global_step"])
    if child.train.total_timesteps <= step:
        raise ConfigError(
            f"{path.name} is at step {step:,} and the branch goes on from there, so "
            f"train.total_timesteps ({child.train.total_timesteps:,}) must be above it: add "
            f"--train.total-timesteps {2 * step}")
    check_start(child)
    seed, notes = seed_state(state, base, child)
    return BranchPlan(parent_run, path, child, seed, changes, notes)


def create_branch(plan: BranchPlan, root) -> Path:
    """The branch's run dir with its config.toml, seed checkpoint and a first event saying
    where it came from; removed again if any of that cannot be written."""
    # lazy: pulls gymnasium, which this module does not load
    from puffer_tui.envs.env_spec import run_label

    run_dir = rd.create_run_dir(run_label(plan.config.env_name), rd.runs_root(root))
    try:
        cfg.save(plan.config, run_dir / rd.CONFIG_FILE)
        ckpt.save_checkpoint(run_dir, plan.state)
        changed = "; ".join(plan.changes) if plan.changes else "no setting changed"
        EventLog(run_dir).info(f"branched from {plan.checkpoint} at step {plan.step:,} "
                               f"({changed})" + "".join(f"; {n}" for n in plan.notes))
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    return run_dir


def config_changes(base: Config, child: Config) -> list[str]:
    """"section.name old -> new" for every field the branch changes (parent aside)."""
    old, new = cfg.flat_sections(base.as_dict()), cfg.flat_sections(child.as_dict())
    return [f"{key} {old.get(key, '-')} -> {new.get(key, '-')}"
            for key in sorted(set(old) | set(new))
            if key != "parent" and old.get(key) != new.get(key)]


def _check_weights_fit(base: Config, child: Config, weights: dict, changes: list[str]) -> None:
    """Refuse overrides that give the branch a policy the parent's weights cannot load into."""
    old, new = base.train.hidden_size, child.train.hidden_size
    if old != new:
        raise ConfigError(
            f"--train.hidden-size {new}: the parent's weights have train.hidden_size = {old} "
            f"and cannot load into a network of another width; branch without changing it, "
            f"or start a new run with `puffer-tui train {child.env_name} --train.hidden-size "
            f"{new}`")
    # lazy: pulls gymnasium, torch, the policy, which this module does not load
    from puffer_tui.engine.algo.policy import make_policy

    layout = check_env(child)
    ours = make_policy(layout.observation_space, layout.action_space, child.train).state_dict()
    for key in sorted(set(ours) | set(weights)):
        mine, theirs = ours.get(key), weights.get(key)
        if mine is None or theirs is None or tuple(mine.shape) != tuple(theirs.shape):
            shaping = [c.split(" ")[0] for c in changes
                       if c.startswith(("env.", *SHAPING_TRAIN_FIELDS))]
            because = f" ({', '.join(shaping)} changed)" if shaping else ""
            shape = lambda t: "absent" if t is None else tuple(t.shape)  # noqa: E731
            raise ConfigError(
                f"the parent's weights do not fit the branch's policy{because}: {key} is "
                f"{shape(theirs)} in the parent's checkpoint, {shape(mine)} here; keep the "
                f"settings that shape the network (train.policy, env settings that change "
                f"observations or actions)")


def seed_state(state: dict, base: Config, child: Config) -> tuple[dict, list[str]]:
    """The checkpoint the branch resumes from, and notes on what it does not carry over."""
    seed, notes = dict(state), []
    seed["config"] = seed["built_config"] = child.as_dict()  # the branch's values all win
    if child.train.optimizer != base.train.optimizer:
        seed["optimizer"] = None
        notes.append(f"train.optimizer {child.train.optimizer}: its state starts afresh")
    elif seed.get("optimizer") is not None:
        seed["optimizer"] = _with_adam_settings(seed["optimizer"], child.train)
    if child.train.seed != base.train.seed:
        seed["rng"], seed["vecenv"], seed["lstm_state"] = {}, None, None
        seed["episodes_afresh"] = "this branch changed train.seed"  # the resume's warning
        notes.append(f"train.seed {child.train.seed}: new random streams, episodes start afresh")
    return seed, notes


def _with_adam_settings(optimizer: dict, train) -> dict:
    """The optimizer state with the branch's Adam betas and eps: loading a state dict restores
    its param groups' settings, which would silently undo those overrides. Muon's state holds
    an Adam's and a Muon's ({"adam": ..., "muon": ...}); only Adam groups have betas."""
    if "param_groups" not in optimizer:
        return {key: _with_adam_settings(value, train) if isinstance(value, dict) else value
                for key, value in optimizer.items()}
    groups = []
    for group in optimizer["param_groups"]:
        if "betas" in group:
            group = {**group, "betas": (train.adam_beta1, train.adam_beta2),
                     "eps": train.adam_eps}
        groups.append(group)
    return {**optimizer, "param_groups": groups}
