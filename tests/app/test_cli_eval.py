"""`puffer-tui eval`: exact episode counts, seeded reproducibility (sampling included), the
render mode's default, Ctrl-C with the partial score, progress that streams into a pipe."""

import json
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest

from puffer_tui.app.cli import main
from puffer_tui.engine.algo.trainer import Trainer
from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import exit_codes
from puffer_tui.engine.shared.checkpoint import save_checkpoint

CLI = [sys.executable, "-m", "puffer_tui.app.cli"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A run directory holding the checkpoint of a fresh (untrained, so random) policy."""
    run = tmp_path_factory.mktemp("runs") / "squared-eval"
    (run / "checkpoints").mkdir(parents=True)
    config = cfg.load_config("squared", {
        "vec.num_envs": 64, "train.horizon": 16, "train.minibatch_size": 256,
        "train.hidden_size": 32, "train.torch_threads": 1, "env.size": 7,
    })
    trainer = Trainer(config)
    try:
        save_checkpoint(run, trainer.state_dict())
    finally:
        trainer.close()
    return run


def evaluate(capsys, run, *flags):
    capsys.readouterr()
    assert main(["eval", str(run), "--json", *flags]) == 0
    out = capsys.readouterr()
    return json.loads(out.out), out.err


@pytest.mark.parametrize("episodes, num_envs", [(100, 64), (7, 64), (5, 3)])
def test_reports_exactly_the_episodes_asked_for(capsys, run_dir, episodes, num_envs):
    outcome, _ = evaluate(capsys, run_dir, "--episodes", str(episodes), "--num-envs", str(num_envs))
    assert outcome["episodes"] == episodes
    assert outcome["score"] is not None and 0 <= outcome["score"] <= 1


def test_a_seed_reproduces_the_evaluation_sampling_included(capsys, run_dir):
    first, _ = evaluate(capsys, run_dir, "--episodes", "40", "--seed", "7")
    again, _ = evaluate(capsys, run_dir, "--episodes", "40", "--seed", "7")
    other, _ = evaluate(capsys, run_dir, "--episodes", "40", "--seed", "8")
    assert first == again
    assert other != first


def test_render_plays_a_few_episodes_by_default_and_says_so(capsys, run_dir):
    outcome, hint = evaluate(capsys, run_dir, "--render", "ascii", "--fps", "1000")
    assert outcome["episodes"] == 3
    assert "playing 3 episodes" in hint and "--episodes N" in hint


def test_piped_render_streams_progress_and_ctrl_c_prints_the_partial_score(run_dir):
    player = subprocess.Popen([*CLI, "eval", str(run_dir), "--render", "ascii", "--fps", "200",
                               "--episodes", "100000"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={"PYTHONUNBUFFERED": "1", **__import__("os").environ})
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in player.stdout], daemon=True).start()
    try:
        first = lines.get(timeout=60)  # arrives while the player still runs: it streams
        assert first.startswith("episode 1/100000: return"), first
        assert player.poll() is None
        player.send_signal(signal.SIGINT)
        assert player.wait(60) == exit_codes.STOPPED
    finally:
        if player.poll() is None:
            player.kill()
            player.wait()
    time.sleep(0.1)  # let the reader thread drain the closed pipe
    rest = []
    while not lines.empty():
        rest.append(lines.get())
    summary = rest[-1]
    assert summary.startswith("squared: interrupted after "), rest[-3:]
    assert " of 100000 episodes " in summary and "score " in summary
    assert "last frame:\n" in rest and rest[-2] == "\n"  # the frame ends before the summary


# ---- Gymnasium envs: rgb_array frames in half blocks (by brightness into a pipe), ansi as text --

def gym_run(tmp_path_factory, spec: str, **env_settings):
    """A run directory of an untrained policy on a Gymnasium env spec (serial, tiny)."""
    run = tmp_path_factory.mktemp("runs") / spec.replace(":", "-")
    (run / "checkpoints").mkdir(parents=True)
    config = cfg.load_config(spec, {
        "vec.backend": "serial", "vec.num_envs": 8, "train.horizon": 16,
        "train.minibatch_size": 128, "train.hidden_size": 16, "train.torch_threads": 1,
        **{f"env.{name}": value for name, value in env_settings.items()},
    })
    trainer = Trainer(config)
    try:
        save_checkpoint(run, trainer.state_dict())
    finally:
        trainer.close()
    return run


@pytest.fixture(scope="module")
def cartpole_run(tmp_path_factory):
    # Gymnasium's own CartPole, which draws RGB images (not its C port's tiles)
    return gym_run(tmp_path_factory, "gym:CartPole-v1", native="false")


def test_render_ascii_draws_a_gym_rgb_env(capsys, cartpole_run):
    capsys.readouterr()
    assert main(["eval", str(cartpole_run), "--render", "ascii", "--fps", "1000",
                 "--episodes", "1"]) == 0
    out = capsys.readouterr().out
    picture = out[out.index("last frame:\n"):].splitlines()[1:-2]
    assert len(picture) >= 10, out
    assert all(set(line) <= set(" .:-=+*#%@") for line in picture), "no colours in a pipe"
    assert any(set(line) - {"@"} for line in picture), "the cart and pole, darker than the sky"
    assert out.rstrip().splitlines()[-1].startswith("gym:CartPole-v1: 1 episode from ")


def test_render_ascii_shows_a_gym_ansi_env_as_its_text(capsys, tmp_path_factory):
    run = gym_run(tmp_path_factory, "gym:FrozenLake-v1")
    capsys.readouterr()
    assert main(["eval", str(run), "--render", "ascii", "--fps", "1000", "--episodes", "1"]) == 0
    out = capsys.readouterr().out
    assert "\nSFFF\nFHFH\nFFFH\nHFFG\n" in out, out


IMAGE_ENV = '''
import gymnasium
import numpy as np
from gymnasium import spaces


class Stripes(gymnasium.Env):
    """A 2 x 16 x 16 frame stack: the first frame black, the second white."""

    observation_space = spaces.Box(0, 255, (2, 16, 16), np.uint8)
    action_space = spaces.Discrete(2)

    def _obs(self):
        return np.stack([np.zeros((16, 16), np.uint8), np.full((16, 16), 255, np.uint8)])

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), 1.0, self.t >= 3, False, {}


def make_stripes():
    return Stripes()
'''


def test_render_with_view_obs_draws_the_observation(capsys, tmp_path_factory, tmp_path,
                                                      monkeypatch):
    (tmp_path / "render_image_envs.py").write_text(IMAGE_ENV)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    try:
        run = gym_run(tmp_path_factory, "render_image_envs:make_stripes")
        capsys.readouterr()
        assert main(["eval", str(run), "--render", "ascii", "--view", "obs", "--fps", "1000",
                     "--episodes", "1"]) == 0
    finally:
        sys.modules.pop("render_image_envs", None)
    out = capsys.readouterr().out
    picture = out[out.index("last frame:\n"):].splitlines()[1:-2]
    assert len(picture) >= 4, out
    # the two frames side by side: black on the left, white on the right
    assert all(line.startswith(" ") and line.rstrip().endswith("@") for line in picture), out
    capsys.readouterr()
    assert main(["eval", str(run), "--view", "obs"]) == 2
    assert "--view obs needs --render" in capsys.readouterr().err


ENDLESS_ENV = '''
import gymnasium
import numpy as np


class Endless(gymnasium.Env):
    """Never terminates, no time limit: a policy that never reaches an end walks forever."""

    observation_space = gymnasium.spaces.Box(0.0, 1.0, (2,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), -1.0, False, False, {}


def make_endless():
    return Endless()
'''


def test_an_episode_that_never_ends_stops_the_evaluation_with_the_reason(
        capsys, tmp_path_factory, tmp_path, monkeypatch):
    from puffer_tui.engine.evaluation import evaluate as evaluation

    (tmp_path / "endless_envs.py").write_text(ENDLESS_ENV)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    assert evaluation.episode_steps_cap(1) == 100_000  # one env: the whole cap
    assert evaluation.episode_steps_cap(64) == 30_000  # many: the floor
    monkeypatch.setattr(evaluation, "episode_steps_cap", lambda rows: 50)  # a quick test
    try:
        run = gym_run(tmp_path_factory, "endless_envs:make_endless")
        capsys.readouterr()
        code = main(["eval", str(run), "--json", "--episodes", "3", "--num-envs", "1"])
    finally:
        sys.modules.pop("endless_envs", None)
    out = capsys.readouterr()
    assert code == exit_codes.ERROR
    result = json.loads(out.out)
    assert result["episodes"] == 0 and "ran 50 steps without ending" in result["endless"]
    assert out.err.strip().splitlines()[-1].startswith(
        "puffer-tui eval: error: an episode ran 50 steps without ending")
    assert "Traceback" not in out.err
