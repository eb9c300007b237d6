"""No two product modules share a file name, whatever their rooms: a name seen in a traceback,
an import or a `grep` leads to one file, and its test file (tests/<room>/test_<name>.py) to one
module. Each package's own __init__.py and __main__.py are not counted; neither are the C
extensions (envs/<env>/binding.pyx is every env's binding, by design)."""

from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROOMS = ("app", "screens", "engine", "envs", "benchmarks", "_pkg", "tools")
PACKAGE_FILES = {"__init__.py", "__main__.py"}

# Pairs allowed to share a name while one of them is being renamed elsewhere (none now); the
# test below asks for an entry's removal once its pair no longer shares the name.
STILL_SHARED: dict[str, set[str]] = {}


def modules_by_name(root: Path) -> dict[str, set[str]]:
    by_name = defaultdict(set)
    for room in ROOMS:
        for path in (root / room).rglob("*.py"):
            if path.name not in PACKAGE_FILES:
                by_name[path.name].add(path.relative_to(root).as_posix())
    return by_name


def shared_names(root: Path, allowed: dict[str, set[str]]) -> dict[str, list[str]]:
    return {name: sorted(paths) for name, paths in modules_by_name(root).items()
            if len(paths) > 1 and paths != allowed.get(name)}


def test_no_two_product_modules_share_a_file_name():
    shared = shared_names(ROOT, STILL_SHARED)
    assert not shared, (f"modules with the same file name: {shared}; rename one after what it "
                        f"does (and its tests after it)")


def test_the_pairs_allowed_to_share_a_name_still_do():
    by_name = modules_by_name(ROOT)
    gone = [name for name, paths in STILL_SHARED.items() if by_name.get(name) != paths]
    assert not gone, f"remove {gone} from STILL_SHARED: those files no longer share a name"


def test_a_name_in_two_rooms_is_caught_and_package_files_are_not(tmp_path):
    for path in ("app/commands/report.py", "engine/evaluation/report.py", "app/__init__.py",
                 "engine/__init__.py", "engine/__main__.py", "envs/sweep/__main__.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    assert shared_names(tmp_path, {}) == {
        "report.py": ["app/commands/report.py", "engine/evaluation/report.py"]}
    allowed = {"report.py": {"app/commands/report.py", "engine/evaluation/report.py"}}
    assert shared_names(tmp_path, allowed) == {}
