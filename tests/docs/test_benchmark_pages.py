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


def _commands(page: str) -> list[str]:
    text = (ROOT / "docs" / page).read_text()
    return [m.group("command") for m in docs_reports.BLOCK.finditer(text)]


def test_the_speed_and_diagnosis_tables_are_report_blocks():
    """bench vec's, bench train's and the doctor's tables come from their committed JSON."""
    speed = _commands("speed.md")
    assert any("bench vec --report" in c for c in speed), speed
    assert sum("bench train --report" in c for c in speed) >= 2, speed  # alone, and --peer sb3
    diagnosis = _commands("diagnosis.md")
    assert any("benchmarks.doctor --report" in c for c in diagnosis), diagnosis
    for page in ("speed.md", "diagnosis.md"):
        text = (ROOT / "docs" / page).read_text()
        bodies = [m.group("body") for m in docs_reports.BLOCK.finditer(text)]
        assert all(body.count("\n| ") >= 2 and "- machine: " in body for body in bodies), page


def test_a_stale_block_fails_the_check_and_is_rewritten(tmp_path, monkeypatch, capsys):
    """A figure changed by hand in a block is what --check catches; a plain run puts back what
    the command prints, and the check passes again."""
    speed = (ROOT / "docs" / "speed.md").read_text()
    block = next(m for m in docs_reports.BLOCK.finditer(speed)
                 if "bench train --report" in m.group("command"))
    page = tmp_path / "speed.md"
    line = next(x for x in block.group("body").splitlines() if x.startswith("| ") and "---" not in x
                and not x.startswith("| env") and not x.startswith("| measure"))
    typed = line.replace(" | ", " | 1", 1)  # a figure typed over the printed one
    page.write_text(block.group(0).replace(line, typed))
    monkeypatch.setattr(docs_reports, "DOCS", tmp_path)
    assert docs_reports.main(["--check"]) == 1
    assert "speed.md" in capsys.readouterr().err
    assert typed in page.read_text()  # --check changes nothing
    assert docs_reports.main([]) == 0
    assert page.read_text() == block.group(0)
    assert docs_reports.main(["--check"]) == 0


def test_every_report_block_is_what_its_command_prints():
    for page in docs_reports.pages():
        text = page.read_text()
        for m in docs_reports.BLOCK.finditer(text):
            printed = docs_reports.run_report(m.group("command"))
            assert m.group("body") == printed, f"{page.name}: {m.group('command')}"


def _number(cell: str) -> float:
    return float(cell.split(" (")[0].replace(",", ""))


def test_the_readme_headline_figures_are_the_benchmark_page_s():
    """The README's short table quotes the bench learn report: each env's final training
    return, ours and SB3's medians, and the wall-time ratio, as that report prints them."""
    text = (ROOT / "docs" / "benchmarks.md").read_text()
    report = next(m.group("body") for m in docs_reports.BLOCK.finditer(text)
                  if "bench learn --report" in m.group("command"))
    rows = [[cell.strip() for cell in line.strip("|").split("|")]
            for line in report.splitlines() if line.startswith("|")]
    readme = (ROOT / "README.md").read_text()
    headline = readme[readme.index("## Headline figures"):readme.index("## Documentation")]
    quoted = [[cell.strip() for cell in line.strip("|").split("|")]
              for line in headline.splitlines() if line.startswith("| ") and " / " in line
              and "ours / SB3" not in line]
    assert len(quoted) >= 3
    for env_cell, returns, wall in quoted:
        env = env_cell.split(" (")[0]
        at = next(i for i, row in enumerate(rows) if row[0].startswith(env + " ("))
        ours, sb3, ratio = rows[at], rows[at + 1], rows[at + 2]
        assert [_number(x) for x in returns.split(" / ")] == [_number(ours[4]), _number(sb3[4])], env
        assert wall == ratio[6], env


def test_the_readme_held_out_figures_are_the_validation_report_s():
    """The README's held-out table quotes the validation report on the benchmarks page: each
    env's median eval and the zoo's published mean, as that report prints them."""
    text = (ROOT / "docs" / "benchmarks.md").read_text()
    report = next(m.group("body") for m in docs_reports.BLOCK.finditer(text)
                  if "benchmarks.validation --report" in m.group("command"))
    rows = {cells[0]: cells for cells in ([c.strip() for c in line.strip("|").split("|")]
                                          for line in report.splitlines() if line.startswith("| "))}
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("| held-out env (steps)"):readme.index("## Documentation")]
    quoted = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()
              if line.startswith("| ") and "held-out env" not in line and "---" not in line]
    assert len(quoted) >= 3
    for env_cell, ours, zoo in quoted:
        row = rows[env_cell.split(" (")[0]]
        assert ours == row[3].split(" (")[0], env_cell
        assert zoo == row[4].split(" +- ")[0], env_cell
