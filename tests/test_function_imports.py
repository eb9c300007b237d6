"""Imports of puffer_tui made inside a function each say why.

An import inside a function hides a dependency from a reader and from the import checks'
first glance, so it is kept only for a reason: a heavy dependency the module does not load
(torch, textual, gymnasium: kept off the CLI's fast path), an import cycle, a name a test
patches late. The reason is a `#` comment on the import's line or right above it; one comment
above a block of consecutive imports covers the block.
"""

import ast
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROOMS = ("app", "screens", "engine", "envs", "benchmarks")
# Other work edits this file's imports at the same time; drop it here once that has landed.
NOT_YET: set[str] = set()


def _internal(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").startswith("puffer_tui")
    return any(alias.name.startswith("puffer_tui") for alias in node.names)


def unexplained_imports(source: str) -> list[int]:
    """Lines of internal imports inside a function with no reason comment."""
    lines = source.splitlines()
    found = []

    def has_reason(node) -> bool:
        line = node.lineno
        if "#" in lines[line - 1]:  # a comment on its own line covers that import alone
            return True
        while True:
            above = lines[line - 2].strip() if line >= 2 else ""
            if above.startswith("#"):
                return True
            # the line above ends an import of the same block: its reason covers this one
            block = imports_ending.get(line - 1)
            if block is None:
                return False
            line = block.lineno

    functions = [n for n in ast.walk(ast.parse(source))
                 if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    imports_ending = {}
    inner = set()
    for function in functions:
        for node in ast.walk(function):
            if isinstance(node, ast.Import | ast.ImportFrom):
                imports_ending[node.end_lineno] = node
                if _internal(node):
                    inner.add(node)
    for node in sorted(inner, key=lambda n: n.lineno):
        if not has_reason(node):
            found.append(node.lineno)
    return found


def test_every_import_inside_a_function_says_why():
    missing = []
    for room in ROOMS:
        for path in sorted((ROOT / room).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name in NOT_YET or "__pycache__" in path.parts:
                continue
            missing += [f"{name}:{line}" for line in unexplained_imports(path.read_text())]
    assert not missing, (
        f"{len(missing)} imports of puffer_tui inside functions without a reason: hoist each "
        "to module level, or say why above it (e.g. '# torch: kept off the CLI's fast path', "
        "'# cycle: X imports this module'):\n" + "\n".join(missing))


def test_the_check_tells_a_reason_from_none():
    source = textwrap.dedent('''
        import os


        def light():
            from puffer_tui.engine.shared import run_dir


        def heavy():
            # torch: kept off the CLI's fast path
            from puffer_tui.engine.algo import trainer
            from puffer_tui.engine.algo import policy

            import json
            from . import sibling


        def inline():
            from puffer_tui.envs import make  # cycle: envs imports this module
            import puffer_tui.app


        def outside():
            import json
    ''')
    assert unexplained_imports(source) == [6, 15, 20]
