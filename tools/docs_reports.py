"""The benchmark tables of the docs, printed by the benchmarks' own `--report` from the JSON
committed beside them, never typed.

A page holds each table between two markers; the first names the command that prints it:

    <!-- report: cd docs/learn_runs/2026-11-29 && puffer-tui bench learn --report cheap.json -->
    ...what the command printed...
    <!-- /report -->

`python tools/docs_reports.py` runs every page's commands from the repository's root and writes
their output between the markers; `--check` changes nothing and exits 1 when a page differs
from what its commands print (tests/docs/test_benchmark_pages.py runs that check). A report's
own Markdown title (`# ...`) becomes a level-4 heading, so that it sits under the page's own.

Tested in: tests/docs/test_benchmark_pages.py
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
BLOCK = re.compile(r"(<!-- report: (?P<command>.+?) -->\n)(?P<body>.*?)(<!-- /report -->)", re.S)


def run_report(command: str) -> str:
    """What `command` prints, as the page shows it. `puffer-tui` and `python` are those of the
    interpreter running this (its virtualenv's), whatever PATH holds."""
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
           "COLUMNS": "200", "NO_COLOR": "1"}
    result = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f"{command!r} exited {result.returncode}: {result.stderr[-2000:]}")
    lines = [("#### " + line[2:]) if line.startswith("# ") else line.rstrip()
             for line in result.stdout.strip("\n").splitlines()]
    return "\n".join(lines) + "\n"


def render(text: str) -> str:
    """The page with every report block refilled from its command."""
    return BLOCK.sub(lambda m: m.group(1) + run_report(m.group("command")) + m.group(4), text)


def pages() -> list[Path]:
    return sorted(p for p in DOCS.glob("*.md") if "<!-- report: " in p.read_text())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 when a page is not what its commands print")
    args = parser.parse_args(argv)
    stale = []
    for page in pages():
        text = page.read_text()
        fresh = render(text)
        if fresh != text:
            stale.append(os.path.relpath(page, ROOT))
            if not args.check:
                page.write_text(fresh)
    if args.check and stale:
        print("not what their report commands print: " + ", ".join(stale)
              + " (python tools/docs_reports.py rewrites them)", file=sys.stderr)
        return 1
    for page in stale if not args.check else ():
        print(f"wrote {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
