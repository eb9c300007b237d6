"""Diagnosis end to end on a real engine: a run broken on purpose (squared at learning rate
0.9, 60x the default) fires kl_blowup with the live `set` that fixes it, as a `diagnosis`
push, an event (events.log, `--headless`) and a metrics.jsonl field; the `diagnosis` command
silences it; a healthy run of the same size fires nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from engine_harness import first_push, kill_engine, make_run

from puffer_tui.app.compare_data import read_diagnoses
from puffer_tui.app.engine_client import EngineClient
from puffer_tui.app.engine_launcher import launch_engine
from puffer_tui.engine.runtime.metrics import grouped, read_metrics
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.config import load_config

TINY = ["--vec.num-envs", "64", "--train.horizon", "16", "--train.minibatch-size", "256",
        "--train.hidden-size", "32", "--train.torch-threads", "1"]


def test_headless_prints_the_diagnosis_and_the_run_keeps_it(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "puffer_tui.app.cli", "train", "squared", "--headless",
         "--runs-dir", str(tmp_path), *TINY, "--train.learning-rate", "0.9",
         "--train.total-timesteps", "8192"],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    line = next(ln for ln in result.stdout.splitlines() if "diagnosis kl_blowup:" in ln)
    assert line.startswith("warning ")
    assert "suggested: train.learning_rate 0.9 -> 0.09" in line
    run = next(tmp_path.iterdir())
    events = (run / rd.EVENTS_FILE).read_text()
    assert "[warning] diagnosis kl_blowup: updates overshoot: approx_kl" in events
    rows = [r for r in read_metrics(run) if r.get("diagnoses")]
    first = rows[0]["diagnoses"]
    assert {"rule": "kl_blowup", "status": "fired", "severity": "error"}.items() <= \
        next(d for d in first if d["rule"] == "kl_blowup").items()
    assert rows[0]["epoch"] == 1  # the first epoch's KL is already in the thousands
    regrouped = grouped(rows[0])  # how the app reads rows back: a row field, not an env stat
    assert regrouped["diagnoses"] == first and "diagnoses" not in regrouped["env"]

    # `runs --compare` lists the diagnoses each run had (a copy stands in for a second run)
    shutil.copytree(run, tmp_path / "copy-of-it")
    listed = subprocess.run(
        [sys.executable, "-m", "puffer_tui.app.cli", "runs", "--runs-dir", str(tmp_path),
         "--compare", run.name, "copy-of-it"], capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    lines = [ln for ln in listed.stdout.splitlines() if ": diagnosis kl_blowup at epochs 1-" in ln]
    assert len(lines) == 2, listed.stdout
    assert read_diagnoses(run)[0]["rule"] == "kl_blowup"


def test_the_push_carries_evidence_and_a_live_set_and_silence_clears_it(tmp_path):
    run = make_run(tmp_path, **{"train.learning_rate": 0.9, "train.total_timesteps": 10**7})
    handle = launch_engine(run)
    try:
        with EngineClient.connect(rd.socket_path(run)) as client:
            fired = first_push(client, "diagnosis", timeout=120,
                               where=lambda p: p.get("rule") == "kl_blowup")
            assert fired is not None, "kl_blowup did not fire"
            assert fired["status"] == "fired" and fired["epoch"] >= 1
            assert fired["evidence"]["approx_kl"] > 1.0
            assert fired["evidence"]["epochs"]
            assert fired["suggestion"] == {"key": "train.learning_rate", "from": 0.9,
                                           "to": 0.09, "live": True}
            status = client.call("status")
            assert "kl_blowup" in [d["rule"] for d in status["diagnoses"]]

            with pytest.raises(Exception, match="must be a rule name"):
                client.call("diagnosis", silence="no_such_rule")
            reply = client.call("diagnosis", silence="kl_blowup")
            assert "kl_blowup" in reply["silenced"] and "kl_blowup" not in reply["active"]
            cleared = first_push(client, "diagnosis", timeout=30,
                                 where=lambda p: p.get("rule") == "kl_blowup")
            assert cleared["status"] == "cleared" and cleared["silenced"] is True
            assert "kl_blowup" not in [d["rule"] for d in client.call("status")["diagnoses"]]

            # the suggestion is a `set` the engine takes as it is
            applied = client.call("set", key=fired["suggestion"]["key"],
                                  value=fired["suggestion"]["to"])
            assert applied["value"] == pytest.approx(0.09)
            client.call("stop", checkpoint=False)
        handle.wait(60)
        events = (run / rd.EVENTS_FILE).read_text()
        assert "diagnosis kl_blowup silenced for this run" in events
        assert events.count("diagnosis kl_blowup:") == 1  # silenced: never again
    finally:
        kill_engine(run)
        if handle.poll() is None:
            handle.process.kill()
            handle.wait(10)


def test_a_healthy_tiny_run_fires_nothing(tmp_path):
    run = make_run(tmp_path, **{"train.total_timesteps": 40_000})
    handle = launch_engine(run)
    assert handle.wait(300) == 0
    rows = read_metrics(run)
    assert len(rows) >= 30
    assert [r["diagnoses"] for r in rows if r.get("diagnoses")] == []
    assert "diagnosis" not in (run / rd.EVENTS_FILE).read_text()
    json.dumps(rows)  # the rows stay plain JSON


def test_the_observation_scan_runs_every_third_epoch_at_least_when_over_budget():
    # a doctor over its cost budget (a run's first epochs, or tiny epochs) skips the scan,
    # but never for more than two epochs running: obs_scale wants 2 measures in 10 epochs
    import types

    import torch

    from puffer_tui.engine.diagnosis.epoch_diagnosis import Doctor

    segments, horizon = 8, 16
    buffer = types.SimpleNamespace(
        masks=torch.ones(segments, horizon), rewards=torch.zeros(segments, horizon),
        terminals=torch.zeros(segments, horizon), truncations=torch.zeros(segments, horizon),
        observations=torch.rand(segments, horizon, 4) * torch.tensor([1.0, 1e4, 1.0, 1.0]),
        values=torch.zeros(segments, horizon), final_values=torch.zeros(segments, horizon))
    # a real config: the doctor checks its suggestions against the config's own rules
    config = load_config("squared", {"train.max_grad_norm": 0.0,
                                     "train.normalize_observations": False})
    trainer = types.SimpleNamespace(
        config=config,
        global_step=0, num_agents=segments, buffer=buffer, ppo=None,
        vecenv=types.SimpleNamespace(single_action_space=types.SimpleNamespace(n=2)))
    events = types.SimpleNamespace(emit=lambda *a: None, info=lambda *a: None)
    doctor = Doctor(trainer, events)
    doctor.seconds = 1.0  # far over budget for the uptimes below
    scanned = []
    for epoch in range(1, 13):
        row = {"epoch": epoch, "global_step": epoch * 128, "uptime": 0.001 * epoch}
        doctor.examine(row)
        scanned.append("obs_ratio" in doctor._last_signals)
    assert scanned.count(True) >= 4 and "False, False, False" not in str(scanned), scanned
    assert any(m["rule"] == "obs_scale" for m in doctor.active())  # and it still fires
