"""Which Gymnasium ids are ale-py's Atari games (one definition for env_spec and ale_vector).

Tested in: tests/envs/test_env_spec_atari_ids.py
"""

from __future__ import annotations


def is_atari_id(env_id: str) -> bool:
    """An Atari game of ale-py: ALE/Pong-v5, or one of its ids without the namespace
    (PongNoFrameskip-v4) once ale-py is imported. These get the Atari preprocessing, ale-py's
    vector env and ALE.toml."""
    import gymnasium

    if env_id.startswith("ALE/"):
        return True
    spec = gymnasium.registry.get(env_id)
    return spec is not None and str(spec.entry_point).startswith("ale_py")
