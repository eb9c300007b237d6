"""Where the styles live: each screen's layout in a .tcss file next to it (CSS_PATH), reusable
widgets' own defaults in their DEFAULT_CSS, and every .tcss file shipped in the package."""

from __future__ import annotations

import fnmatch
import importlib
import inspect
import pkgutil
import tomllib
from pathlib import Path

from textual.screen import Screen

import puffer_tui.screens
from puffer_tui.app.app import PufferApp

ROOT = Path(__file__).resolve().parent.parent


def styled_classes() -> list[type]:
    """The app and every screen class the screens package defines."""
    classes: list[type] = [PufferApp]
    for info in pkgutil.iter_modules(puffer_tui.screens.__path__, "puffer_tui.screens."):
        module = importlib.import_module(info.name)
        classes += [c for _, c in inspect.getmembers(module, inspect.isclass)
                    if issubclass(c, Screen) and c.__module__ == module.__name__]
    return classes


def css_paths(cls: type) -> list[Path]:
    paths = cls.__dict__.get("CSS_PATH") or []
    return [Path(p) for p in (paths if isinstance(paths, list) else [paths])]


def test_screens_keep_their_layout_in_a_tcss_file_next_to_them():
    for cls in styled_classes():
        assert "DEFAULT_CSS" not in cls.__dict__, (
            f"{cls.__name__}: put its layout in a .tcss file (CSS_PATH), not DEFAULT_CSS")
        for path in css_paths(cls):
            # absolute, so a subclass defined elsewhere (the tests' apps) finds the same file
            assert path.is_absolute() and path.is_file(), (cls.__name__, path)
            assert path.parent == Path(inspect.getfile(cls)).parent, (cls.__name__, path)


def test_every_tcss_file_is_used_says_what_it_styles_and_ships_in_the_package():
    # by folder and name: the classes may be imported from an installed copy, not this tree
    used = {(path.parent.name, path.name) for cls in styled_classes() for path in css_paths(cls)}
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["*"]
    files = sorted(p for room in ("app", "screens") for p in (ROOT / room).rglob("*.tcss"))
    assert files
    for path in files:
        assert (path.parent.name, path.name) in used, f"{path.name} is loaded by no App or Screen (CSS_PATH)"
        assert path.read_text().startswith("/*"), f"{path.name}: start with what it styles"
        assert any(fnmatch.fnmatch(path.name, p) for p in patterns), (
            f"{path.name} is not in pyproject's package-data: an installed app would lack it")
