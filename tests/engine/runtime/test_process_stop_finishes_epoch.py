"""`stop` lets a running epoch end, as the README says ("finishes its epoch"), when the epoch
is of the length the run's epochs take: the stop's wait is measured from the last epoch
(twice its training time, within a floor and a ceiling). The run's steps are then one figure
everywhere: the checkpoint's, status.json's and metrics.jsonl's last row."""

import json

from engine_harness import kill_engine, make_run, wait_until

from puffer_tui.app.compare_data import final_figures, load_run
from puffer_tui.app.engine_client import EngineClient
from puffer_tui.app.engine_launcher import launch_engine
from puffer_tui.engine.runtime.process import STOP_GRACE, STOP_WAIT_MAX, Engine
from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared import run_dir as rd

# epochs of ~0.5M steps: a second or more here, far over STOP_GRACE
EPOCHS_OF_SECONDS = {"vec.num_envs": 4096, "train.horizon": 128,
                     "train.minibatch_size": 4096 * 32, "train.total_timesteps": 10**9}


def test_the_wait_follows_the_last_epoch_within_bounds():
    engine = Engine.__new__(Engine)  # only the rule: no run dir, no trainer
    engine.epoch_seconds = 0.0
    assert engine.stop_grace() == STOP_GRACE  # nothing measured yet
    engine.epoch_seconds = 2.0
    assert engine.stop_grace() == 4.0
    engine.epoch_seconds = 60.0
    assert engine.stop_grace() == STOP_WAIT_MAX


def test_a_stop_right_after_an_epoch_began_lets_it_finish(tmp_path):
    run = make_run(tmp_path, "squared", **EPOCHS_OF_SECONDS)
    handle = launch_engine(run)
    try:
        client = EngineClient.connect(run)
        wait_until(lambda: client.call("status")["epoch"] >= 1, 120, what="a first epoch")
        epoch = client.call("status")["epoch"]
        # the next epoch has just begun: most of it is left when the stop comes
        wait_until(lambda: client.call("status")["epoch"] > epoch, 120, 0.02, "the next epoch")
        assert client.call("stop")["state"] == "stopping"
        assert handle.wait(120) == 0
        client.close()
    finally:
        kill_engine(run)
        handle.wait(30) if handle.poll() is None else None
    events = (run / rd.EVENTS_FILE).read_text()
    assert "cut short" not in events and "was dropped" not in events, events
    state = ckpt.load_checkpoint(ckpt.latest_checkpoint(run))
    rows = [json.loads(line) for line in (run / rd.METRICS_FILE).read_text().splitlines()]
    assert state["global_step"] == rows[-1]["global_step"] == rd.read_status(run)["global_step"]
    assert state["epoch"] == rows[-1]["epoch"] >= epoch + 1
    assert final_figures(load_run(run))["steps"] == rd.run_info(run).global_step
