"""A preset or config.toml that is not UTF-8 is one line and exit 2, with nothing created or
changed (it was a UnicodeDecodeError traceback, exit 1)."""

from puffer_tui.app.cli import main
from puffer_tui.engine.shared import run_dir as rd

LATIN1 = b'env_name = "squared"\n# caf\xe9 (Latin-1, not UTF-8)\n[train]\ntotal_timesteps = 5000\n'


def files_of(root):
    return {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_latin1_preset_is_one_line_and_creates_nothing(tmp_path, capsys):
    preset = tmp_path / "latin1.toml"
    preset.write_bytes(LATIN1)
    runs = tmp_path / "runs"
    code = main(["train", "squared", "--preset", str(preset), "--headless",
                 "--runs-dir", str(runs)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and "not UTF-8" in err and "latin1.toml" in err
    assert not runs.exists() or not any(runs.iterdir())


def test_a_latin1_config_on_resume_is_one_line_and_leaves_the_run_alone(tmp_path, capsys):
    run = rd.create_run_dir("squared", tmp_path)
    (run / rd.CONFIG_FILE).write_bytes(LATIN1)
    (run / rd.CHECKPOINT_DIR / "step-000000004096-epoch-00000001.pt").write_bytes(b"unread")
    before = files_of(run)
    code = main(["train", "--resume", str(run), "--headless"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and "not UTF-8" in err and "config.toml" in err
    assert files_of(run) == before
