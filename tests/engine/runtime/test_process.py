"""The real engine process (`python -m puffer_tui.engine RUN_DIR`), driven through its socket.

One engine with two multiprocessing workers serves the tests of this module in order (hello,
pause, resume, set, checkpoint, bad messages, render, stop); the crash and SIGTERM tests
start their own.
"""

import os
import signal
import stat
import time

import psutil
import pytest
import torch
from engine_harness import first_push, kill_engine, make_run, process_cpu_seconds, wait_until

from puffer_tui.app.engine_client import EngineClient, EngineCommandError
from puffer_tui.app.engine_launcher import EngineStartError, launch_engine
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.checkpoint import list_checkpoints


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    run = make_run(tmp_path_factory.mktemp("runs"), **{
        "vec.backend": "multiprocessing", "vec.num_workers": 2,
        "train.total_timesteps": 10**9})
    handle = launch_engine(run)
    client = EngineClient.connect(run)
    yield handle, client
    client.close()
    if handle.poll() is None:
        handle.process.terminate()
        handle.wait(30)


def status(client):
    return client.call("status")


def training(client, timeout=30):
    """Wait until the engine is running and its step counter moves; return the step."""
    first = wait_until(lambda: status(client)["global_step"] > 0 and status(client),
                       timeout, what="the first steps")
    return wait_until(lambda: status(client)["global_step"] > first["global_step"]
                      and status(client)["global_step"], timeout, what="steps to advance")


def test_hello_describes_the_run(engine):
    handle, client = engine
    hello = client.hello
    assert hello["protocol"] == 1 and hello["env"] == "squared"
    assert hello["pid"] == handle.pid
    assert hello["run_dir"] == str(handle.run_dir)
    assert hello["config"]["vec"]["num_envs"] == 64
    assert hello["frame_shape"] == [11, 11] and hello["num_envs"] == 64
    assert hello["palette"]["1"][0] == "@"
    fields = {f"{f['section']}.{f['name']}": f for f in hello["schema"]}
    assert fields["train.learning_rate"]["live"] and not fields["vec.num_envs"]["live"]
    assert stat.S_IMODE((handle.run_dir / rd.SOCKET_FILE).stat().st_mode) == 0o600
    # what the engine chose to train with is said once, at the start (events.log, clients)
    events = handle.run_dir / rd.EVENTS_FILE
    said = wait_until(lambda: events.exists() and "torch threads" in events.read_text()
                      and events.read_text(), 30, what="the engine's start events")
    assert "on cpu in float32, torch threads: 1 collecting, 1 learning" in said


def test_engine_has_its_own_session_and_reports_its_processes(engine):
    handle, client = engine
    assert os.getpgid(handle.pid) == handle.pid != os.getpgid(0)
    training(client)
    telemetry = first_push(client, "telemetry")
    roles = [(p["role"], p["pid"]) for p in telemetry["processes"]]
    assert roles[0] == ("engine", handle.pid)
    workers = [pid for role, pid in roles if role == "worker"]
    assert len(workers) == 2 and all(psutil.pid_exists(pid) for pid in workers)
    assert telemetry["state"] == "running" and telemetry["total_timesteps"] == 10**9
    assert set(telemetry["hyperparameters"]) >= {"train.learning_rate", "train.ent_coef"}
    assert (handle.run_dir / rd.PID_FILE).read_text().strip() == str(handle.pid)
    assert rd.run_state(handle.run_dir) == "running"


def test_pause_stops_steps_and_the_processes_go_idle(engine):
    handle, client = engine
    training(client)
    started = time.monotonic()
    assert client.call("pause")["state"] == "paused"
    acknowledged = time.monotonic() - started
    assert acknowledged < 5.0  # generous on a loaded machine; the report measures it
    step = status(client)["global_step"]
    pids = [p["pid"] for p in status(client)["processes"]]
    time.sleep(0.3)  # let the OpenMP threads stop spinning
    cpu_before = process_cpu_seconds(pids)
    time.sleep(1.5)
    cpu_used = process_cpu_seconds(pids) - cpu_before
    assert status(client)["global_step"] == step
    assert status(client)["state"] == "paused"
    # blocked, not spinning: well under a tenth of one core for engine + workers together
    assert cpu_used < 0.15, f"paused engine and workers used {cpu_used:.2f} CPU-s in 1.5 s"


def test_resume_continues(engine):
    handle, client = engine
    step = status(client)["global_step"]
    assert client.call("resume")["state"] == "running"
    wait_until(lambda: status(client)["global_step"] > step, what="steps after resume")


def test_set_changes_a_live_field_and_refuses_others(engine):
    handle, client = engine
    reply = client.call("set", key="train.learning_rate", value="0.004")
    assert reply["value"] == 0.004 and reply["applies"]
    wait_until(lambda: status(client)["hyperparameters"]["train.learning_rate"] == 0.004)
    event = first_push(client, "event", where=lambda e: "train.learning_rate" in e["text"])
    assert event is not None or "learning_rate" in (handle.run_dir / rd.EVENTS_FILE).read_text()
    for key, value, error in [
        ("vec.num_envs", 128, "applies on restart"),
        ("train.hidden_size", 64, "applies on restart"),
        ("train.ent_coef", 2.0, "out of bounds"),
        ("train.gamma", "high", "not a valid float"),
        ("train.update_epochs", 1.5, "not a valid int"),
    ]:
        with pytest.raises(EngineCommandError, match=error):
            client.call("set", key=key, value=value)
    assert status(client)["hyperparameters"]["train.ent_coef"] != 2.0


def test_checkpoint_writes_a_loadable_file(engine):
    handle, client = engine
    path = client.call("checkpoint")["path"]
    assert os.path.dirname(path) == str(handle.run_dir / rd.CHECKPOINT_DIR)
    state = torch.load(path, weights_only=True)
    assert state["global_step"] > 0 and state["config"]["env_name"] == "squared"
    assert not [p for p in os.listdir(os.path.dirname(path)) if p.endswith(".tmp")]


def test_bad_messages_get_errors_and_training_goes_on(engine):
    handle, client = engine
    step = training(client)
    for raw in (b"{nope\n", b'{"id": 1, "cmd": "dance"}\n', b'"just a string"\n',
                b'{"id": 2, "cmd": "set", "args": {"key": 5}}\n',
                b'{"id": 3, "cmd": "status", "x": "' + b"y" * (1 << 20) + b'"}\n'):
        client.send_raw(raw)
        reply = first_push(client, "reply")
        assert reply is not None and reply["ok"] is False and reply["error"]
    # a client that vanishes mid-stream does not disturb the engine either
    rude = EngineClient.connect(handle.run_dir)
    rude._sock.close()
    wait_until(lambda: status(client)["global_step"] > step, what="training to go on")
    assert status(client)["state"] == "running"


def test_render_streams_frames(engine):
    handle, client = engine
    assert client.call("render", env=5)["env"] == 5
    frame = first_push(client, "frame")
    assert frame is not None and (frame["env"], frame["height"], frame["width"]) == (5, 11, 11)
    client.call("render", env=None)
    with pytest.raises(EngineCommandError, match="render"):
        client.call("render", env=64)


def test_a_second_engine_on_a_running_run_is_refused(engine):
    handle, client = engine
    with pytest.raises(EngineStartError, match="already running"):
        launch_engine(handle.run_dir)
    assert rd.read_status(handle.run_dir)["pid"] == handle.pid
    assert status(client)["state"] == "running"


def test_stop_checkpoints_and_exits_cleanly(engine):
    handle, client = engine
    workers = [p["pid"] for p in status(client)["processes"] if p["role"] == "worker"]
    before = len(list_checkpoints(handle.run_dir))
    assert client.call("stop")["state"] == "stopping"
    assert handle.wait(30) == 0
    assert client.closed.wait(5)
    assert rd.read_status(handle.run_dir)["state"] == "stopped"
    assert rd.run_state(handle.run_dir) == "stopped"
    assert len(list_checkpoints(handle.run_dir)) == before + 1
    assert not (handle.run_dir / rd.SOCKET_FILE).exists()
    assert not (handle.run_dir / rd.PID_FILE).exists()
    wait_until(lambda: not any(psutil.pid_exists(pid) for pid in workers), 10,
               what="the workers to exit")
    assert "stopped at step" in (handle.run_dir / rd.EVENTS_FILE).read_text()


def test_engine_outlives_its_launcher_and_sigterm_checkpoints_and_stops(tmp_path):
    import subprocess
    import sys

    run = make_run(tmp_path, **{"train.total_timesteps": 10**9})
    # An app that starts the engine and then dies hard must not take the engine with it.
    launcher = subprocess.run(
        [sys.executable, "-c",
         "import os, sys\n"
         "from puffer_tui.app.engine_launcher import launch_engine\n"
         f"print(launch_engine({str(run)!r}).pid, flush=True)\n"
         "os.kill(os.getpid(), 9)\n"],
        capture_output=True, text=True, timeout=120)
    try:
        assert launcher.returncode == -signal.SIGKILL, launcher.stderr
        pid = int(launcher.stdout.split()[0])
        with EngineClient.connect(run) as client:
            training(client)
            assert client.hello["pid"] == pid
            client.call("pause")  # a paused engine blocks in its queue; signals still work
            os.kill(pid, signal.SIGTERM)
            assert client.closed.wait(30)
    finally:
        kill_engine(run)  # only does something if the test failed midway

    def gone():
        try:
            return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    wait_until(gone, 30, what="the engine to exit")
    assert rd.run_state(run) == "stopped"
    assert list_checkpoints(run)
    assert "SIGTERM received" in (run / rd.EVENTS_FILE).read_text()


def test_a_crash_reports_its_traceback_and_exits_nonzero(tmp_path):
    # Valid for the config schema, refused by the Trainer: batch smaller than agents * horizon.
    run = make_run(tmp_path, **{"train.batch_size": 512, "train.minibatch_size": 256})
    try:
        handle = launch_engine(run)
    except EngineStartError as e:  # it may die before the socket is even polled
        assert "batch_size" in str(e)
        handle = None
    if handle is not None:
        try:
            with EngineClient.connect(run, hello=False) as client:
                event = first_push(client, "event", timeout=30,
                                   where=lambda e: e["level"] == "error")
                assert event is None or "Traceback" in event["text"]
        except Exception:
            pass  # it may exit between launch and connect: the files below tell all
        assert handle.wait(30) == 1
    log = (run / rd.EVENTS_FILE).read_text()
    assert "[error] engine crashed" in log and "Traceback" in log and "batch_size" in log
    status = rd.read_status(run)
    assert status["state"] == "error" and "batch_size" in status["error"]
    assert rd.run_state(run) == "error"
    assert not (run / rd.SOCKET_FILE).exists()
