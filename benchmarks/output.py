"""How a bench prints its result: `{name: result, "machine": ...}` as JSON with --json, else a
rich table whose first column is the row's label (left) and the others figures (right), then
the machine measured on (benchmarks/machine.py).

Tested in: tests/benchmarks/test_machine.py, tests/benchmarks/test_env_speed.py"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from puffer_tui.benchmarks.machine import machine, machine_line


def print_result(name: str, result, as_json: bool, title: str, columns: Sequence[str],
                 rows: Iterable[Sequence[str]]) -> int:
    """Print the result one way or the other; returns the command's exit status (0)."""
    info = machine()
    if as_json:
        print(json.dumps({name: result, "machine": info}, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for i, column in enumerate(columns):
        table.add_column(column, justify="right" if i else "left")
    for row in rows:
        table.add_row(*row)
    Console().print(table)
    print(f"measured on {machine_line(info)}")  # a line of its own: a caption would wrap
    return 0
