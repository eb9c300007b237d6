"""Each benchmark table of the docs is what the command above it prints from the JSON committed
in the repository (tools/docs_reports.py): a table typed by hand, or one left behind when its
report changed, fails here."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("docs_reports", ROOT / "tools" / "docs_reports.py")
docs_reports = importlib.util.module_from_spec(spec)
spec.loader.exec_module(docs_reports)


def test_the_benchmark_pages_have_report_blocks():
    pages = {page.name for page in docs_reports.pages()}
    assert "benchmarks.md" in pages
    text = (ROOT / "docs" / "benchmarks.md").read_text()
    blocks = list(docs_reports.BLOCK.finditer(text))
    commands = [m.group("command") for m in blocks]
    assert any("bench learn --report" in c for c in commands), commands
    assert any("gpu_check --report" in c for c in commands), commands
    assert all(m.group("body").count("\n| ") >= 2 for m in blocks)  # each holds a table


def test_every_report_block_is_what_its_command_prints():
    for page in docs_reports.pages():
        text = page.read_text()
        for m in docs_reports.BLOCK.finditer(text):
            printed = docs_reports.run_report(m.group("command"))
            assert m.group("body") == printed, f"{page.name}: {m.group('command')}"
