"""An epoch larger than the whole budget is refused in one line with the figures, before any
run dir exists (it was accepted: 1,000,000 envs with a 100,000-step budget collected 64M
steps and grew the engine to 11.8 GB before its first update)."""

from puffer_tui.app.cli import main


def test_an_epoch_larger_than_the_budget_is_refused_with_the_figures(tmp_path, capsys):
    runs = tmp_path / "runs"
    code = main(["train", "squared", "--headless", "--runs-dir", str(runs),
                 "--vec.num-envs", "1000000", "--train.total-timesteps", "100000"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1
    assert "64,000,000 agent steps" in err and "100,000" in err
    assert "--vec.num-envs 1562" in err
    assert not runs.exists() or not any(runs.iterdir())


def test_an_epoch_within_the_budget_passes_the_check():
    from puffer_tui.engine.shared import config as cfg
    from puffer_tui.engine.startup.preflight import check_budget

    config = cfg.load_config("squared", {"vec.num_envs": 64, "train.horizon": 16,
                                         "train.total_timesteps": 1024})
    check_budget(config, agents_per_env=1)  # exactly one epoch: allowed
