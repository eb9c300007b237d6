"""`puffer-tui bench learn`: the zoo's settings as SB3 arguments, the report's arithmetic on
synthetic curves, the CLI's refusals, the process guard, and one tiny real run of both sides
(its figures are checked for shape and consistency, never for a speed or a score)."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from puffer_tui.benchmarks import learn
from puffer_tui.benchmarks import learn_report as rep
from puffer_tui.benchmarks.learn_runs import run_guarded
from puffer_tui.benchmarks.learn_zoo_settings import ENVS, ZOO_PPO, default_steps

sb3 = pytest.importorskip("stable_baselines3", reason='pip install "puffer-tui[bench]"')
from puffer_tui.benchmarks.learn_sb3 import make_venv, translate  # noqa: E402


def bench(*argv, timeout=120):
    return subprocess.run([sys.executable, "-m", "puffer_tui.app.cli", "bench", "learn", *argv],
                          capture_output=True, text=True, timeout=timeout)


# --- the zoo's settings -> SB3 arguments ---------------------------------------------------

def test_linear_schedules_decay_from_the_zoo_value_to_zero():
    setup = translate(ZOO_PPO["CartPole-v1"])
    lr, clip = setup["ppo"]["learning_rate"], setup["ppo"]["clip_range"]
    assert lr(1.0) == pytest.approx(1e-3) and lr(0.5) == pytest.approx(5e-4) and lr(0.0) == 0
    assert clip(1.0) == pytest.approx(0.2) and clip(0.25) == pytest.approx(0.05)
    assert setup["n_envs"] == 8 and setup["n_timesteps"] == 100_000
    assert setup["normalize"] is None  # CartPole's entry has no `normalize`
    # what is not a PPO argument never reaches PPO(...)
    assert not set(setup["ppo"]) & {"n_envs", "n_timesteps", "normalize", "policy",
                                    "env_wrapper", "frame_stack"}
    # a constant stays a constant (SB3 makes its own constant schedule)
    assert translate(ZOO_PPO["Pendulum-v1"])["ppo"]["learning_rate"] == 1e-3


def test_normalize_takes_the_algorithm_gamma_as_the_zoo_does():
    assert translate(ZOO_PPO["HalfCheetah-v4"])["normalize"] == {"gamma": 0.98}
    assert translate(ZOO_PPO["Hopper-v4"])["normalize"] == {"gamma": 0.999}
    assert translate(ZOO_PPO["MountainCarContinuous-v0"])["normalize"] == {"gamma": 0.9999}
    # the zoo's string form names what to normalize
    entry = {**ZOO_PPO["CartPole-v1"], "normalize": "{'norm_obs': False, 'norm_reward': True}"}
    assert translate(entry)["normalize"] == {"norm_obs": False, "norm_reward": True,
                                             "gamma": 0.98}


def test_policy_kwargs_become_objects():
    import torch.nn as nn

    kwargs = translate(ZOO_PPO["HalfCheetah-v4"])["ppo"]["policy_kwargs"]
    assert kwargs == {"log_std_init": -2, "ortho_init": False, "activation_fn": nn.ReLU,
                      "net_arch": {"pi": [256, 256], "vf": [256, 256]}}
    mcc = translate(ZOO_PPO["MountainCarContinuous-v0"])["ppo"]
    assert mcc["policy_kwargs"] == {"log_std_init": -3.29, "ortho_init": False}
    assert mcc["use_sde"] is True and mcc["n_steps"] == 8 and mcc["batch_size"] == 256


def test_wrappers_and_frame_stack_of_atari_and_minigrid():
    atari = translate(ZOO_PPO["atari"])
    assert atari["env_wrapper"] == "stable_baselines3.common.atari_wrappers.AtariWrapper"
    assert atari["frame_stack"] == 4 and atari["policy"] == "CnnPolicy"
    minigrid = translate(ZOO_PPO[ENVS["MiniGrid-DoorKey-5x5-v0"].zoo])
    assert minigrid["env_wrapper"] == "minigrid.wrappers.FlatObsWrapper"
    assert minigrid["normalize"] == {"gamma": 0.99} and minigrid["n_envs"] == 8


def test_translated_settings_build_the_model_the_zoo_would():
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecNormalize

    env = ENVS["MountainCarContinuous-v0"]
    setup = translate(ZOO_PPO[env.zoo])
    venv = make_venv(env, setup, setup["n_envs"], 0, True)
    try:
        model = PPO(setup["policy"], venv, seed=0, device="cpu", **setup["ppo"])
        assert isinstance(model.get_env(), VecNormalize) and model.get_env().gamma == 0.9999
        assert model.n_envs == 1 and model.n_steps == 8 and model.batch_size == 256
        assert model.use_sde and float(model.policy.log_std.mean()) == pytest.approx(-3.29)
        assert model.ent_coef == pytest.approx(0.00429) and model.max_grad_norm == 5
    finally:
        venv.close()


def test_default_budgets_are_the_zoo_n_timesteps():
    assert default_steps(ENVS["CartPole-v1"]) == 100_000
    assert default_steps(ENVS["Acrobot-v1"]) == 1_000_000
    assert default_steps(ENVS["MountainCarContinuous-v0"]) == 20_000
    assert default_steps(ENVS["HalfCheetah-v5"]) == 1_000_000
    # no zoo settings for MPE: SB3 runs PettingZoo's tutorial's, at bench learn's own budget
    assert ENVS["simple_spread"].zoo == "pettingzoo-tutorial"
    assert default_steps(ENVS["simple_spread"]) == 500_000


# --- the report's arithmetic ---------------------------------------------------------------

def test_return_at_a_mark_takes_whole_chunks_back_to_the_window():
    chunks = [[100, 10.0, 5], [200, None, 0], [300, 30.0, 10], [400, 40.0, 10]]
    assert rep.return_at(chunks, 50, window=5) is None  # nothing finished yet
    assert rep.return_at(chunks, 150, window=5) == (10.0, 5)
    assert rep.return_at(chunks, 250, window=5) == (10.0, 5)  # an empty chunk is skipped
    # 400: the last chunk alone holds 10 >= window 10
    assert rep.return_at(chunks, 400, window=10) == (40.0, 10)
    # window 15: 40 x10 + 30 x10 (whole chunks): 35 over 20 episodes
    assert rep.return_at(chunks, 400, window=15) == (35.0, 20)
    # chunks after the mark never count; fewer than the window: all so far
    assert rep.return_at(chunks, 399, window=100) == pytest.approx((350.0 / 15, 15))


def test_first_rise_is_measured_from_the_first_full_window():
    chunks = [[10, -21.0, 2], [20, -21.0, 2], [30, -20.5, 2], [40, -19.0, 2], [50, -18.0, 2]]
    # base: the first window of 4 episodes, at step 20 (-21); +1 first at step 50:
    # window at 40 = (-20.5 - 19) / 2 = -19.75 (rise 1.25 >= 1)
    assert rep.first_rise(chunks, 1.0, window=4) == 40
    assert rep.first_rise(chunks, 5.0, window=4) is None


def _run(side, seed, finals, evaluation, wall, cpu, steps=1000):
    chunks = [[250, finals[0], 10], [500, finals[1], 10], [1000, finals[2], 10]]
    return {"side": side, "seed": seed, "chunks": chunks, "eval": {"episode_return": evaluation},
            "wall_s": wall, "cpu_s": cpu, "sps": steps / wall, "steps": steps}


def test_medians_spreads_and_ours_against_sb3():
    ours = [_run("ours", 0, (1, 2, 3), 10.0, 10.0, 20.0), _run("ours", 1, (2, 4, 9), 30.0,
                                                                 20.0, 30.0),
            _run("ours", 2, (3, 6, 6), 20.0, 40.0, 10.0),
            {"side": "ours", "seed": 3, "chunks": [], "error": "crashed", "wall_s": 1.0}]
    theirs = [_run("sb3", 0, (0, 0, 1), 5.0, 100.0, 200.0),
              _run("sb3", 1, (0, 0, 2), 15.0, 300.0, 100.0)]
    s_ours = rep.summarize(ours, 1000, window=10)
    s_sb3 = rep.summarize(theirs, 1000, window=10)
    assert s_ours["seeds"] == 3 and s_ours["failed"] == 1  # a failed run is counted apart
    stopped = {"side": "ours", "seed": 4, "chunks": [], "error": "killed", "stopped": "by hand"}
    again = rep.summarize([*ours, stopped], 1000, window=10)
    assert (again["failed"], again["stopped"]) == (1, 1)  # stopped for time: not a failure
    assert s_ours["return@0.25"] == {"median": 2, "min": 1, "max": 3, "n": 3}
    assert s_ours["return@1"] == {"median": 6, "min": 3, "max": 9, "n": 3}
    assert s_ours["eval"]["median"] == 20.0 and s_ours["wall_s"]["median"] == 20.0
    assert s_ours["cpu_ms_per_step"]["median"] == pytest.approx(20.0)
    assert s_sb3["return@1"]["median"] == pytest.approx(1.5)  # an even count: the mean of two
    # 100% is the end of a run that passed its budget; 50% stays at the budget's half
    late = _run("ours", 0, (1, 2, 3), 1.0, 1.0, 1.0)
    late["chunks"].append([1100, 50.0, 10])
    assert rep.summarize([late], 1000, window=10)["return@1"]["median"] == 50.0
    assert rep.summarize([late], 1000, window=10)["return@0.5"]["median"] == 2.0
    c = rep.compare(s_ours, s_sb3)
    assert c["return@1_diff"] == pytest.approx(4.5) and c["eval_diff"] == pytest.approx(10.0)
    assert c["return@1_at_least_sb3"] is True
    assert c["wall_s_ratio"] == pytest.approx(0.1) and c["cpu_s_ratio"] == pytest.approx(20 / 150)
    assert c["sps_ratio"] == pytest.approx(s_ours["sps"]["median"] / s_sb3["sps"]["median"])
    table = rep.markdown({"envs": {"X-v0": {"steps": 1000, "summary": {
        "ours": s_ours, "sb3": s_sb3, "compare": c}}}})
    assert "| X-v0 (1,000) | puffer-tui (3 seeds, 1 failed) | 2.0 (1.0..3.0) |" in table
    assert "+4.5" in table and "0.10x" in table


def test_sb3_runs_of_an_earlier_json_are_adopted_only_at_the_same_budget():
    earlier = {"steps": 1000, "runs": [{"side": "sb3", "seed": 0, "started": "2026-11-20 10:00"},
                                       {"side": "ours", "seed": 0}]}
    entry = {"steps": 1000, "runs": []}
    learn._adopt_peer(entry, earlier, 1000)
    assert [r["side"] for r in entry["runs"]] == ["sb3"]
    assert entry["sb3_measured"] == ["2026-11-20"]
    other = {"steps": 2000, "runs": []}
    learn._adopt_peer(other, earlier, 2000)
    assert other["runs"] == []


def _saved(path, steps, runs):
    data = {"date": "2026-11-20 10:00:00 +0000", "commit": "abc1234", "window": 10,
            "machine": {"cpu": "test cpu", "cores": 2}, "marks": list(rep.MARKS),
            "envs": {"CartPole-v1": {"steps": steps, "runs": runs}}}
    path.write_text(json.dumps({"bench_learn": data}))
    return str(path)


def test_report_merges_earlier_outputs_env_by_env(tmp_path):
    ours = [_run("ours", s, (1, 2, 3 + s), 10.0, 10.0, 20.0) for s in range(2)]
    theirs = [_run("sb3", 0, (0, 0, 1), 5.0, 100.0, 200.0)]
    a = _saved(tmp_path / "a.json", 1000, ours)
    b = _saved(tmp_path / "b.json", 1000, theirs)
    c = _saved(tmp_path / "c.json", 2000, theirs)
    merged = tmp_path / "merged.json"
    result = bench("--report", a, "--report", b, "--report", c, "--json", str(merged))
    assert result.returncode == 0, result.stderr
    envs = json.loads(merged.read_text())["bench_learn"]["envs"]
    assert [r["side"] for r in envs["CartPole-v1"]["runs"]] == ["ours", "ours", "sb3"]
    summary = envs["CartPole-v1"]["summary"]
    assert summary["ours"]["return@1"]["median"] == pytest.approx(3.5)
    assert summary["compare"]["return@1_diff"] == pytest.approx(2.5)
    assert list(envs) == ["CartPole-v1", "CartPole-v1 @ 2,000"]  # another budget: apart
    assert "| CartPole-v1 (1,000) | puffer-tui (2 seeds) |" in result.stdout
    # FILE:SIDE takes one side's runs only (ours rerun on a newer commit beside SB3's)
    result = bench("--report", a + ":sb3", "--report", b, "--json", str(merged))
    assert result.returncode == 0, result.stderr
    envs = json.loads(merged.read_text())["bench_learn"]["envs"]
    assert [r["side"] for r in envs["CartPole-v1"]["runs"]] == ["sb3"]


def test_report_takes_chosen_envs_from_each_file_and_counts_a_run_once(tmp_path):
    old_ours = [_run("ours", s, (0, 0, 1), 10.0, 10.0, 20.0) for s in range(2)]
    theirs = [{**_run("sb3", 0, (0, 0, 1), 5.0, 100.0, 200.0), "started": "2026-11-20 10:00"}]
    first = _saved(tmp_path / "first.json", 1000, old_ours + theirs)
    # ours rerun on a newer commit with --peer-json first.json: SB3's run is in both files
    rerun = _saved(tmp_path / "rerun.json", 1000,
                   [{**_run("ours", s, (1, 2, 5), 10.0, 10.0, 20.0), "commit": "def5678"}
                    for s in range(2)] + theirs)
    data = json.loads(Path(first).read_text())
    data["bench_learn"]["envs"]["Pendulum-v1"] = {"steps": 1000, "runs": theirs}
    Path(first).write_text(json.dumps(data))
    merged = tmp_path / "merged.json"
    result = bench("--report", first + "@Pendulum-v1", "--report", rerun, "--report", first,
                   "--json", str(merged))
    assert result.returncode == 0, result.stderr
    envs = json.loads(merged.read_text())["bench_learn"]["envs"]
    assert list(envs) == ["CartPole-v1", "Pendulum-v1"]  # the benchmark's order
    runs = envs["CartPole-v1"]["runs"]  # rerun's 2 + SB3's once + first's old ours (no @)
    assert [r["side"] for r in runs] == ["ours", "ours", "sb3", "ours", "ours"]
    result = bench("--report", first + ":sb3@Pendulum-v1,CartPole-v1", "--report", rerun,
                   "--json", str(merged))
    assert result.returncode == 0, result.stderr
    envs = json.loads(merged.read_text())["bench_learn"]["envs"]
    runs = envs["CartPole-v1"]["runs"]
    assert [r["side"] for r in runs] == ["sb3", "ours", "ours"]  # SB3's run counted once
    assert envs["CartPole-v1"]["summary"]["ours"]["return@1"]["median"] == pytest.approx(5.0)
    assert json.loads(merged.read_text())["bench_learn"]["reported_from"][0].endswith(
        "first.json:sb3@Pendulum-v1,CartPole-v1")
    # the header dates the runs reported, not the first file
    assert "bench learn, 2026-11-20 10:00, commit def5678," in result.stdout


def test_a_peer_measured_after_ours_alone_is_named_by_the_settings_it_ran(tmp_path):
    def saved(path, entry):
        data = {"date": "2026-11-20 10:00:00 +0000", "commit": "abc1234", "window": 10,
                "machine": {"cpu": "test cpu", "cores": 2}, "marks": list(rep.MARKS),
                "envs": {"simple_spread": {"steps": 1000, **entry}}}
        path.write_text(json.dumps({"bench_learn": data}))
        return str(path)

    # ours from before simple_spread had a peer; SB3's runs later, with PettingZoo's settings
    ours = saved(tmp_path / "ours.json", {"zoo": None, "no_peer": "no peer", "runs": [
        _run("ours", 0, (1, 2, 3), 10.0, 10.0, 20.0)]})
    theirs = saved(tmp_path / "sb3.json", {"zoo": "pettingzoo-tutorial", "runs": [
        _run("sb3", 0, (0, 1, 2), 5.0, 100.0, 200.0)]})
    result = bench("--report", ours, "--report", theirs)
    assert result.returncode == 0, result.stderr
    assert "| SB3 + PettingZoo tutorial (1 seed) |" in result.stdout
    assert "no peer" not in result.stdout


# --- the command line ----------------------------------------------------------------------

@pytest.mark.parametrize("argv, words", [
    (("Nope-v0",), "unknown env 'Nope-v0'"),
    (("--seeds", "0"), "--seeds must be >= 1"),
    (("--steps", "0"), "--steps must be a whole number"),
    (("--steps", "10.5"), "--steps must be a whole number"),
    (("--eval-episodes", "-1"), "--eval-episodes must be >= 0"),
    (("--peer-json", "x.json"), "--peer-json goes with --side ours"),
    (("--side", "ours", "--peer-json", "/nonexistent/x.json"), "no such file"),
    (("--report", "/nonexistent/x.json"), "no such file"),
    (("--report", sys.executable, "--side", "ours"), "--report runs nothing"),
    (("--report", "x.json@Nope-v0"), "unknown env 'Nope-v0' after @"),
    (("--report", "x.json@CartPole-v1:ours"), "the side goes before the envs: FILE:SIDE@ENV"),
])
def test_bad_input_is_one_line_and_exit_2(argv, words, tmp_path):
    result = bench(*argv, "--work-dir", str(tmp_path / "work"))
    assert result.returncode == 2, result.stderr
    assert words in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "work").exists()  # refused before anything was created


def test_a_missing_package_skips_the_env_naming_the_extra(monkeypatch):
    real = learn.importlib.util.find_spec
    monkeypatch.setattr(learn.importlib.util, "find_spec",
                        lambda name: None if name == "mujoco" else real(name))
    assert learn._missing(ENVS["Hopper-v5"]) == 'needs mujoco: pip install "puffer-tui[mujoco]"'
    assert learn._missing(ENVS["CartPole-v1"]) is None


@pytest.mark.parametrize("flag, threads", [((), 1), (("--sb3-threads", "3"), 3)])
def test_sb3_learns_on_as_many_torch_threads_as_ours(monkeypatch, tmp_path, flag, threads):
    """SB3 gets the threads of ours' preset (CartPole-v1: one), not one per free core, unless
    --sb3-threads says: on a 2-core box two threads slowed SB3's small MLPs down, a gap of the
    benchmark's making."""
    import argparse

    from puffer_tui.benchmarks import learn_runs

    given = []

    def sb3_run(env, seed, steps, work, timeout, threads, device):
        given.append((threads, device))
        return {"side": "sb3", "seed": seed, "chunks": [], "error": "not run in this test"}

    monkeypatch.setattr(learn_runs, "run_sb3", sb3_run)
    parser = argparse.ArgumentParser()
    learn.add_arguments(parser)
    args = parser.parse_args(["CartPole-v1", "--side", "sb3", "--seeds", "1", "--work-dir",
                              str(tmp_path / "work"), *flag])
    learn.run(args)
    assert given == [(threads, "cpu")]  # CartPole-v1's preset learns on the CPU
    assert learn_runs.ours_torch_threads(ENVS["CartPole-v1"]) == 1


def test_sb3_learns_on_the_device_ours_preset_picks(monkeypatch):
    """The SB3 side learned on the CPU always, so on a GPU machine Pong's CNN compared our GPU
    with its CPU. It takes ours' preset's device now: "cpu" for the small MLPs, CUDA for
    Atari's CNN where torch sees a GPU."""
    pytest.importorskip("ale_py", reason='pip install "puffer-tui[atari]"')
    import torch

    from puffer_tui.benchmarks.learn_runs import ours_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert ours_device(ENVS["CartPole-v1"]) == "cpu"
    assert ours_device(ENVS["Pong"]) == "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert ours_device(ENVS["Pong"]) == "cpu"


def test_an_sb3_run_killed_at_its_time_limit_keeps_its_curve(tmp_path):
    """learn_sb3 rewrites progress.json while it trains; a run past --run-timeout is killed
    and reported as an error, with the returns of the rollouts it finished (as ours keeps its
    metrics): a long Pong run cut short still shows whether its return rose."""
    from puffer_tui.benchmarks import learn_runs

    result = learn_runs.run_sb3(ENVS["CartPole-v1"], 0, 5_000_000, tmp_path, 25.0, 1)
    assert result["timed_out"] and "timed out" in result["error"]
    assert result["chunks"], "the curve up to the kill was lost"
    assert result["chunks"][-1][0] < 5_000_000
    assert all(c[0] > 0 for c in result["chunks"])


def test_the_guard_counts_the_cpu_of_orphaned_descendants(tmp_path):
    # the child starts a grandchild and exits at once without waiting for it (as an engine
    # that exits before its forkserver): the orphan's fixed CPU work still counts
    burnt = tmp_path / "burnt"
    grandchild = ("import time, pathlib; time.sleep(0.5); sum(range(20_000_000)); "
                  f"pathlib.Path({str(burnt)!r}).write_text(str(time.process_time()))")
    script = textwrap.dedent(f"""
        import subprocess, sys
        subprocess.Popen([sys.executable, "-c", {grandchild!r}])
    """)
    result = run_guarded([sys.executable, "-c", script], 120, tmp_path / "a.log")
    assert result["rc"] == 0 and not result["timed_out"] and result["cpu_counts_orphans"]
    assert result["cpu_s"] >= float(burnt.read_text()) > 0


def test_the_guard_leaves_the_callers_own_children_alone(tmp_path):
    # a child this process had before the run (a multiprocessing forkserver started by an
    # earlier test in the same pytest process) is not the run's orphan: it was killed and
    # reaped, and every later multiprocessing test in the process failed (ChildProcessError)
    mine = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        result = run_guarded([sys.executable, "-c", "pass"], 60, tmp_path / "c.log")
        assert result["rc"] == 0
        assert mine.poll() is None, "the guard killed a child that was not the run's"
    finally:
        mine.kill()
        mine.wait()


def test_the_guard_kills_a_run_past_its_time(tmp_path):
    hung = run_guarded([sys.executable, "-c", "import time; time.sleep(600)"], 1.0,
                       tmp_path / "b.log")
    assert hung["timed_out"] and hung["rc"] != 0
    # SIGTERM ends it at once: the guard does not wait out its 10 s grace on the zombie
    assert hung["wall_s"] < 8.0, hung


def test_cartpole_both_sides_end_to_end(tmp_path):
    """A tiny real run: each side trains, is evaluated, and is timed; the figures agree with
    each other (the marks' returns come from the chunks, the rates from the steps)."""
    out = tmp_path / "learn.json"
    result = bench("CartPole-v1", "--seeds", "1", "--steps", "8192", "--json", str(out),
                   "--sb3-threads", "1", "--eval-episodes", "4", timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(out.read_text())["bench_learn"]
    assert data["commit"] and data["zoo_source"].startswith("rl-baselines3-zoo")
    env = data["envs"]["CartPole-v1"]
    assert [(r["side"], r["seed"]) for r in env["runs"]] == [("ours", 0), ("sb3", 0)]
    for r in env["runs"]:
        assert r["steps"] >= 8192 and r["cpu_s"] > 0 and r["wall_s"] > 0 and r["chunks"]
        assert r["eval"]["episodes"] == 4 and r["eval"]["episode_return"] > 0
        assert r["chunks"][-1][0] == r["steps"]
    ours = env["runs"][0]
    # ours was given the budget and the seed, nothing else
    assert "total_timesteps = 8192" in ours["config_toml"] and "seed = 0" in ours["config_toml"]
    assert ours["command"].endswith("--train.total-timesteps 8192 --train.seed 0")
    s = env["summary"]
    # the 100% mark is the end of the run (ours' one epoch may be longer than the budget)
    final = rep.return_at(ours["chunks"], ours["steps"], data["window"])
    assert s["ours"]["return@1"]["median"] == pytest.approx(final[0])
    assert s["compare"]["sps_ratio"] == pytest.approx(
        s["ours"]["sps"]["median"] / s["sb3"]["sps"]["median"])
    assert "| CartPole-v1 (8,192) | puffer-tui (1 seed) |" in result.stdout



def test_a_pettingzoo_env_is_one_row_per_agent_of_each_game_seeded_once():
    pytest.importorskip("supersuit", reason='pip install "puffer-tui[bench]"')
    pytest.importorskip("mpe2", reason='pip install "puffer-tui[pettingzoo]"')
    import numpy as np

    from puffer_tui.benchmarks import learn_sb3
    from puffer_tui.benchmarks.validation import VALIDATION

    env = VALIDATION["simple_reference"].env
    setup = learn_sb3.translate(learn_sb3.ZOO_PPO[env.zoo])
    first, again, other = (learn_sb3.make_venv(env, setup, 3, seed, True)
                           for seed in (5, 5, 6))
    try:
        assert first.num_envs == 2 * 3  # two agents in each of three games
        obs = [v.reset() for v in (first, again, other)]
        assert np.array_equal(obs[0], obs[1]) and not np.array_equal(obs[0], obs[2])
        assert not np.array_equal(obs[0][:2], obs[0][2:4])  # the games differ from each other
    finally:
        for v in (first, again, other):
            v.close()
