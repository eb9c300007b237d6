"""`puffer-tui runs`: the runs under the runs root, newest last."""

from __future__ import annotations

import time


def add_parser(sub, name, help_text):
    p = sub.add_parser(name, help=help_text, description=help_text)
    p.add_argument("--runs-dir", metavar="D",
                   help="where runs live (default $PUFFER_TUI_RUNS or ./runs)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(run=run)


def _age(path) -> str:
    seconds = max(0, time.time() - path.stat().st_mtime)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit} ago"
    return f"{seconds:.0f}s ago"


def _describe_checkpoint(path) -> str:
    from puffer_tui.engine.checkpoint import parse_name

    try:
        step, epoch = parse_name(path.name)
        return f"step {step:,} ({_age(path)})"
    except (ValueError, OSError):  # a foreign name, or deleted meanwhile
        return path.name


def run(args) -> int:
    from puffer_tui.engine.run_dir import list_runs, run_info, runs_root

    root = runs_root(args.runs_dir)
    infos = [run_info(path) for path in list_runs(root)]
    if args.json:
        import json

        print(json.dumps({"runs_dir": str(root), "runs": [
            {"name": i.name, "path": str(i.path), "env": i.env, "status": i.state,
             "global_step": i.global_step, "total_timesteps": i.total_timesteps,
             "best_score": i.best_score,
             "last_checkpoint": str(i.last_checkpoint) if i.last_checkpoint else None,
             "detail": i.detail}
            for i in infos]}, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not infos:
        console.print(f"no runs in {root} (start one with `puffer-tui train ENV`)")
        return 0
    styles = {"running": "green", "paused": "yellow", "finished": "cyan", "error": "red"}
    table = Table(title=f"runs in {root}")
    table.add_column("run", no_wrap=True)
    for col in ("env", "status", "steps", "best score", "last checkpoint"):
        table.add_column(col, justify="right" if col in ("steps", "best score") else "left")
    for i in infos:
        steps = "-" if i.global_step is None else f"{i.global_step:,}"
        if i.total_timesteps:
            steps += f" / {i.total_timesteps:,}"
        best = "-" if i.best_score is None else f"{i.best_score:.3f}"
        checkpoint = _describe_checkpoint(i.last_checkpoint) if i.last_checkpoint else "-"
        status = f"[{styles.get(i.state, 'white')}]{i.state}[/]"
        table.add_row(i.name, i.env, status, steps, best, checkpoint)
    console.print(table)
    for i in infos:
        if i.detail:
            console.print(f"[red]{i.name}[/]: {i.detail}")
    return 0
