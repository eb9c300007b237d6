"""The rooms of DESIGN.md, checked by import-linter (contracts in pyproject.toml).

The installed package maps several top-level folders into `puffer_tui`, which import-linter
cannot walk through an editable install, so the test lays the folders out as a real package
tree of symlinks and points import-linter at it.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROOMS = ("app", "screens", "engine", "envs", "benchmarks")
# beside this Python too: a venv run without activating it has its scripts off PATH
LINT_IMPORTS = (shutil.which("lint-imports")
                or shutil.which("lint-imports", path=str(Path(sys.executable).parent)))
needs_import_linter = pytest.mark.skipif(LINT_IMPORTS is None,
                                         reason="import-linter not installed")


def package_tree(tmp_path: Path, copied: tuple[str, ...] = ()) -> Path:
    """`puffer_tui` as symlinks to the repository's folders; rooms in `copied` are copies,
    so a test can add a module to them without touching the repository."""
    package = tmp_path / "puffer_tui"
    package.mkdir()
    shutil.copy(ROOT / "_pkg" / "__init__.py", package / "__init__.py")
    for room in ROOMS:
        if room in copied:
            shutil.copytree(ROOT / room, package / room,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (package / room).symlink_to(ROOT / room, target_is_directory=True)
    return package


def lint_imports(tmp_path: Path) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    result = subprocess.run(
        [LINT_IMPORTS, "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    return result.returncode, result.stdout + result.stderr


@needs_import_linter
def test_import_contracts_hold(tmp_path):
    package_tree(tmp_path)
    returncode, report = lint_imports(tmp_path)
    assert returncode == 0, report
    assert "0 broken" in report, report


# (room, module source, the contract it breaks): one per kind of import the app must not make
VIOLATIONS = [
    ("screens", "import torch\n", "never import torch themselves"),
    ("app", "from puffer_tui.engine.algo.trainer import Trainer\n", "only the engine's shared"),
    ("screens", "from puffer_tui.engine.algo import policy\n", "only the engine's shared"),
    ("app", "from puffer_tui.engine.vec import make\n", "only the engine's shared"),
    ("screens", "from puffer_tui.engine.evaluation.evaluate import load_evaluator\n",
     "only the engine's shared"),
    ("app", "from puffer_tui.engine.diagnosis.rules import RULES\n", "only the engine's shared"),
    ("app", "from puffer_tui.envs.squared import Squared\n", "only the engine's shared"),
    ("screens", "from puffer_tui.envs import make\n", "not the env registry"),
    # layers: a lower room reaching up
    ("engine", "from puffer_tui.engine.runtime.process import Engine\n", "top to bottom"),
    ("envs", "from puffer_tui.engine.shared import config\n", "only the native contract"),
]

@needs_import_linter
@pytest.mark.parametrize("room, source, contract", VIOLATIONS,
                         ids=[v[1].split()[1] for v in VIOLATIONS])
def test_the_app_contracts_catch_a_violation(tmp_path, room, source, contract):
    """The contracts are not a no-op: one module importing a forbidden room breaks them."""
    package = package_tree(tmp_path, copied=(room,))
    folder = package / room / VIOLATION_FOLDER.get(room, "")
    (folder / "import_violation.py").write_text(source)
    returncode, report = lint_imports(tmp_path)
    assert returncode != 0, report
    assert "1 broken" in report, report
    broken = report[report.index("Broken contracts"):]
    module = ".".join(filter(None, ["puffer_tui", room, VIOLATION_FOLDER.get(room), "import_violation"]))
    assert contract in broken and module in broken, report


# where a planted module goes when its room has inner rooms: the algorithm, below the process
VIOLATION_FOLDER = {"engine": "algo"}


@needs_import_linter
@pytest.mark.parametrize("importer, imported", [
    ("app/widgets", "from puffer_tui.screens.launcher.screen import LauncherScreen\n"),
    ("app/services", "from puffer_tui.app.widgets.format import human\n"),
])
def test_the_app_layers_catch_a_lower_layer_reaching_up(tmp_path, importer, imported):
    """The app's layers contract: widgets never import screens, services never widgets."""
    room, _, inner = importer.partition("/")
    package = package_tree(tmp_path, copied=(room,))
    (package / room / inner / "import_violation.py").write_text(imported)
    returncode, report = lint_imports(tmp_path)
    assert returncode != 0 and "1 broken" in report, report
    broken = report[report.index("Broken contracts"):]
    assert "the app's layers" in broken, report


def _allow_list_contract() -> dict:
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return next(c for c in contracts["contracts"] if "only the engine's shared" in c["name"])


def test_every_engine_room_but_shared_and_startup_is_closed_to_the_app():
    """The allow-list's positive answer: the app may import engine.shared and engine.startup;
    every other room of engine/ (found on disk, so a new room is covered) is forbidden."""
    rooms = {p.parent.name for p in (ROOT / "engine").glob("*/__init__.py")}
    forbidden = {m.removeprefix("puffer_tui.engine.")
                 for m in _allow_list_contract()["forbidden_modules"]
                 if m.startswith("puffer_tui.engine.")}
    assert rooms - {"shared", "startup"} == forbidden


def test_the_engine_has_rooms_not_loose_modules():
    """engine/ holds rooms (folders), plus its package file and `python -m` entry point."""
    loose = {p.name for p in (ROOT / "engine").glob("*.py")}
    assert loose == {"__init__.py", "__main__.py"}


def import_cycles(package_root: Path) -> list[list[str]]:
    """Every import cycle among the modules of `puffer_tui` (imports inside functions too),
    as strongly connected components of grimp's import graph."""
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("puffer_tui", cache_dir=None)
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(start):  # Tarjan's algorithm, iterative (the graph is deep)
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return cycles


CYCLES = """
import json, sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
from test_import_rooms import import_cycles
print(json.dumps(import_cycles(None)))
"""


def _cycles_in(tmp_path: Path) -> list:
    result = subprocess.run([sys.executable, "-c", CYCLES, str(tmp_path), str(ROOT / "tests")],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    import json

    return json.loads(result.stdout)


@needs_import_linter
def test_no_import_cycles(tmp_path):
    """Zero cycles, counting the imports made inside functions (a cycle hidden in a function
    is still a cycle a reader has to untangle)."""
    package_tree(tmp_path)
    assert _cycles_in(tmp_path) == []


@needs_import_linter
def test_a_planted_cycle_is_found(tmp_path):
    package = package_tree(tmp_path, copied=("app",))
    (package / "app" / "cycle_a.py").write_text("def f():\n    from puffer_tui.app import cycle_b\n")
    (package / "app" / "cycle_b.py").write_text("from puffer_tui.app import cycle_a\n")
    assert _cycles_in(tmp_path) == [["puffer_tui.app.cycle_a", "puffer_tui.app.cycle_b"]]


# The static contracts cannot see imports made by name at run time (the env registry's
# importlib); this checks what importing the whole app and listing envs really loads.
RUNTIME_CHECK = """
import importlib, pkgutil, sys
import puffer_tui.app, puffer_tui.screens
for package in (puffer_tui.app, puffer_tui.screens):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(module.name)
engine_room = ("torch", "puffer_tui.engine.algo.trainer", "puffer_tui.engine.algo.policy",
               "puffer_tui.engine.vec", "puffer_tui.engine.evaluation.evaluate")
native = [m for m in sys.modules if m.endswith(".binding") and m.startswith("puffer_tui.envs.")]
print("after import:", sorted(m for m in sys.modules if m.startswith(engine_room)) + native)
from puffer_tui.app.services.env_catalogue import describe_envs
assert len(describe_envs()) > 1
print("after the catalogue:", sorted(m for m in sys.modules if m.startswith(engine_room)))
"""


def test_the_app_loads_no_engine_room_at_run_time():
    """Importing every app and screen module loads no torch, trainer, policy, vectorizer,
    evaluator or native env; the launcher's env list loads envs but still no torch."""
    result = subprocess.run([sys.executable, "-c", RUNTIME_CHECK], capture_output=True,
                            text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "after import: []\n" in result.stdout, result.stdout
    assert "after the catalogue: []\n" in result.stdout, result.stdout
