"""The built-in C envs, found from their folders: no table to keep by hand.

An env is a folder envs/NAME/ with a binding.pyx (setup.py compiles it into
puffer_tui.envs.NAME.binding) and an __init__.py defining the env's class, the one whose
`name = "NAME"`. The folders are read as text (ast), so listing envs imports no env module
and one half-written env cannot stop the others from being listed. Env lists show them by
the class's `order = N` (a literal; lower first, then by name; default 100).

Tested in: tests/envs/test_env_new_folder.py
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

ENVS_DIR = Path(__file__).resolve().parent
DEFAULT_ORDER = 100


@dataclass(frozen=True)
class EnvFolder:
    name: str
    path: Path
    class_name: str | None  # None: __init__.py defines no class with name = "NAME"
    order: int = DEFAULT_ORDER


def _class_assignments(node: ast.ClassDef) -> dict:
    """Literal class attributes (`name = "squared"`, `order = 1`) of one class."""
    values = {}
    for stmt in node.body:
        target = value = None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign):
            target, value = stmt.target, stmt.value
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant):
            values[target.id] = value.value
    return values


def read_folder(path: Path) -> EnvFolder:
    """The env folder `path`: the class in its __init__.py whose `name` is the folder's."""
    name = path.name
    try:
        tree = ast.parse((path / "__init__.py").read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return EnvFolder(name, path, None)
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            values = _class_assignments(node)
            if values.get("name") == name:
                order = values.get("order", DEFAULT_ORDER)
                return EnvFolder(name, path, node.name,
                                 order if isinstance(order, int) else DEFAULT_ORDER)
    return EnvFolder(name, path, None)


def find_env_folders(root: Path = ENVS_DIR) -> tuple[EnvFolder, ...]:
    """Every folder under `root` with a binding.pyx and an __init__.py, in list order."""
    folders = [read_folder(p.parent) for p in root.glob("*/binding.pyx")
               if (p.parent / "__init__.py").is_file()]
    return tuple(sorted(folders, key=lambda f: (f.order, f.name)))


@functools.cache
def builtin_env_folders() -> dict[str, EnvFolder]:
    """name -> folder of the built-in envs, in list order."""
    return {folder.name: folder for folder in find_env_folders()}
