"""Run lineage: which run a branched run started from, and runs listed as a tree.

A branched run (`puffer-tui train --from RUN[/CHECKPOINT]`, engine/startup/branch.py) records in its
config.toml `parent = "PARENT_RUN_DIR/checkpoints/NAME.pt"`. Listings show each child under
its parent, indented:

    infos = [run_info(path) for path in list_runs(root)]      # RunInfo.parent
    for path, depth in tree_order([i.path for i in infos], {i.path: i.parent for i in infos}):
        ...
"""

from __future__ import annotations

from pathlib import Path

from puffer_tui.engine.shared.checkpoint import parse_name
from puffer_tui.engine.shared.run_dir import CHECKPOINT_DIR


def parent_run(parent: str) -> Path | None:
    """The run directory of a `parent` checkpoint path (None for "")."""
    if not parent:
        return None
    path = Path(parent)
    return path.parent.parent if path.parent.name == CHECKPOINT_DIR else path.parent


def describe_parent(parent: str, with_run: bool = True) -> str:
    """Where a run branched from, short, for listings: "RUN_NAME @ 2,048" (the step of a
    step-...pt checkpoint) or "RUN_NAME/best.pt"; without the run's name (listed right above
    it): "step 2,048" or "best.pt"."""
    run = parent_run(parent)
    if run is None:
        return ""
    name = Path(parent).name
    try:
        step = parse_name(name)[0]
    except ValueError:
        return f"{run.name}/{name}" if with_run else name
    return f"{run.name} @ {step:,}" if with_run else f"step {step:,}"


def branch_step(parent: str) -> int | None:
    """The step a branch started at, from its parent's checkpoint name (None for a run that
    did not branch, or one that started from best.pt)."""
    try:
        return parse_name(Path(parent).name)[0] if parent else None
    except ValueError:
        return None


def tree_order(runs: list[Path], parents: dict[Path, str]) -> list[tuple[Path, int]]:
    """`runs` as (run, depth): each run right after its parent (and the parent's earlier
    children), one level deeper; runs whose parent is not listed are roots. Siblings and
    roots keep the order they had in `runs`."""
    key = {_same(run): run for run in runs}
    children: dict[Path, list[Path]] = {}
    roots = []
    for run in runs:
        parent = parent_run(parents.get(run, ""))
        parent = key.get(_same(parent)) if parent is not None else None
        if parent is None or parent == run:
            roots.append(run)
        else:
            children.setdefault(parent, []).append(run)
    ordered: list[tuple[Path, int]] = []
    seen: set[Path] = set()

    def visit(run: Path, depth: int) -> None:
        if run in seen:
            return
        seen.add(run)
        ordered.append((run, depth))
        for child in children.get(run, []):
            visit(child, depth + 1)

    for run in roots:
        visit(run, 0)
    for run in runs:  # a cycle (hand-edited configs) has no root: list what is left flat
        visit(run, 0)
    return ordered


def _same(path: Path) -> Path:
    """One key for a run however it was named (relative, absolute, through a link)."""
    try:
        return Path(path).resolve()
    except OSError:
        return Path(path)
