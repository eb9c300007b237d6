"""Tests are findable from the code in engine/vec, engine/native and engine/runtime: every
module with code has a test file named after it (tests/engine/<room>/.../test_<module>*.py),
or a "Tested in:" line in its docstring naming test files that exist."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
ROOMS = ("engine/vec", "engine/native", "engine/runtime")


def modules():
    for room in ROOMS:
        for path in sorted((ROOT / room).rglob("*.py")):
            if path.name != "__init__.py":
                yield path.relative_to(ROOT)


def own_tests(module: Path) -> list[Path]:
    folder = ROOT / "tests" / module.parent
    return sorted(folder.glob(f"test_{module.stem}.py")) + \
        sorted(folder.glob(f"test_{module.stem}_*.py"))


def named_tests(module: Path) -> list[str]:
    docstring = ast.get_docstring(ast.parse((ROOT / module).read_text())) or ""
    match = re.search(r"Tested in: (.*)", docstring, re.S)
    return re.findall(r"tests/[\w/]+\.py", match.group(1)) if match else []


@pytest.mark.parametrize("module", list(modules()), ids=str)
def test_each_module_has_its_test_file_or_names_where_it_is_tested(module):
    named = named_tests(module)
    assert own_tests(module) or named, (
        f"{module}: add tests/{module.parent}/test_{module.stem}.py or a 'Tested in:' line")
    missing = [name for name in named if not (ROOT / name).is_file()]
    assert not missing, f"{module} names test files that do not exist: {missing}"
