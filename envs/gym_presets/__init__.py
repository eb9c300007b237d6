"""Presets for Gymnasium ids: ID.toml (a "/" in the id becomes "_"), read by env_spec.GymSource."""
