"""The reference pages name what the code defines: every dashboard key, every exit status."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KEY_NAMES = {"left_square_bracket": "[", "right_square_bracket": "]", "question_mark": "?"}


def test_the_dashboard_page_lists_every_key_of_the_dashboard():
    from puffer_tui.screens.dashboard import DashboardScreen

    page = (ROOT / "docs" / "dashboard.md").read_text()
    keys_table = page[page.index("## Keys"):]
    listed = set(re.findall(r"^\| ((?:`[^`]+` ?)+) \|", keys_table, flags=re.M))
    listed = {key for cell in listed for key in re.findall(r"`([^`]+)`", cell)}
    for binding in DashboardScreen.BINDINGS:
        key = KEY_NAMES.get(binding.key, binding.key)
        assert key in listed, f"docs/dashboard.md's keys table lacks `{key}` ({binding.action})"


def test_the_runs_page_lists_every_exit_status():
    from puffer_tui.engine.shared.exit_codes import CODES

    page = (ROOT / "docs" / "runs.md").read_text()
    table = page[page.index("## Exit status"):]
    rows = {int(code) for code in re.findall(r"^\| (\d+) \|", table, flags=re.M)}
    assert rows == set(CODES)
