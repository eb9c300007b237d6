"""Real sweeps of bandit through the command line: the study, the trials' runs, the driver's
socket, a SIGKILLed driver resumed, and two drivers sharing one SQLite study."""

from __future__ import annotations

import os
import signal

import pytest
from sweep_harness import (
    ONE_THREAD,
    TINY,
    assert_shared,
    by_state,
    cli,
    cli_background,
    engine_starts,
    kill_everything,
    load_study,
    no_live_engine,
    wait_until,
)

from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import exit_codes
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared import sweep_settings as st
from puffer_tui.engine.shared.sweep_control import request


@pytest.fixture
def root(tmp_path):
    yield tmp_path
    kill_everything(tmp_path)


@pytest.mark.slow
def test_headless_sweep_completes_with_every_trial_an_ordinary_run(root):
    done = cli("sweep", "bandit", "--trials", "8", "--parallel", "2", "--headless",
               "--study", "s8", "--runs-dir", str(root), "--seed", "3", *TINY)
    assert done.returncode == 0, done.stdout + done.stderr
    sweep_dir = root / "sweeps" / "s8"
    study = load_study(sweep_dir)
    states = by_state(study)
    assert set(states) <= {"COMPLETE", "PRUNED"}, {s: len(t) for s, t in states.items()}
    assert len(study.trials) == 8
    run_dirs = [t.user_attrs["run_dir"] for t in study.trials]
    assert len(set(run_dirs)) == 8
    assert sorted(map(str, (sweep_dir / st.TRIALS_DIR).iterdir())) == sorted(run_dirs)
    for trial in study.trials:
        run = rd.Path(trial.user_attrs["run_dir"])
        config = cfg.load(run / rd.CONFIG_FILE)
        assert engine_starts(run) == 1
        assert config.train.torch_threads == max(1, len(os.sched_getaffinity(0)) // 2)
        for key, value in trial.params.items():  # the trial ran what the study asked
            section, name = key.split(".")
            assert getattr(getattr(config, section), name) == value
        expected = "finished" if trial.state.name == "COMPLETE" else "stopped"
        assert rd.run_state(run) == expected
    best = study.best_trial
    assert f"best: trial {best.number:>3} COMPLETE" in done.stdout
    assert "sweep s8 finished: 8 complete" in done.stdout or "pruned" in done.stdout
    assert no_live_engine(root) and not (sweep_dir / st.SOCKET_FILE).exists()

    preset = cli("sweep", "best", "s8", "--runs-dir", str(root))
    assert preset.returncode == 0, preset.stderr
    (root / "best.toml").write_text(preset.stdout)
    from puffer_tui.app.cli import build_parser
    from puffer_tui.app.commands.train import prepare_run

    args = build_parser().parse_args(["train", "--preset", str(root / "best.toml"),
                                      "--runs-dir", str(root / "again")])
    args.extra = []
    again = cfg.load(prepare_run(args)[0] / rd.CONFIG_FILE)
    for key, value in best.params.items():
        section, name = key.split(".")
        assert getattr(getattr(again, section), name) == value
    assert again.train.total_timesteps == 12288  # the sweep's fixed flags come along


@pytest.mark.slow
def test_the_driver_socket_serves_hello_and_status_ctrl_c_stops_and_resume_finishes(root):
    watcher = cli_background("sweep", "bandit", "--trials", "2", "--parallel", "2",
                             "--headless", "--study", "sock",
                             "--runs-dir", str(root), *TINY)
    sweep_dir = root / "sweeps" / "sock"
    sock = sweep_dir / st.SOCKET_FILE
    wait_until(lambda: sock.exists(), what="the driver's socket")
    hello = request(sock, "hello")
    assert hello["ok"] and hello["kind"] == "sweep" and hello["sweep"] == "sock"
    status = wait_until(lambda: (s := request(sock, "status"))["counts"].get("RUNNING") and s,
                        what="a running trial")
    assert status["target"] == 2 and status["trials"][0]["run_dir"]
    refused = request(sock, "checkpoint")  # an engine's command, not a sweep driver's
    assert not refused["ok"] and "a sweep driver takes hello, status, stop" in refused["error"]
    watcher.send_signal(signal.SIGINT)  # Ctrl-C: the watcher asks the driver to stop
    out, _ = watcher.communicate(timeout=120)
    assert watcher.returncode == exit_codes.STOPPED and "stopping the sweep" in out, out
    assert "stopped early (stopped by a client)" in out, out
    study = load_study(sweep_dir)
    interrupted = [t for t in study.trials if t.state.name == "FAIL"]
    assert interrupted and all(t.user_attrs["error"].startswith("interrupted")
                               for t in interrupted)
    assert no_live_engine(root)

    resumed = cli("sweep", "--resume", "sock", "--headless", "--runs-dir", str(root))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    states = by_state(load_study(sweep_dir))
    assert len(states.get("COMPLETE", [])) + len(states.get("PRUNED", [])) == 2


@pytest.mark.slow
def test_a_sigkilled_driver_resumes_without_running_any_trial_twice(root):
    watcher = cli_background("sweep", "bandit", "--trials", "4", "--parallel", "2",
                             "--headless", "--study", "k", "--runs-dir", str(root), *TINY)
    sweep_dir = root / "sweeps" / "k"
    wait_until(lambda: (sweep_dir / st.SOCKET_FILE).exists(), what="the driver")

    def finished_and_running():
        states = by_state(load_study(sweep_dir))
        done = states.get("COMPLETE", []) + states.get("PRUNED", [])
        return done and states.get("RUNNING") and (done, states["RUNNING"])

    done_before, running = wait_until(finished_and_running, what="a done and a running trial")
    pid = int((sweep_dir / st.PID_FILE).read_text())
    os.kill(pid, signal.SIGKILL)
    watcher.communicate(timeout=60)
    before = {t.number: (t.state.name, t.values) for t in done_before}

    resumed = cli("sweep", "--resume", "k", "--headless", "--runs-dir", str(root))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    study = load_study(sweep_dir)
    states = by_state(study)
    assert len(states["COMPLETE"]) + len(states.get("PRUNED", [])) == 4
    for number, (state, values) in before.items():  # finished trials were not touched
        assert (study.trials[number].state.name, study.trials[number].values) == (state, values)
    for trial in running:  # lost with their driver, recorded, not counted
        lost = study.trials[trial.number]
        assert lost.state.name in ("FAIL", "COMPLETE", "PRUNED")
        if lost.state.name == "FAIL":
            assert "driver" in lost.user_attrs["error"] and "died" in lost.user_attrs["error"]
    run_dirs = [t.user_attrs["run_dir"] for t in study.trials if "run_dir" in t.user_attrs]
    assert len(run_dirs) == len(set(run_dirs))
    assert all(engine_starts(rd.Path(r)) == 1 for r in run_dirs)
    assert no_live_engine(root)


@pytest.mark.slow
def test_two_drivers_on_one_sqlite_study_share_the_work(root):
    first = cli_background("sweep", "bandit", "--trials", "3", "--headless", "--study", "two",
                           "--runs-dir", str(root / "a"), *TINY, *ONE_THREAD)
    db = root / "a" / "sweeps" / "two" / st.STUDY_FILE
    wait_until((db.parent / st.SOCKET_FILE).exists, what="the first driver")
    second = cli("sweep", "bandit", "--trials", "3", "--headless", "--study", "two",
                 "--storage", f"sqlite:///{db}", "--runs-dir", str(root / "b"),
                 *TINY, *ONE_THREAD)
    out, _ = first.communicate(timeout=240)
    assert first.returncode == 0, out
    assert second.returncode == 0, second.stdout + second.stderr
    assert_shared(load_study(root / "a" / "sweeps" / "two"), 3)
    assert no_live_engine(root)


@pytest.mark.slow
def test_the_headless_watcher_is_pushed_snapshots_and_asks_no_status(root, monkeypatch, capsys):
    """The watcher subscribes to the driver, as the sweep view does: every trial's line comes
    from a pushed snapshot, and it sends no `status` request on a timer."""
    from puffer_tui.app import cli as app_cli
    from puffer_tui.app.commands import sweep_watch

    asked = []
    real_request = sweep_watch.request

    def recorded(sock, cmd, *args, **kwargs):
        asked.append(cmd)
        return real_request(sock, cmd, *args, **kwargs)

    monkeypatch.setattr(sweep_watch, "request", recorded)
    code = app_cli.main(["sweep", "bandit", "--trials", "3", "--parallel", "1", "--headless",
                         "--study", "pushed", "--runs-dir", str(root), "--seed", "3", *TINY])
    out = capsys.readouterr().out
    assert code == 0, out
    assert asked == [], asked
    assert sum(1 for line in out.splitlines() if line.startswith("trial ")) >= 3, out
    assert any("RUNNING" in line for line in out.splitlines() if line.startswith("trial ")), out
    assert "sweep pushed finished" in out
