"""The validation runner's --keep-runs: the run folders stay under the folder named (their
metrics.jsonl to read after the runs); without it the runner's temporary folder is removed."""

from __future__ import annotations

import json

from puffer_tui.benchmarks import validation


def _fake_run(held, seed, work, flags):
    (work / "runs" / "r").mkdir(parents=True)
    (work / "runs" / "r" / "metrics.jsonl").write_text("{}\n")
    return {"seed": seed, "eval": {"episode_return": 1.0}}


def test_keep_runs_leaves_the_metrics_under_the_folder_named(tmp_path, monkeypatch):
    monkeypatch.setattr(validation, "run_one", _fake_run)
    monkeypatch.setattr(validation, "_importable", lambda module: True)
    keep = tmp_path / "kept"
    out = tmp_path / "out.json"
    assert validation.main(["--envs", "MiniGrid-Unlock-v0", "--seeds", "2", "--keep-runs",
                            str(keep), "--json", str(out)]) == 0
    assert len(list(keep.glob("validation-*/MiniGrid-Unlock-v0-s*/runs/r/metrics.jsonl"))) == 2
    assert len(json.loads(out.read_text())["validation"]["envs"]["MiniGrid-Unlock-v0"]
               ["runs"]) == 2


def test_without_keep_runs_the_work_folder_is_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(validation, "run_one", _fake_run)
    monkeypatch.setattr(validation, "_importable", lambda module: True)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(validation.tempfile, "tempdir", None)
    assert validation.main(["--envs", "MiniGrid-Unlock-v0", "--seeds", "1"]) == 0
    assert not list(tmp_path.glob("validation-*"))


def test_an_env_without_a_published_figure_runs_sb3_for_each_seed(tmp_path, monkeypatch):
    monkeypatch.setattr(validation, "run_one", _fake_run)
    monkeypatch.setattr(validation, "_importable", lambda module: True)
    peers = []

    def fake_peer(held, seed, work):
        peers.append((held.name, seed, work.parent.name))
        return {"seed": seed, "eval": {"episode_return": 2.0}}

    monkeypatch.setattr(validation, "run_peer", fake_peer)
    out = tmp_path / "out.json"
    assert validation.main(["--envs", "ALE/Qbert-v5", "MiniGrid-Unlock-v0", "--seeds", "2",
                            "--keep-runs", str(tmp_path / "kept"), "--json", str(out)]) == 0
    assert peers == [("ALE/Qbert-v5", 0, "ALE_Qbert-v5-s0"), ("ALE/Qbert-v5", 1, "ALE_Qbert-v5-s1")]
    envs = json.loads(out.read_text())["validation"]["envs"]
    assert envs["ALE/Qbert-v5"]["summary"]["verdict"] == "below"  # 1.0 against 2.0
    assert "peer_runs" not in envs["MiniGrid-Unlock-v0"]
