"""`puffer-tui envs`: the registered environments and their spaces."""

from __future__ import annotations


def add_parser(sub, name, help_text):
    p = sub.add_parser(name, help=help_text, description=help_text)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(run=run)


def describe(name: str) -> dict:
    from puffer_tui.envs import env_class

    cls = env_class(name)
    settings = cls.resolve({})
    layout = cls.layout(settings)
    return {
        "name": name,
        "description": cls.description,
        "observation_space": str(layout.observation_space),
        "action_space": str(layout.action_space),
        "agents_per_env": layout.agents_per_env,
        "settings": settings,
    }


def run(args) -> int:
    import json

    from rich.console import Console
    from rich.table import Table

    from puffer_tui.envs import ENV_NAMES

    rows = [describe(name) for name in ENV_NAMES]
    if args.json:
        print(json.dumps({"envs": rows}, indent=2))
        return 0
    table = Table(title="puffer-tui environments")
    for col in ("env", "observation space", "action space", "agents", "description"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            r["name"], r["observation_space"], r["action_space"], str(r["agents_per_env"]),
            r["description"],
        )
    Console().print(table)
    return 0
