"""`puffer-tui autotune ENV`: the layouts it tries, how it picks the best, and end to end on
squared and gym:CartPole-v1 with tiny budgets (the saved preset then loads with
`train --preset`). No timing is asserted: only what was measured and written."""

import json
import subprocess
import sys

import pytest

from puffer_tui.benchmarks.autotune_layouts import (
    Layout,
    candidate_layouts,
    layout_config,
    time_vec,
)
from puffer_tui.benchmarks.autotune_run import (
    Outcome,
    Row,
    _Clock,
    _time_training,
    choose_best,
    training_candidates,
)


def autotune(*argv, timeout=120):
    return subprocess.run([sys.executable, "-m", "puffer_tui.app.cli", "autotune", *argv],
                          capture_output=True, text=True, timeout=timeout)


def test_layouts_cover_workers_envs_per_worker_batch_and_copying():
    layouts = candidate_layouts([64], cores=2)
    assert layouts[0] == Layout("serial", 64)
    mp = {(lay.num_workers, lay.batch_size, lay.zero_copy) for lay in layouts[1:]}
    assert mp == {(w, b, zc) for w in (2, 4) for b, zc in ((0, True), (32, True), (32, False))}
    labels = [lay.label for lay in layouts]
    assert "serial 64" in labels and "4 x 16 overlap gather" in labels and "2 x 32 sync" in labels
    # no more workers than cores: this process may step one block itself
    inline = {(lay.num_workers, lay.batch_size) for lay in layouts if lay.inline}
    assert inline == {(2, 0), (2, 32)} and "2 x 32 overlap inline" in labels


def test_layouts_only_where_the_envs_divide():
    assert candidate_layouts([1], cores=2) == [Layout("serial", 1)]
    # 3 envs: 3 workers divide them, but an odd count cannot be split into two halves
    assert candidate_layouts([3], cores=2) == [Layout("serial", 3),
                                               Layout("multiprocessing", 3, 3, 0, True)]
    assert {lay.num_envs for lay in candidate_layouts([8, 16], cores=1)} == {8, 16}


@pytest.mark.parametrize("layout", [Layout("serial", 8),
                                    Layout("multiprocessing", 8, 2, 4, False)])
def test_a_layout_is_timed_through_the_vec_env_the_trainer_builds(layout):
    config = layout_config("squared", {"env.size": "5", "train.minibatch_size": "512"}, layout)
    assert (config.vec.backend, config.vec.batch_size) == (layout.backend, layout.batch_size)
    timing = time_vec(config, 0.3)
    assert timing.sps > 0 and timing.startup > 0
    # the memory an env holds is measured where the envs live: in this process (serial)
    assert (timing.bytes_per_env is not None) == (layout.backend == "serial")


def test_training_rates_are_the_real_trainers_epochs():
    from puffer_tui.benchmarks.autotune_run import _train_epochs

    config = layout_config("squared", {"env.size": "5", "vec.num_envs": "16",
                                       "train.minibatch_size": "512", "train.hidden_size": "16",
                                       "train.torch_threads": "1",
                                       "train.total_timesteps": "1000000000"},
                           Layout("serial", 16))
    rates, counted = _train_epochs(config, 0.2)
    assert rates and all(r > 0 for r in rates) and counted >= 0.2


def _row(backend, vec, train=None, workers=2):
    return Row(Layout(backend, 64, 1 if backend == "serial" else workers), vec, train)


def test_best_is_the_fastest_trained_but_serial_unless_clearly_beaten():
    serial, mp = _row("serial", 100.0, 100.0), _row("multiprocessing", 300.0, 103.0)
    assert choose_best([serial, mp]) is serial  # 3% faster in training: within the noise
    mp.train_sps = 130.0
    assert choose_best([serial, mp]) is mp
    untrained = [_row("serial", 100.0), _row("multiprocessing", 200.0)]
    assert choose_best(untrained) is untrained[1]  # nothing trained: by vec rate
    assert choose_best([Row(Layout("serial", 64), note="failed: x")]) is None


def test_training_candidates_are_the_fastest_of_each_mode_serial_second():
    rows = [_row("serial", 10.0), _row("multiprocessing", 50.0), _row("multiprocessing", 45.0),
            Row(Layout("multiprocessing", 64, 2, 32, True), 40.0),
            Row(Layout("multiprocessing", 64, 4, 32, False), 30.0)]
    assert [r.vec_sps for r in training_candidates(rows)] == [50.0, 10.0, 40.0]
    assert [r.vec_sps for r in training_candidates(rows, 2)] == [50.0, 10.0]
    rows[0].vec_sps = 99.0  # serial fastest: then the fastest sync and overlapped ones
    assert [r.vec_sps for r in training_candidates(rows)] == [99.0, 50.0, 40.0]
    rows[3].vec_sps = 60.0
    assert [r.vec_sps for r in training_candidates(rows)] == [99.0, 60.0, 50.0]


def _time_training_with(monkeypatch, seconds):
    """_time_training over three measured layouts of 64 squared envs, with `seconds` left and
    a stand-in for the Trainer's timing (instant: sync workers train 2x as fast as serial,
    overlapped ones 2.5x)."""
    calls = []

    def fake_epochs(config, seconds):
        calls.append(f"{config.vec.backend} {config.vec.batch_size}")
        sps = {"serial": 1000.0, "multiprocessing": 2000.0}[config.vec.backend]
        sps *= 1.25 if config.vec.batch_size else 1.0
        return [sps / 2, sps, sps], seconds  # one epoch slowed by others' load

    monkeypatch.setattr("puffer_tui.benchmarks.autotune_run._train_epochs", fake_epochs)
    rows = [Row(Layout("serial", 64), 3e6, startup=0.01),
            Row(Layout("multiprocessing", 64, 2, 0, True), 5e6, startup=0.3),
            Row(Layout("multiprocessing", 64, 2, 32, True), 4e6, startup=0.3)]
    out = Outcome("squared", 2, rows=rows)
    _time_training(out, "squared", {"vec.num_envs": "64"}, _Clock(seconds),
                   lambda *a, **k: None)
    return out, calls


def test_training_is_timed_in_rounds_taken_in_turn(monkeypatch):
    out, calls = _time_training_with(monkeypatch, 30.0)
    assert calls == ["multiprocessing 0", "serial 0", "multiprocessing 32"] * 2
    assert [r.train_sps for r in out.rows] == [1000.0, 2000.0, 2500.0]  # the slow epochs left out
    assert choose_best(out.rows) is out.rows[2]


def test_short_of_time_training_drops_rounds_then_layouts_never_to_one(monkeypatch):
    out, calls = _time_training_with(monkeypatch, 4.0)  # room for two first timings only
    assert calls == ["multiprocessing 0", "serial 0"]
    assert out.rows[2].train_sps is None and not out.notes
    out, calls = _time_training_with(monkeypatch, 1.0)
    assert calls == [] and "no time left to time training" in out.notes[0]
    assert choose_best(out.rows) is out.rows[1]  # by vec rate then


@pytest.mark.parametrize("argv, message", [
    (["nosuchenv"], "unknown env 'nosuchenv'"),
    (["gym:NoSuchId-v0"], "unknown Gymnasium id"),
    (["squared", "--seconds", "0"], "--seconds"),
    (["squared", "--save", "/nonexistent-dir/p.toml"], "does not exist"),
    (["squared", "--num-envs", "8,x"], "--num-envs"),
    (["squared", "--num-envs", "8,1024"], "--num-envs 8: train.minibatch_size"),
])
def test_bad_input_is_one_line_and_exit_2(argv, message):
    result = autotune(*argv)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.startswith("puffer-tui autotune: error:")


def _load_with_train_preset(env, preset, runs):
    """The config `puffer-tui train ENV --preset FILE` writes for its run (no engine started)."""
    from puffer_tui.app.cli import build_parser
    from puffer_tui.app.commands.train import prepare_run
    from puffer_tui.engine.shared import config as cfg
    from puffer_tui.engine.shared import run_dir as rd

    args = build_parser().parse_args(["train", env, "--preset", str(preset), "--headless",
                                      "--runs-dir", str(runs)])
    args.extra = []
    run_dir, resuming = prepare_run(args)
    assert not resuming
    return cfg.load(run_dir / rd.CONFIG_FILE)


def test_squared_end_to_end_saves_a_preset_train_accepts(tmp_path):
    preset = tmp_path / "squared-fast.toml"
    result = autotune("squared", "--seconds", "2", "--vec.num-envs", "64", "--env.size", "9",
                      "--train.torch-threads", "1", "--save", str(preset), "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["env"] == "squared" and out["saved"] == str(preset)
    assert out["us_per_agent_step"] > 0 and out["bytes_per_env"] >= 0
    backends = {row["backend"] for row in out["layouts"]}
    assert backends == {"serial", "multiprocessing"}
    assert all(row["vec_sps"] or row["note"] for row in out["layouts"])
    best = out["best"]
    text = preset.read_text()
    assert 'env_name = "squared"' in text and "size = 9" in text
    config = _load_with_train_preset("squared", preset, tmp_path / "runs")
    assert config.env["size"] == 9
    for key in ("backend", "num_envs", "num_workers", "batch_size", "zero_copy"):
        assert getattr(config.vec, key) == best[key], key


def test_gym_cartpole_end_to_end_with_a_table(tmp_path):
    preset = tmp_path / "cartpole.toml"
    result = autotune("gym:CartPole-v1", "--seconds", "3", "--vec.num-envs", "8",
                      "--train.horizon", "32", "--train.minibatch-size", "256",
                      "--train.torch-threads", "1", "--save", str(preset))
    assert result.returncode == 0, result.stderr
    assert "autotune gym:CartPole-v1" in result.stdout and "serial 8" in result.stdout
    assert "2 x 4 overlap" in result.stdout and "best" in result.stdout
    assert "--preset" in result.stdout
    config = _load_with_train_preset("gym:CartPole-v1", preset, tmp_path / "runs")
    assert config.vec.num_envs == 8
