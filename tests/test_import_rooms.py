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
LINT_IMPORTS = shutil.which("lint-imports")
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
    ("app", "from puffer_tui.engine.trainer import Trainer\n", "only render"),
    ("screens", "from puffer_tui.engine import policy\n", "only render"),
    ("app", "from puffer_tui.engine.vec import make\n", "only render"),
    ("screens", "from puffer_tui.engine.evaluate import load_evaluator\n", "only render"),
    ("app", "from puffer_tui.envs.squared import Squared\n", "only render"),
    ("screens", "from puffer_tui.envs import make\n", "not the env registry"),
]


@needs_import_linter
@pytest.mark.parametrize("room, source, contract", VIOLATIONS,
                         ids=[v[1].split()[1] for v in VIOLATIONS])
def test_the_app_contracts_catch_a_violation(tmp_path, room, source, contract):
    """The contracts are not a no-op: one module importing a forbidden room breaks them."""
    package = package_tree(tmp_path, copied=(room,))
    (package / room / "import_violation.py").write_text(source)
    returncode, report = lint_imports(tmp_path)
    assert returncode != 0, report
    assert "1 broken" in report, report
    broken = report[report.index("Broken contracts"):]
    assert contract in broken and f"puffer_tui.{room}.import_violation" in broken, report


# The static contracts cannot see imports made by name at run time (the env registry's
# importlib); this checks what importing the whole app and listing envs really loads.
RUNTIME_CHECK = """
import importlib, pkgutil, sys
import puffer_tui.app, puffer_tui.screens
for package in (puffer_tui.app, puffer_tui.screens):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(module.name)
engine_room = ("torch", "puffer_tui.engine.trainer", "puffer_tui.engine.policy",
               "puffer_tui.engine.vec", "puffer_tui.engine.evaluate")
native = [m for m in sys.modules if m.endswith(".binding") and m.startswith("puffer_tui.envs.")]
print("after import:", sorted(m for m in sys.modules if m.startswith(engine_room)) + native)
from puffer_tui.engine.env_catalogue import describe_envs
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
