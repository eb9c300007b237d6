"""`puffer-tui bench control` (benchmarks/control.py) on a real engine with a tiny budget:
what it reports, that a pause holds (no step taken while paused), and its refusals. No time
is asserted beyond being measured."""

from __future__ import annotations

import json

import pytest

from puffer_tui.app.cli import main

TINY = ["--vec.num-envs", "64", "--train.horizon", "16", "--train.minibatch-size", "256",
        "--train.hidden-size", "32", "--train.torch-threads", "1"]


def test_a_pause_holds_and_every_figure_is_reported(capsys):
    assert main(["bench", "control", "squared", "--rounds", "2", "--window", "0.2", "--json",
                 *TINY]) == 0
    result = json.loads(capsys.readouterr().out)["control"]
    assert (result["env"], result["num_envs"]) == ("squared", 64)
    assert result["steps_while_paused"] == 0
    assert result["processes"] >= 1
    for key in ("pause_ms", "resume_ms", "paused_cpu_percent"):
        assert 0 <= result[key]["median"] <= result[key]["max"], key
    assert result["running_cpu_percent"] >= 0


@pytest.mark.parametrize("argv, words", [
    (["--rounds", "0"], "--rounds must be >= 1 and --window > 0"),
    (["--window", "0"], "--rounds must be >= 1 and --window > 0"),
    (["--train.learning-rate", "-1"], "puffer-tui bench control: error: train.learning_rate"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, words):
    assert main(["bench", "control", "squared", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err
