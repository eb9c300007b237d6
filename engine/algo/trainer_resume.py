"""What a checkpoint must agree with before a trainer takes its state, and which live values
a resume keeps (Trainer.load_state_dict's rules)."""

from __future__ import annotations

from puffer_tui.engine.shared.config import Config, live_specs

# the fields the weights and optimizer moments depend on: a checkpoint differing in one of
# them cannot be loaded into this trainer
SHAPE_FIELDS = ("policy", "hidden_size", "optimizer", "separate_critic", "normalize_observations",
                "exploration")


def check_compatible(config: Config, saved: Config) -> None:
    """ValueError naming the field when the checkpoint's config `saved` cannot go into a
    trainer built from `config`."""
    if saved.env_name != config.env_name:
        raise ValueError(f"checkpoint is for env {saved.env_name!r}, this trainer runs "
                         f"{config.env_name!r}")
    for name in SHAPE_FIELDS:
        ours, theirs = getattr(config.train, name), getattr(saved.train, name)
        if ours != theirs:
            raise ValueError(f"checkpoint has train.{name} = {theirs!r}, this trainer "
                             f"{ours!r}; build the trainer from the checkpoint's config")


def restore_live_fields(config: Config, built: dict, saved: Config,
                        saved_built: dict | None) -> None:
    """Set `config`'s live train fields to the checkpoint's, except those given for this
    resume: a field whose value this trainer was built with (`built`) differs from the value
    the checkpoint's run was built with (`saved_built`) was changed by the user on purpose."""
    ours = built["train"]
    # Checkpoints written before built_config was saved cannot tell: theirs wins.
    theirs = (saved_built or {}).get("train", ours)
    for name in (spec.name for spec in live_specs() if spec.section == "train"):
        if name in theirs and ours[name] != theirs[name]:
            continue  # given for this resume: the new value wins
        setattr(config.train, name, getattr(saved.train, name))
