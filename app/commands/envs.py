"""`puffer-tui envs`: the registered environments and their spaces.

Tested in: tests/app/test_cli_listing.py (the table at 80 columns), tests/envs/test_env_plugin.py
(--json with a plugin's envs)"""

from __future__ import annotations


def add_parser(sub, name, help_text):
    p = sub.add_parser(name, help=help_text, description=help_text)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(run=run)


VARYING_MARK = "*"


def _num(x: float) -> str:
    return f"{x:.3g}".replace("e+0", "e").replace("e+", "e")


def space_text(space) -> str:
    """A space in one short line (`uint8[121] 0..2`): a Box's bounds as one range, not as
    numpy arrays; a `*` marks bounds that differ per element (the widest are shown)."""
    import numpy as np
    from gymnasium import spaces

    if isinstance(space, spaces.Box):
        low, high = np.asarray(space.low), np.asarray(space.high)
        shape = ",".join(map(str, space.shape))
        if not low.size:
            return f"{space.dtype}[{shape}]"
        lo, hi = float(low.min()), float(high.max())
        varying = not ((low == low.flat[0]).all() and (high == high.flat[0]).all())
        bounds = f"±{_num(hi)}" if lo == -hi else f"{_num(lo)}..{_num(hi)}"
        return f"{space.dtype}[{shape}] {bounds}{VARYING_MARK if varying else ''}"
    return str(space)


def describe(name: str) -> dict:
    # lazy: pulls gymnasium, which this module does not load
    from puffer_tui.envs import ENV_NAMES, env_class

    cls = env_class(name)
    settings = cls.resolve({})
    layout = cls.layout(settings)
    return {
        "name": name,
        "description": cls.description,
        "source": "built-in" if name in ENV_NAMES else f"plugin ({cls.__module__})",
        "observation_space": str(layout.observation_space),
        "action_space": str(layout.action_space),
        "agents_per_env": layout.agents_per_env,
        "settings": settings,
        "layout": layout,
    }


def _describe_or_why(name: str) -> dict:
    """A plugin that fails to load is listed with the reason instead of hiding the others."""
    try:
        return describe(name)
    except Exception as e:
        return {"name": name, "description": f"unavailable: {e}", "source": "plugin",
                "observation_space": "?", "action_space": "?", "agents_per_env": 0,
                "settings": {}, "layout": None}


def run(args) -> int:
    import json

    from rich.console import Console
    from rich.table import Table

    # lazy: pulls gymnasium, which this module does not load
    from puffer_tui.envs import env_names

    rows = [_describe_or_why(name) for name in env_names()]
    if args.json:
        print(json.dumps({"envs": [{k: v for k, v in r.items() if k != "layout"}
                                   for r in rows]}, indent=2))
        return 0
    table = Table(title="puffer-tui environments")
    table.add_column("env", no_wrap=True)
    table.add_column("observation space", no_wrap=True)
    table.add_column("action space", no_wrap=True)
    table.add_column("agents", justify="right")
    table.add_column("description", ratio=1)
    for r in rows:
        layout = r["layout"]
        plugin = "" if r["source"] == "built-in" else " [plugin]"
        table.add_row(
            r["name"], space_text(layout.observation_space) if layout else "?",
            space_text(layout.action_space) if layout else "?",
            str(r["agents_per_env"]), r["description"] + plugin,
        )
    table.caption = (f"{VARYING_MARK} bounds differ per element, the widest shown (--json: "
                     f"all); also gym:ID, MODULE:CALLABLE")
    Console().print(table)
    return 0
