"""The env specs a person typed lately (gym:..., module:callable), newest first, kept in a
small JSON file under the runs root so the launcher can offer them again.

    remember(root, "gym:CartPole-v1"); recent(root) -> ["gym:CartPole-v1", ...]
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from puffer_tui.engine.shared.atomic_write import write_atomic

RECENT_FILE = ".recent_env_specs.json"
LIMIT = 8


def recent(root: str | os.PathLike) -> list[str]:
    """The remembered specs, newest first ([] if none or the file is unreadable)."""
    try:
        specs = json.loads((Path(root) / RECENT_FILE).read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(specs, list):
        return []
    return [s for s in specs if isinstance(s, str) and s][:LIMIT]


def remember(root: str | os.PathLike, spec: str) -> list[str]:
    """Put `spec` first (once), keep the newest LIMIT, and write the file whole or not at all;
    a runs root that cannot be written only loses the memory, never the run."""
    specs = [spec, *(s for s in recent(root) if s != spec)][:LIMIT]
    try:
        Path(root).mkdir(parents=True, exist_ok=True)
        write_atomic(Path(root) / RECENT_FILE, json.dumps(specs, indent=1) + "\n")
    except OSError:
        pass
    return specs
