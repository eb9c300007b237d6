"""README "Learning against SB3": its table is what the `bench learn --report` command printed
below it prints from the JSONs in the repository (no SB3 needed: --report runs nothing)."""

import re
import subprocess
import sys
from pathlib import Path


def test_the_readme_table_is_what_its_report_command_prints():
    """README "Every env in one session": the `--report` command after `cd docs/learn_runs/...`
    prints the table above it, row for row, from the JSONs in the repository."""
    root = Path(__file__).resolve().parents[2]
    text = (root / "README.md").read_text()
    section = text[text.index("### Every env in one session"):]
    section = section[:section.index("\nWhat the table says")]
    folder = re.search(r"^    cd (docs/learn_runs/\S+)$", section, flags=re.M).group(1)
    command = re.search(r"^    puffer-tui bench learn (--report .*?)\n\n", section,
                        flags=re.M | re.S).group(1)
    argv = command.replace("\\\n", " ").split()
    result = subprocess.run([sys.executable, "-m", "puffer_tui.app.cli", "bench", "learn", *argv],
                            capture_output=True, text=True, cwd=root / folder, timeout=120)
    assert result.returncode == 0, result.stderr
    printed = [line for line in result.stdout.splitlines() if line.startswith("|")]
    table = [line for line in section.splitlines() if line.startswith("|")]
    assert printed == table
