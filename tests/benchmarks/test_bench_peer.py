"""`puffer-tui bench train --peer sb3`: Stable-Baselines3's PPO beside ours on CartPole-v1.
The end-to-end run has a tiny budget: it checks the output's shape, never a speed."""

import json
import subprocess
import sys

import pytest

from puffer_tui.benchmarks.peer_sb3 import PeerResult, ratios, require_sb3, window_mean


def bench(*argv, timeout=180):
    return subprocess.run([sys.executable, "-m", "puffer_tui.app.cli", "bench", "train", *argv],
                          capture_output=True, text=True, timeout=timeout)


def test_window_mean_takes_the_newest_epochs_holding_100_episodes():
    assert window_mean([(20.0, 60)]) is None  # fewer than 100 finished
    assert window_mean([(20.0, 60), (40.0, 60)]) == pytest.approx(30.0)
    # the oldest epoch is no longer needed once the newer ones hold 100
    assert window_mean([(10.0, 500), (400.0, 50), (500.0, 50)]) == pytest.approx(450.0)
    assert window_mean([(400.0, 100), (0.0, 0)]) == pytest.approx(400.0)  # no episodes: skipped


def _result(name, sps, reach_seconds=None, reach_steps=None, seconds=10.0, steps=1000):
    return PeerResult(name, steps, seconds, sps, reach_seconds is not None, reach_seconds,
                      reach_steps)


def test_ratios_and_their_bounds():
    both = ratios(_result("ours", 1000.0, 2.0, 100), _result("sb3", 100.0, 8.0, 400))
    assert both["sps"] == pytest.approx(10.0)
    assert both["time_to_reach_seconds"] == pytest.approx(4.0)
    assert both["time_to_reach_steps"] == pytest.approx(4.0)
    assert both["time_to_reach_seconds_bound"] == "exact"
    # SB3 never got there in its 30 s: ours reached it at least 15x sooner
    only_ours = ratios(_result("ours", 1000.0, 2.0, 100), _result("sb3", 100.0, seconds=30.0))
    assert only_ours["time_to_reach_seconds"] == pytest.approx(15.0)
    assert only_ours["time_to_reach_seconds_bound"] == "lower"
    neither = ratios(_result("ours", 1000.0), _result("sb3", 100.0))
    assert neither["time_to_reach_seconds"] is None and neither["time_to_reach_steps_bound"] is None


def test_missing_sb3_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "stable_baselines3", None)  # import fails as if absent
    with pytest.raises(SystemExit, match=r'pip install "puffer-tui\[bench\]"'):
        require_sb3()


def test_peer_needs_cartpole_and_a_positive_budget():
    result = bench("squared", "--peer", "sb3")
    assert result.returncode == 2 and "gym:CartPole-v1" in result.stderr
    result = bench("--peer", "sb3", "--budget", "0")
    assert result.returncode == 2 and "--budget" in result.stderr
    assert "Traceback" not in result.stderr


def test_peer_sb3_reports_both_sides_in_one_run():
    pytest.importorskip("stable_baselines3", reason='the bench extra is not installed: pip install "puffer-tui[bench]"')
    result = bench("--peer", "sb3", "--budget", "1", "--train.torch-threads", "1", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    peer = json.loads(result.stdout)["peer"]
    assert peer["reach"] == 475.0 and peer["budget"] == 1.0
    for side, name in (("ours", "puffer-tui"), ("peer", "stable-baselines3")):
        assert peer[side]["name"] == name
        assert peer[side]["steps"] > 0 and peer[side]["sps"] > 0
        assert set(peer[side]) >= {"reached", "reach_seconds", "reach_steps", "seconds"}
    assert peer["ratios"]["sps"] > 0
    assert set(peer["ratios"]) == {"sps", "time_to_reach_seconds", "time_to_reach_seconds_bound",
                                   "time_to_reach_steps", "time_to_reach_steps_bound"}
