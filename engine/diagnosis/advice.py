"""The one check a diagnosis' suggested change passes before it is shown or applied: the run
would take it (the config's own bounds and cross-field rules, `engine/shared/config.py`
`apply`, the same validation `puffer-tui train` and a live `set` go through), and a worker
count fits the machine (no more workers than the cores other programs leave free).

    suggestion = fitted(suggestion, config)      # None: nothing the run would take

A suggestion that cannot be made to fit is dropped; the rule's hint still says what to look at.
"""

from __future__ import annotations

from puffer_tui.engine.shared.config import ConfigError, apply
from puffer_tui.engine.vec.sizing import available_cores

WORKERS_KEY = "vec.num_workers"


def free_cores(cores: int, load: float, own: float) -> int:
    """The cores this run may count on: `cores` less the load other programs put on them
    (the machine's `load` less this run's `own` busy processes), at least 1, at most `cores`."""
    others = max(0.0, load - own)
    return max(1, min(cores, int(cores - others + 0.5)))


def measured_free_cores(own: float) -> int:
    """`free_cores` on this machine now: the usable cores and the 1-minute load average."""
    # lazy: psutil is read only when a rule suggests more workers
    import psutil

    return free_cores(available_cores(), psutil.getloadavg()[0], own)


def _restart_flag(key: str, value) -> str:
    shown = str(value).lower() if isinstance(value, bool) else f"{value:g}" \
        if isinstance(value, float) else str(value)
    return f"--{key.replace('_', '-')} {shown}"


def fitted(suggestion: dict | None, config, free: int | None = None) -> dict | None:
    """`suggestion` as the run would take it, or None. A worker count above the free cores
    (`free`; measured when None) is lowered to them, and dropped when that is no more than the
    run has; any change the config refuses (bounds, cross-field rules) is dropped."""
    if not suggestion or "to" not in suggestion:
        return suggestion
    key, to = suggestion["key"], suggestion["to"]
    if key == WORKERS_KEY:
        now = config.vec.num_workers
        if free is None:
            free = measured_free_cores(own=now + 1)  # the workers and the learner are busy
        to = min(int(to), free)
        if to <= now:
            return None
    try:
        apply(config, {key: to})
    except (ConfigError, ValueError):
        return None
    if to == suggestion["to"]:
        return suggestion
    changed = {**suggestion, "to": to}
    if not suggestion.get("live"):
        changed["restart"] = _restart_flag(key, to)
    return changed
