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


def test_every_picture_the_pages_show_exists_and_the_screenshots_come_from_the_script():
    """A picture named on a page is in the repository, and each app screenshot is one that
    tools/docs_screenshots.py draws (so one command redraws them all)."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    shown = set()
    for page in pages:
        for target in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", page.read_text()):
            path = (page.parent / target).resolve()
            assert path.is_file(), f"{page.name} shows {target}, which does not exist"
            shown.add(path.name)
    script = (ROOT / "tools" / "docs_screenshots.py").read_text()
    sizes = re.search(r"^SIZES = (.*)$", script, flags=re.M).group(1)
    drawn = {f"{screen}-{w}x{h}.svg" for screen in ("dashboard", "launcher")
             for w, h in re.findall(r"\((\d+), (\d+)\)", sizes)}
    screenshots = {name for name in shown if name.startswith(("dashboard-", "launcher-"))}
    assert screenshots and screenshots <= drawn, screenshots - drawn


# dated records name files as they were then; architecture.md and protocol.md follow the code's
# own moves (their authors keep them)
NOT_CHECKED = {"learning-history.md", "measurement-log.md", "architecture.md", "protocol.md"}
FILE_NAMED = re.compile(r"`([A-Za-z_][\w./-]*/[\w.-]+\.(?:py|h|pxd|pyx|toml|sh|json))`")


def test_every_file_a_page_names_exists():
    """A page that names a source file (`engine/...py`, `envs/.../config.toml`) names one that
    exists: a file moved without its docs following fails here."""
    missing = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        if page.name in NOT_CHECKED:
            continue
        for name in set(FILE_NAMED.findall(page.read_text())):
            if name.split("/")[0].isupper() or "NAME" in name:  # RUN/..., DIR/...: placeholders
                continue
            if not any((base / name).exists() for base in (ROOT, ROOT / "docs", ROOT / "engine")):
                missing.append(f"{page.name}: {name}")
    assert not missing, missing
