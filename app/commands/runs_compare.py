"""`puffer-tui runs --compare A B ...`: the runs' config differences and final figures.

Tested in: tests/app/test_cli_listing.py (the differences, the figures, --json, refusals),
tests/app/test_compare_data_steps.py"""

from __future__ import annotations

import sys
from pathlib import Path

from puffer_tui.app.compare_data import config_differences, diagnosis_text, final_figures, load_run
from puffer_tui.app.widgets.format import duration
from puffer_tui.engine.shared.run_dir import find_run


def figure_text(key: str, value) -> str:
    if value is None:
        return "-"
    if key in ("steps", "epochs"):
        return f"{int(value):,}"
    if key == "mean SPS":
        return f"{value:,.0f}"
    if key == "uptime":
        return duration(float(value))
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _load(names: list[str], root: Path):
    if len(names) < 2:
        raise ValueError("--compare needs two runs or more (names, paths or latest)")
    paths = [find_run(name, root) for name in names]  # RunDirError names the run
    seen = set()
    for name, path in zip(names, paths):
        if path in seen:
            raise ValueError(f"{name!r} is listed twice: compare different runs")
        seen.add(path)
    return [load_run(path) for path in paths]  # CompareError names a run without metrics


def compare(names: list[str], root: Path, as_json: bool = False) -> int:
    try:
        runs = _load(names, root)
    except ValueError as e:  # RunDirError and CompareError are ValueErrors
        print(f"puffer-tui runs: error: {e}", file=sys.stderr)
        return 2
    differences = config_differences(runs)
    figures = [final_figures(run) for run in runs]
    if as_json:
        import json

        print(json.dumps({"runs": [
            {"name": run.name, "path": str(run.path), "final": fig,
             "set_events": [vars(e) for e in run.events], "diagnoses": run.diagnoses}
            for run, fig in zip(runs, figures)],
            "config_differences": {key: values for key, values in differences}}, indent=2))
        return 0
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    # In a terminal: boxed tables; into a pipe: aligned plain columns (no box drawing).
    style = box.SQUARE if console.is_terminal else None

    def table(title: str, first: str) -> Table:
        t = Table(title=title, title_justify="left", box=style, show_edge=style is not None)
        t.add_column(first, no_wrap=True)
        for run in runs:
            t.add_column(Text(run.name), overflow="fold")
        return t

    diff = table("config differences", "field")
    for key, values in differences:
        diff.add_row(Text(key), *(Text(v) for v in values))
    if differences:
        console.print(diff)
    else:
        console.print("config differences: none (the runs share every setting)",
                      highlight=False, markup=False)
    final = table("final figures", "figure")
    keys = list(dict.fromkeys(key for f in figures for key in f))  # env fields may differ
    for key in keys:
        if key in ("episode_return", "episode_length") and all(f[key] is None for f in figures):
            continue  # an env that never reports it
        final.add_row(key, *(figure_text(key, f.get(key)) for f in figures))
    console.print(final)
    for run in runs:
        for e in run.events:
            where = f"step {e.step:,}" if e.step is not None else "step unknown"
            console.print(Text.assemble((run.name, "bold"), f": {where}: {e.key} "
                                        f"{e.old} -> {e.new}"))
    for run in runs:  # what engine/diagnosis/rules.py's rules said about each run
        diagnoses = [diagnosis_text(span) for span in run.diagnoses] or ["none"]
        for text in diagnoses:
            console.print(Text.assemble((run.name, "bold"), f": diagnosis {text}"))
    return 0
