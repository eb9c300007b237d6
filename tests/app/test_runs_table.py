"""`puffer-tui runs` in a narrow terminal: every run name whole on its line (names are what
`attach`, `eval` and `--resume` take), other columns shortened or left out, and said so."""

from tests.app.test_cli_listing import cli_at_80_columns, make_run


def _table_rows(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("│")]


def test_long_names_stay_whole_at_80_columns(tmp_path):
    runs = tmp_path / "runs"
    gym = make_run(runs, "gym:CartPole-v1", state="finished", step=20_480)
    lake = make_run(runs, "gym:FrozenLake-v1", state="stopped", step=8_192)
    out = cli_at_80_columns("runs", "--runs-dir", str(runs))
    lines = out.splitlines()
    rows = _table_rows(out)
    assert max(map(len, lines[1:])) <= 80, out  # the first: the runs directory, as it is
    for run in (gym, lake):
        assert len(run.name) > 30  # e.g. gym-FrozenLake-v1-20261125-012541
        (row,) = [r for r in rows if run.name in r]
        assert row.split("│")[1].strip() == run.name
    assert len(rows) == 2, out  # one line a run: no name folded onto a second
    assert any("finished" in r and "20.5k/20M" in r for r in rows), out
    (note,) = [line for line in lines if line.startswith("left out at 80 columns:")]
    assert "env" in note and "puffer-tui runs --json" in note


def test_a_wide_terminal_keeps_every_column(tmp_path):
    runs = tmp_path / "runs"
    make_run(runs, "gym:CartPole-v1", state="finished", step=20_480)
    out = cli_at_80_columns("runs", "--runs-dir", str(runs), columns=140)
    assert "┃ env " in out and "gym:CartPole-v1" in out and "20.5k, " in out
    assert "left out" not in out
