"""docs/cli.md is what tools/cli_reference.py writes from today's parser and config schema:
a flag, a default or a help line changed in the code and not in the page fails here
(`python tools/cli_reference.py` rewrites it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_cli_reference_page_is_what_the_parser_prints():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "cli_reference.py"), "--check"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_the_page_names_every_verb_and_live_field():
    from puffer_tui.app.cli import COMMANDS
    from puffer_tui.engine.shared.config import schema

    page = (ROOT / "docs" / "cli.md").read_text()
    for verb in COMMANDS:
        assert f"\n## {verb}\n" in page, verb
    for spec in schema():
        row = next(line for line in page.splitlines() if line.startswith(f"| `{spec.flag}` |"))
        assert row.split("|")[5].strip() == ("yes" if spec.live else ""), spec.flag
