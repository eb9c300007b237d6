"""Prints the requirements of pyproject.toml's "all" extra, one a line, the extras it names
(puffer-tui[a,b]) expanded: what .ci/run installs, without rebuilding the package, before it
runs again the tests that skipped."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path


def requirements(extras: dict, name: str = "all"):
    for requirement in extras[name]:
        own = re.fullmatch(r"puffer-tui\[(.*)\]", requirement)
        if own:
            for part in own.group(1).split(","):
                yield from requirements(extras, part.strip())
        else:
            yield requirement


if __name__ == "__main__":
    pyproject = Path(sys.argv[1] if len(sys.argv) > 1 else "pyproject.toml")
    with open(pyproject, "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    print("\n".join(dict.fromkeys(requirements(extras))))
