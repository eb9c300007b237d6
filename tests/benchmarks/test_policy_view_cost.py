"""The policy view's cost benchmark (benchmarks/policy_view_cost.py) on a small squared: the
view's code is timed only on the watched side, and --report prints what --json kept."""

import json

import pytest

from puffer_tui.benchmarks import policy_view_cost
from puffer_tui.engine.evaluation.policy_view import PolicyWatch

SMALL = {"vec.num_envs": 8, "train.horizon": 16, "train.minibatch_size": 64, "env.size": 5}


def test_the_view_is_timed_on_the_watched_side_only():
    observe, view = PolicyWatch.observe, PolicyWatch.view
    result = policy_view_cost.measure("squared", rounds=1, seconds=0.3, fps=15,
                                      saliency="action", overrides=SMALL)
    assert (PolicyWatch.observe, PolicyWatch.view) == (observe, view)  # the timers are gone
    assert result["calls"]["observe"] >= SMALL["train.horizon"] and result["calls"]["view"] > 0
    assert 0 < result["share"] < 1 and result["watched_cpu"] > 0
    assert result["sps_render"] > 0 and result["sps_policy"] > 0


def test_report_prints_the_json_and_refuses_another_file(tmp_path, capsys):
    out = tmp_path / "cost.json"
    data = {"date": "2026-12-02", "command": "x", "commit": "abc", "machine": "a box",
            "results": [{"env": "squared", "num_envs": 8, "fps": 4.0, "saliency": "action",
                         "inside_seconds": {"observe": 0.01, "view": 0.02},
                         "calls": {"observe": 100, "view": 4}, "share": 0.0042,
                         "sps_render": 1000.0, "sps_policy": 990.0, "ratio": 0.99}]}
    out.write_text(json.dumps(data))
    assert policy_view_cost.main(["--report", str(out)]) == 0
    assert "| squared (8) | 4, action | 100 (0.01) | 4 (0.02) | 0.42% |" in capsys.readouterr().out
    other = tmp_path / "other.json"
    other.write_text("{}")
    with pytest.raises(SystemExit, match="no \"results\""):
        policy_view_cost.main(["--report", str(other)])
