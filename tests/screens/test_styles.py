"""Where the styles live: the screens' layouts in screens/screens.tcss and the panels' frame in
app/panels.tcss, both loaded by the App (CSS_PATH); reusable widgets' own defaults in their
DEFAULT_CSS; every .tcss file shipped in the package."""

from __future__ import annotations

import fnmatch
import importlib
import inspect
import pkgutil
import re
import tomllib
from pathlib import Path

from textual.screen import Screen
from tree_paths import REPO_ROOT

import puffer_tui.screens
from puffer_tui.app.app import PufferApp

ROOT = REPO_ROOT


def screen_classes() -> list[type]:
    """Every screen class the screens package defines."""
    classes: list[type] = []
    for info in pkgutil.walk_packages(puffer_tui.screens.__path__, "puffer_tui.screens."):
        module = importlib.import_module(info.name)
        classes += [c for _, c in inspect.getmembers(module, inspect.isclass)
                    if issubclass(c, Screen) and c.__module__ == module.__name__]
    return classes


def app_styles() -> list[Path]:
    return [Path(p) for p in PufferApp.CSS_PATH]


def test_the_app_and_screens_have_no_inline_styles():
    for cls in [PufferApp, *screen_classes()]:
        for inline in ("DEFAULT_CSS", "CSS", "CSS_PATH"):
            assert cls is PufferApp and inline == "CSS_PATH" or inline not in cls.__dict__, (
                f"{cls.__name__}.{inline}: its layout goes in screens/screens.tcss")
    for path in app_styles():
        # absolute, so the tests' subclasses of the app (in tests/) find the same files
        assert path.is_absolute() and path.is_file(), path


def test_every_screen_rule_starts_with_its_screen():
    """App-level styles apply on every screen: a rule that named no screen (`#left`) would
    reach all of them."""
    names = {cls.__name__ for cls in screen_classes()} | {"Screen"}
    text = re.sub(r"/\*.*?\*/", "", (ROOT / "screens" / "screens.tcss").read_text(), flags=re.S)
    heads = re.findall(r"([^{}]+)\{", text)
    assert len(heads) > 20
    for head in heads:
        for selector in head.split(","):
            first = re.match(r"\s*([A-Za-z_]\w*)", selector)
            assert first and first.group(1) in names, f"{selector.strip()!r} names no screen"


def test_every_tcss_file_is_loaded_says_what_it_styles_and_ships_in_the_package():
    # by folder and name: the app may be imported from an installed copy, not this tree
    loaded = {(path.parent.name, path.name) for path in app_styles()}
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["*"]
    files = sorted(p for room in ("app", "screens") for p in (ROOT / room).rglob("*.tcss"))
    assert [p.name for p in files] == ["panels.tcss", "screens.tcss"]
    for path in files:
        assert (path.parent.name, path.name) in loaded, f"{path.name}: PufferApp does not load it"
        assert path.read_text().startswith("/*"), f"{path.name}: start with what it styles"
        assert any(fnmatch.fnmatch(path.name, p) for p in patterns), (
            f"{path.name} is not in pyproject's package-data: an installed app would lack it")
