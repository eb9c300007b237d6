"""`train --headless`'s panel keeps the last episode statistics through epochs in which no
episode ended: those epochs' stats hold only `episodes: 0`, which used to blank the return
("return -" at the end of a CartPole-v1 run whose 256-step epochs mostly end no 500-step
episode)."""

from app_fakes import NullLive, QueuedClient

from puffer_tui.app.headless_display import HeadlessDisplay, render
from puffer_tui.engine.shared.protocol import MessageType, RunState, TelemetrySnapshot


def _client():
    return QueuedClient({"state": RunState.RUNNING, "env": "gym:CartPole-v1", "run": "cartpole-1"})


def _push(step: int, stats: dict) -> dict:
    snapshot = TelemetrySnapshot(
        time=0.0, state=RunState.RUNNING, env="gym:CartPole-v1", run="cartpole-1",
        global_step=step, total_timesteps=100_000, epoch=step // 256, sps=1000.0,
        sps_mean=1000.0, uptime=1.0, eta=None, learning_rate=3e-3, losses={}, timing={},
        timing_pct={}, stats=stats, eval={}, hyperparameters={}, processes=[], workers=[],
        cluster=None, device="cpu", preset="", gpu=None, diagnoses=[])
    return {**snapshot.to_wire(), "type": MessageType.TELEMETRY}


def _panel_text(display: HeadlessDisplay) -> str:
    import io

    from rich.console import Console

    console = Console(width=100, record=True, file=io.StringIO())
    console.print(render(display.telemetry, 98))
    return console.export_text()


def test_an_epoch_without_episodes_keeps_the_last_return_and_score():
    client = _client()
    display = HeadlessDisplay(client, run_dir=None)
    live = NullLive()
    client.queued = [_push(256, {"episode_return": 500.0, "episode_length": 500.0,
                                 "score": 1.0, "episodes": 2})]
    display._pump(live)
    client.queued = [_push(512, {"episodes": 0})]  # what EpisodeLog.summary gives then
    display._pump(live)
    assert display.telemetry.global_step == 512  # the new snapshot, with the old stats
    assert display.telemetry.stats["episode_return"] == 500.0
    text = _panel_text(display)
    assert "500.000" in text  # the return, in the panel
    # a later epoch with episodes shows its own
    client.queued = [_push(768, {"episode_return": 480.0, "episode_length": 480.0,
                                 "score": 0.96, "episodes": 1})]
    display._pump(live)
    assert display.telemetry.stats["episode_return"] == 480.0


def test_before_any_episode_the_return_is_a_dash():
    client = _client()
    display = HeadlessDisplay(client, run_dir=None)
    client.queued = [_push(256, {"episodes": 0})]
    display._pump(NullLive())
    assert display.telemetry.stats.get("episode_return") is None
    assert display.telemetry.stats == {"episodes": 0}
