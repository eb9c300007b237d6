"""Tests are findable from the code: every product module with code has a test file named
after it, or a "Tested in:" line in its docstring naming the test files that test it (files
that must exist).

A module's own test files are test_<module>.py and test_<module>_<behaviour>.py in the folder
of tests/ that mirrors the module's folder, or the nearest one above it that tests/ has:
tests/engine/vec/mp/ for engine/vec/mp/, tests/app/ for app/widgets/, tests/ itself for tools/
and _pkg/ (tests/test_module_names.py keeps module names unique, so each name leads to one
module). A module that defines no function and no class (re-exports, constants, a __main__
that calls another module's main) has nothing of its own to test and needs neither."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROOMS = ("app", "screens", "engine/algo", "engine/diagnosis", "engine/evaluation", "engine/native",
         "engine/runtime", "engine/shared", "engine/startup", "engine/sweep", "engine/vec",
         "envs", "benchmarks", "_pkg", "tools")
# rooms not held to the rule yet (none now)
NOT_YET: tuple[str, ...] = ()


def modules():
    for room in ROOMS:
        for path in sorted((ROOT / room).rglob("*.py")):
            if path.name != "__init__.py":
                yield path.relative_to(ROOT)


def folder_of_tests(module: Path, tests: Path) -> Path:
    folder = tests / module.parent
    while not folder.is_dir():
        folder = folder.parent
    return folder


def own_tests(module: Path, root: Path = ROOT) -> list[Path]:
    folder = folder_of_tests(module, root / "tests")
    return sorted(folder.glob(f"test_{module.stem}.py")) + \
        sorted(folder.glob(f"test_{module.stem}_*.py"))


def named_tests(source: str) -> list[str]:
    docstring = ast.get_docstring(ast.parse(source)) or ""
    match = re.search(r"Tested in: (.*)", docstring, re.S)
    return re.findall(r"tests/[\w/]+\.py", match.group(1)) if match else []


def has_code(source: str) -> bool:
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
               for node in ast.walk(ast.parse(source)))


@pytest.mark.parametrize("module", list(modules()), ids=str)
def test_each_module_has_its_test_file_or_names_where_it_is_tested(module):
    source = (ROOT / module).read_text()
    named = named_tests(source)
    folder = folder_of_tests(module, ROOT / "tests").relative_to(ROOT)
    assert own_tests(module) or named or not has_code(source), (
        f"{module}: add {folder}/test_{module.stem}.py or a 'Tested in:' line to its docstring")
    missing = [name for name in named if not (ROOT / name).is_file()]
    assert not missing, f"{module} names test files that do not exist: {missing}"


def test_every_room_of_the_engine_is_checked():
    rooms = {path.parent.relative_to(ROOT).as_posix()
             for path in (ROOT / "engine").glob("*/__init__.py")}
    assert rooms - set(ROOMS) - set(NOT_YET) == set()


def test_the_rule_finds_a_test_in_the_nearest_folder_and_skips_modules_without_code(tmp_path):
    (tmp_path / "tests" / "app").mkdir(parents=True)
    (tmp_path / "tests" / "app" / "test_panel_sizes.py").write_text("")
    (tmp_path / "tests" / "test_wheel_check.py").write_text("")
    assert own_tests(Path("app/widgets/panel.py"), tmp_path) == [
        tmp_path / "tests" / "app" / "test_panel_sizes.py"]
    assert own_tests(Path("tools/wheel_check.py"), tmp_path) == [
        tmp_path / "tests" / "test_wheel_check.py"]
    assert own_tests(Path("app/widgets/panels.py"), tmp_path) == []
    assert named_tests('"""Sums.\n\nTested in: tests/a/test_b.py (odd sizes),\n'
                       'tests/test_c.py"""') == ["tests/a/test_b.py", "tests/test_c.py"]
    assert not has_code('"""Constants."""\nfrom x import y\nLIMIT = 3\n')
    assert has_code("def f():\n    return 1\n")
