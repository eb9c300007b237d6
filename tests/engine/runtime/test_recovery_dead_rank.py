"""A DDP learner rank that dies mid-epoch (SIGKILL: a lost machine, an OOM kill) no longer takes
the learning with it. The surviving rank 0 saves a checkpoint of the last finished epoch (DDP
keeps every rank's weights identical, so nothing was lost with the dead rank), names the dead
rank and the resume command, and `--resume` goes on. When rank 0 is the one that dies, the
surviving rank makes status.json final with the reason.

Before: rank 0 ended with the raw gloo error ("Read error ... Connection reset by peer") and no
checkpoint (every step since the last checkpoint lost); when rank 0 died, status.json
stayed `running`.

The ranks load tests/ddp_patches (PUFFER_TEST_KILL_RANK=N:E:M: rank N kills itself at its M-th
minibatch of epoch E, after the others have learnt from the first M-1)."""

from __future__ import annotations

import json

import psutil
import pytest
from engine_harness import make_run

from puffer_tui.app.engine_launcher import launch_engine
from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.protocol import LIVE_STATES
from puffer_tui.engine.shared.run_dir import run_info
from tests.engine.runtime.test_ddp import TWO_RANKS, _family, engines, patched, trace, train_cli  # noqa: F401

STEPS = 2 * 32 * 16  # one epoch of TWO_RANKS: 2 ranks x 32 envs x horizon 16


def _run_killed(tmp_path, monkeypatch, engines, kill: str, **overrides):  # noqa: F811
    # 2 minibatches a pass, 2 passes: 4 minibatches an epoch
    run = make_run(tmp_path, **TWO_RANKS, **{"train.total_timesteps": 10**9,
                                             "train.update_epochs": 2, **overrides})
    monkeypatch.setenv("PUFFER_TEST_KILL_RANK", kill)
    handle = launch_engine(run, timeout=180)
    monkeypatch.delenv("PUFFER_TEST_KILL_RANK")  # not for the resume below
    engines.append(handle)
    family = _family(handle.pid)
    assert handle.wait(120) != 0
    psutil.wait_procs(family, timeout=30)
    assert not [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    return run


def _weights(state: dict) -> float:
    return sum(float(t.double().sum()) for t in state["policy"].values())


@pytest.mark.slow
def test_a_killed_rank_leaves_a_checkpoint_of_the_last_epoch_and_resume_goes_on(
        tmp_path, patched, monkeypatch, engines):  # noqa: F811
    # rank 1 dies at its 3rd minibatch of epoch 4: rank 0 has already learnt from two
    run = _run_killed(tmp_path, monkeypatch, engines, "1:4:3")
    log = (run / rd.EVENTS_FILE).read_text()
    line = next((ln for ln in log.splitlines() if "rank 1 died" in ln), None)
    assert line is not None, log
    assert "[error]" in line and "checkpoint of epoch 3" in line, line
    assert f"puffer-tui train --resume {run}" in line, line
    (saved,) = ckpt.list_checkpoints(run)
    assert ckpt.parse_name(saved.name)[1] == 3
    state = ckpt.load_checkpoint(saved)
    assert state["global_step"] == 3 * STEPS and state["episodes_afresh"]
    # the weights rank 0 ended epoch 3 with, not those it had when the connection broke
    epoch3 = {r["epoch"]: r for r in trace(patched, 0) if "cmd" not in r}[3]
    assert _weights(state) == pytest.approx(epoch3["weights"], rel=1e-9, abs=1e-9)
    status = rd.read_status(run)
    assert status["state"] == "error" and "rank 1 died" in status["error"]
    assert status["global_step"] == 3 * STEPS

    resumed = train_cli("--resume", str(run), "--train.total-timesteps", str(5 * STEPS))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert ckpt.load_checkpoint(ckpt.latest_checkpoint(run))["global_step"] == 5 * STEPS
    log = (run / rd.EVENTS_FILE).read_text()
    assert "resume is not exact" in log and "rank 1 died" in log
    epochs = [json.loads(ln)["epoch"] for ln in (run / rd.METRICS_FILE).read_text().splitlines()]
    assert epochs == [1, 2, 3, 4, 5]
    assert rd.read_status(run)["state"] == "finished"


def test_a_killed_rank_0_leaves_a_final_status_naming_it(tmp_path, patched, monkeypatch,  # noqa: F811
                                                         engines):  # noqa: F811
    run = _run_killed(tmp_path, monkeypatch, engines, "0:3:2", **{"train.checkpoint_interval": 1})
    status = rd.read_status(run)
    assert status["state"] not in LIVE_STATES, status
    assert status["state"] == "error" and "rank 0 died" in status["error"], status
    assert "step-000000002048-epoch-00000002.pt" in status["error"]  # the last checkpoint
    assert f"puffer-tui train --resume {run}" in status["error"]
    log = (run / rd.EVENTS_FILE).read_text()
    assert any("rank 1" in ln and "rank 0 died" in ln for ln in log.splitlines()), log
    info = run_info(run)  # what `puffer-tui runs` and the launcher show
    assert info.state == "error" and "rank 0 died" in info.detail
