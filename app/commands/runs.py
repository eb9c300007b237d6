"""`puffer-tui runs`: the runs under the runs root, newest last."""

from __future__ import annotations

import time

from puffer_tui.app.widgets.format import duration, human
from puffer_tui.engine.shared.protocol import RunState
from puffer_tui.engine.shared.run_dir import EVENTS_FILE, list_runs, run_info, runs_root


def add_parser(sub, name, help_text):
    p = sub.add_parser(name, help=help_text, description=help_text)
    p.add_argument("--runs-dir", metavar="D",
                   help="where runs live (default $PUFFER_TUI_RUNS or ./runs)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--compare", nargs="+", metavar="RUN",
                   help="compare runs (names, paths or latest): their config differences "
                        "and final figures")
    p.set_defaults(run=run)


def _age(path) -> str:
    return duration(time.time() - path.stat().st_mtime, coarse=True) + " ago"


def _saved(path) -> tuple[str, ...]:
    """The last checkpoint as (its step, its age), or its name alone if it is not a step-...pt
    (or went away meanwhile); ("-",) without one."""
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.engine.shared.checkpoint import parse_name

    if path is None:
        return ("-",)
    try:
        step, epoch = parse_name(path.name)
        return human(step), _age(path)
    except (ValueError, OSError):  # a foreign name, or deleted meanwhile
        return (path.name,)


# The run's name is never cut: it is what `attach`, `eval` and `train --resume` take. When the
# table is too wide, these go first, in order: env (the name begins with it), the checkpoint's
# step (the age stays), then whole columns.
LAYOUTS = (
    ("env", "status", "steps", "best", "checkpoint"),
    ("status", "steps", "best", "checkpoint"),
    ("status", "steps", "best", "saved"),
    ("status", "steps", "best"),
    ("status", "steps"),
    ("status",),
)


def fitted_table(rows: list[dict], console):
    """The runs table with as many columns as fit the console's width (see LAYOUTS), and what
    was left out; None for the table when not even the names and states fit in one."""
    from rich.measure import Measurement
    from rich.table import Table

    name_width = max((len(row["run"].plain.split("\n")[0]) for row in rows), default=3)
    width = console.width
    unbounded = console.options.update_width(10 * width)
    for layout in LAYOUTS:
        table = Table()
        # exactly as wide as the longest name: a name is never folded (a branch's "from ..."
        # line below it wraps instead)
        table.add_column("run", width=max(name_width, 3), overflow="fold")
        for col in layout:
            table.add_column("checkpoint" if col == "saved" else col, no_wrap=True,
                             justify="right" if col in ("steps", "best") else "left")
        for row in rows:
            table.add_row(row["run"], *(row[col] for col in layout))
        # measured unbounded: a table measured at the width is clamped to it
        if Measurement.get(console, unbounded, table).maximum <= width:
            break
    else:
        return None, ["env", "steps", "best", "checkpoint"]
    left_out = [col for col in LAYOUTS[0] if col not in layout
                and not (col == "checkpoint" and "saved" in layout)]
    if "saved" in layout:
        left_out.append("checkpoint step")
    return table, left_out


def run_cell(info, depth: int):
    """The run's name, under its parent's (indented), and where a branch came from."""
    from rich.text import Text

    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.engine.shared.lineage import describe_parent

    text = Text("  " * (depth - 1) + "└─" if depth else "", style="dim")
    text.append(info.name, style="")
    if info.parent:  # the parent's name when it is not the row above
        text.append(f"\nfrom {describe_parent(info.parent, with_run=not depth)}", style="dim")
    return text


def run(args) -> int:
    root = runs_root(args.runs_dir)
    if args.compare:
        # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
        from puffer_tui.app.commands.runs_compare import compare

        return compare(args.compare, root, as_json=args.json)
    infos = [run_info(path) for path in list_runs(root)]
    if args.json:
        import json

        print(json.dumps({"runs_dir": str(root), "runs": [
            {"name": i.name, "path": str(i.path), "env": i.env, "status": i.state,
             "global_step": i.global_step, "total_timesteps": i.total_timesteps,
             "best_score": i.best_score,
             "last_checkpoint": str(i.last_checkpoint) if i.last_checkpoint else None,
             "parent": i.parent or None, "detail": i.detail}
            for i in infos]}, indent=2))
        return 0
    from rich.console import Console

    console = Console()
    if not infos:
        console.print(f"no runs in {root.resolve()} yet; start one with `puffer-tui train ENV`",
                      highlight=False, markup=False)
        return 0
    from rich.text import Text

    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.app.widgets.runs_list import runs_as_tree

    styles = {RunState.RUNNING: "green", RunState.PAUSED: "yellow", RunState.FINISHED: "cyan",
              RunState.ERROR: "red"}
    console.print(f"runs directory: {root.resolve()}", highlight=False, markup=False,
                  soft_wrap=True)
    rows = []
    for i, depth in runs_as_tree(infos):  # a branched run under the run it came from
        steps = "-" if i.global_step is None else human(i.global_step)
        if i.total_timesteps:
            steps += f"/{human(i.total_timesteps)}"
        saved = _saved(i.last_checkpoint)
        rows.append({"run": run_cell(i, depth), "env": Text(i.env),
                     "status": Text(i.state, style=styles.get(i.state, "white")),
                     "steps": steps, "best": "-" if i.best_score is None else f"{i.best_score:.3f}",
                     "checkpoint": ", ".join(saved), "saved": saved[-1]})
    table, left_out = fitted_table(rows, console)
    if table is not None:
        console.print(table)
    else:  # narrower than a name and its state: one run a line, the terminal wraps it
        for row in rows:
            console.print(Text.assemble(row["run"], "  ", row["status"]), soft_wrap=True)
    if left_out:
        console.print(f"left out at {console.width} columns: {', '.join(left_out)} "
                      "(all in `puffer-tui runs --json`)", style="dim", highlight=False,
                      markup=False)
    for i in infos:
        if i.detail:  # engine error text: printed as is, never read as markup
            # its first line: a worker's traceback after it would bury the table
            first, _, rest = i.detail.strip().partition("\n")
            more = f" (the rest in {i.path / EVENTS_FILE})" if rest.strip() else ""
            console.print(Text.assemble((i.name, "red"), ": ", first, (more, "dim")))
    return 0
