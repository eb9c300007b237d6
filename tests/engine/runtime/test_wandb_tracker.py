"""W&B through the one metrics writer, offline (no account, no network): the offline run
file holds the rows, the config, live changes and recordings; TensorBoard is fed alongside."""

import sys

import numpy as np
import pytest
from tensorboard_reader import read_scalars
from wandb_offline_reader import offline_run_file, read_finished_run

from puffer_tui.engine.runtime import metrics
from puffer_tui.engine.runtime import wandb_tracker as wt
from puffer_tui.engine.shared.config import ConfigError, load_config
from puffer_tui.engine.startup import wandb_check


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """W&B offline, its config and caches in the test's tmp dir; its service stopped after."""
    wandb = pytest.importorskip("wandb", reason="the wandb extra is not installed")

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    for name in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR", "WANDB_ARTIFACT_DIR"):
        monkeypatch.setenv(name, str(tmp_path / "wandb-home" / name.lower()))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    yield tmp_path / "run"
    wandb.teardown()


def _row(epoch, step, loss, score):
    return {"epoch": epoch, "global_step": step, "sps": 1000.0 + epoch, "learning_rate": 0.01,
            "losses": {"policy_loss": loss}, "timing": {"env": 0.1},
            "env": {"score": score, "note": "text is not a metric"},
            "workers": [{"rank": 0, "sps": 1.0}]}


def _gif(path, frames=3):
    iio = pytest.importorskip("imageio.v3", reason="the record extra is not installed")

    path.parent.mkdir(parents=True, exist_ok=True)
    images = np.zeros((frames, 8, 8, 3), np.uint8)
    images[:, :, :, 0] = np.arange(frames)[:, None, None] * 60
    iio.imwrite(path, images, duration=100, loop=0)


def test_offline_run_holds_rows_config_live_changes_and_recordings(offline):
    run_dir = offline
    run_dir.mkdir()
    config = load_config("squared", {"train.wandb": True, "train.wandb_project": "tests"})
    writer = metrics.MetricsWriter(run_dir, tensorboard=False, config=config)
    writer.write(_row(1, 100, 0.5, 0.1))
    config.train.learning_rate = 0.002  # what trainer.set_hyperparameter does
    writer.write(_row(2, 200, 0.25, 0.4))
    _gif(run_dir / "recordings" / "eval-200.gif")
    _gif(run_dir / "recordings" / ".eval-300.gif.1234.tmp.gif")  # one being encoded: not yet
    writer.write(_row(3, 300, 0.125, 0.9))
    writer.close()

    logged = read_finished_run(offline_run_file(run_dir))
    rows = [h for h in logged["history"] if "losses/policy_loss" in h]
    assert [(r["global_step"], r["losses/policy_loss"], r["env/score"]) for r in rows] == \
        [(100, 0.5, 0.1), (200, 0.25, 0.4), (300, 0.125, 0.9)]
    assert rows[0]["train/sps"] == 1001.0 and rows[0]["timing/env"] == 0.1
    assert not any("note" in key or key.startswith("workers") for r in rows for key in r)
    changes = [h for h in logged["history"] if wt.LIVE_CHANGE_KEY in h]
    assert len(changes) == 1 and changes[0]["global_step"] == 100  # made after row 1
    assert "train.learning_rate changed from 0.015 to 0.002" in changes[0][wt.LIVE_CHANGE_KEY]
    assert logged["config"]["train"]["learning_rate"] == 0.002
    assert logged["config"]["env_name"] == "squared"
    videos = [h for h in logged["history"] if "recordings/eval/_type" in h]
    assert len(videos) == 1 and videos[0]["global_step"] == 300
    assert videos[0]["recordings/eval/_type"] == "video-file"
    media = list(offline_run_file(run_dir).parent.glob("files/media/videos/recordings/eval_*.gif"))
    assert len(media) == 1 and media[0].read_bytes() == (run_dir / "recordings" / "eval-200.gif").read_bytes()
    assert [r["epoch"] for r in metrics.read_metrics(run_dir)] == [1, 2, 3]  # the file as ever


def test_a_resumed_run_continues_its_wandb_run_without_relogging_recordings(offline):
    run_dir = offline
    run_dir.mkdir()
    config = load_config("squared", {"train.wandb": True})
    writer = metrics.MetricsWriter(run_dir, tensorboard=False, config=config)
    _gif(run_dir / "recordings" / "eval-100.gif")
    writer.write(_row(1, 100, 0.5, 0.1))
    writer.close()
    run_id = (run_dir / wt.WANDB_DIR / wt.RUN_ID_FILE).read_text().strip()

    writer = metrics.MetricsWriter(run_dir, tensorboard=False, config=config)
    assert writer.tracker.resumed and writer.tracker.run.id == run_id
    _gif(run_dir / "recordings" / "eval-200.gif")
    writer.write(_row(2, 200, 0.25, 0.4))
    writer.close()
    files = sorted(run_dir.glob("wandb/offline-run-*/run-*.wandb"))
    assert len(files) == 2 and all(f.name == f"run-{run_id}.wandb" for f in files)
    second = read_finished_run(files[-1])
    assert [h["global_step"] for h in second["history"] if "recordings/eval/_type" in h] == [200]


def test_tensorboard_is_fed_from_the_same_rows_as_wandb(offline):
    pytest.importorskip("tensorboard", reason='pip install "puffer-tui[tensorboard]"')
    offline.mkdir()
    config = load_config("squared", {"train.wandb": True})
    writer = metrics.MetricsWriter(offline, tensorboard=True, config=config)
    writer.write(_row(1, 100, 0.5, 0.1))
    writer.close()
    row = [h for h in read_finished_run(offline_run_file(offline))["history"]
           if "losses/policy_loss" in h][0]
    scalars = read_scalars(offline / metrics.TENSORBOARD_DIR)
    assert {tag: [(100, pytest.approx(value))] for tag, value in row.items() if "/" in tag} \
        == scalars


def test_wandb_failing_mid_run_is_dropped_with_a_warning_and_rows_go_on(offline, monkeypatch):
    offline.mkdir()
    warnings = []
    writer = metrics.MetricsWriter(offline, tensorboard=False, warn=warnings.append,
                                   config=load_config("squared", {"train.wandb": True}))
    writer.write(_row(1, 100, 0.5, 0.1))

    def broken(self, row):
        raise ConnectionError("the W&B service went away")

    monkeypatch.setattr(wt.WandbTracker, "log_row", broken)
    writer.write(_row(2, 200, 0.25, 0.4))
    writer.write(_row(3, 300, 0.125, 0.9))
    writer.close()
    assert writer.tracker is None and "the W&B service went away" in writer.tracker_error
    assert len(warnings) == 1 and "Weights & Biases stopped logging" in warnings[0]
    assert [r["epoch"] for r in metrics.read_metrics(offline)] == [1, 2, 3]
    logged = read_finished_run(offline_run_file(offline))
    assert [h["global_step"] for h in logged["history"] if "losses/policy_loss" in h] == [100]


def test_wandb_off_makes_no_wandb_files(tmp_path):
    writer = metrics.MetricsWriter(tmp_path, tensorboard=False, config=load_config("squared", {}))
    writer.write(_row(1, 100, 0.5, 0.1))
    writer.close()
    assert writer.tracker is None and not (tmp_path / wt.WANDB_DIR).exists()


def test_missing_wandb_is_a_clear_error_before_anything_is_written(tmp_path, monkeypatch):
    config = load_config("squared", {"train.wandb": True})
    monkeypatch.setattr(wandb_check, "wandb_available", lambda: False)
    with pytest.raises(ConfigError, match=r'pip install "puffer-tui\[wandb\]"'):
        wandb_check.check_wandb(config)
    wandb_check.check_wandb(load_config("squared", {}))  # off: nothing asked of the package
    monkeypatch.setitem(sys.modules, "wandb", None)  # `import wandb` fails
    with pytest.raises(ConfigError, match=r"train.wandb is on .*puffer-tui\[wandb\]"):
        metrics.MetricsWriter(tmp_path, tensorboard=False, config=config)
    assert list(tmp_path.iterdir()) == []


def test_no_login_online_is_refused_before_the_run_and_offline_needs_none(offline, monkeypatch):
    import wandb

    config = load_config("squared", {"train.wandb": True})
    wandb_check.check_wandb(config)  # offline (the fixture): no account needed
    wandb.teardown()  # W&B reads its mode and credentials once per process
    monkeypatch.delenv("WANDB_MODE")
    monkeypatch.setenv("NETRC", str(offline.parent / "no-netrc"))
    with pytest.raises(ConfigError, match="no Weights & Biases login here.*WANDB_MODE=offline"):
        wandb_check.check_wandb(config)
    wandb.teardown()
    monkeypatch.setenv("WANDB_API_KEY", "k" * 40)
    wandb_check.check_wandb(config)


def test_recording_series_groups_periodic_recordings():
    from pathlib import Path

    assert wt.recording_series(Path("eval-1234.gif")) == "recordings/eval"
    assert wt.recording_series(Path("best run.mp4")) == "recordings/best run"


def test_a_real_engine_run_logs_offline_with_live_change_eval_and_recording(offline):
    """The engine's own writer: every metrics.jsonl row, a `set` made through the socket,
    the eval group and a periodic recording all reach the offline W&B run."""
    pytest.importorskip("imageio", reason="the record extra is not installed")
    from engine_harness import kill_engine, make_run, wait_until

    from puffer_tui.app.engine_client import EngineClient
    from puffer_tui.app.engine_launcher import launch_engine

    run = make_run(offline.parent / "runs", **{
        "train.total_timesteps": 10**9, "train.wandb": True, "eval.interval": 1,
        "eval.episodes": 1, "eval.num_envs": 1, "eval.record_every": 1, "env.max_ticks": 50})
    handle = launch_engine(run)
    try:
        with EngineClient.connect(run) as client:
            wait_until(lambda: client.call("status")["global_step"] > 0, 120, what="steps")
            client.call("set", key="train.learning_rate", value="0.004")
            wait_until(lambda: len(metrics.read_metrics(run)) >= 3
                       and list((run / "recordings").glob("eval-*.gif")), 120,
                       what="rows after the change and a recording")
            client.call("stop")
        assert handle.wait(60) == 0
    finally:
        if handle.poll() is None:
            kill_engine(run)
    rows = metrics.read_metrics(run)
    logged = read_finished_run(offline_run_file(run))
    epochs = [h for h in logged["history"] if "losses/policy_loss" in h]
    assert [(h["global_step"], h["losses/policy_loss"]) for h in epochs] == \
        [(r["global_step"], r["policy_loss"]) for r in rows]
    assert any("eval/score" in h for h in epochs)
    changes = [h[wt.LIVE_CHANGE_KEY] for h in logged["history"] if wt.LIVE_CHANGE_KEY in h]
    assert len(changes) == 1 and "train.learning_rate changed from" in changes[0]
    assert changes[0].endswith("to 0.004")
    assert logged["config"]["train"]["learning_rate"] == 0.004
    assert any("recordings/eval/_type" in h for h in logged["history"])
