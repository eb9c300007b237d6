"""`eval --record`: what it plays by default (the README's 3 episodes, not a score's 100) and
the one line it prints for an env that cannot draw a picture (its render failing, e.g.
Gymnasium's pygame missing: the reason, not "draws text frames ... needs rgb_array")."""

import json
import os

import pytest

pytest.importorskip("imageio", reason='recordings need the record extra: pip install "puffer-tui[record]"')

from puffer_tui.app.cli import main  # noqa: E402
from tests.engine.evaluation.test_recording import cartpole_run, squared_run  # noqa: E402,F401 (fixtures)


def test_a_recording_plays_three_episodes_unless_told(capsys, squared_run, tmp_path):  # noqa: F811
    main(["eval", str(squared_run), "--json", "--record", str(tmp_path / "out.gif")])
    assert json.loads(capsys.readouterr().out)["episodes"] == 3
    main(["eval", str(squared_run), "--json", "--record", str(tmp_path / "out.gif"),
          "--episodes", "1"])
    assert json.loads(capsys.readouterr().out)["episodes"] == 1


def test_an_env_whose_render_fails_is_refused_with_the_reason(capsys, cartpole_run,  # noqa: F811
                                                              tmp_path, monkeypatch):
    from gymnasium.envs.classic_control.cartpole import CartPoleEnv
    from gymnasium.error import DependencyNotInstalled

    def no_pygame(self):
        raise DependencyNotInstalled('pygame is not installed, run `pip install '
                                     '"gymnasium[classic-control]"`')

    monkeypatch.setattr(CartPoleEnv, "render", no_pygame)
    capsys.readouterr()
    code = main(["eval", str(cartpole_run), "--record", str(tmp_path / "cart.gif")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "cannot draw a picture to record" in err
    assert "DependencyNotInstalled: pygame is not installed" in err
    assert "gymnasium[classic-control]" in err
    assert "text frames" not in err, err
    assert os.listdir(tmp_path) == []


def test_zero_episodes_is_refused(capsys, squared_run):  # noqa: F811
    assert main(["eval", str(squared_run), "--episodes", "0"]) == 2
    assert "--episodes must be >= 1, got 0" in capsys.readouterr().err
