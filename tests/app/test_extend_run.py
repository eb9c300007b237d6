"""A finished run continued with `train --resume RUN --train.total-timesteps N`: it trains on
from its last checkpoint (state finished -> running -> finished), metrics.jsonl goes on with
continuous steps and no repeated rows, the learning rate does not stay at the finished
schedule's 0; an N not above the steps done is refused in one line, exit 2, nothing changed."""

import threading

from engine_harness import make_run

from puffer_tui.app.cli import build_parser, main
from puffer_tui.app.commands.train import prepare_run
from puffer_tui.engine.runtime.metrics import read_metrics
from puffer_tui.engine.runtime.process import main as engine_main
from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import run_dir as rd

EPOCH = 64 * 16  # agent steps per epoch of engine_harness.TINY


def files_of(run):
    return {p.relative_to(run): p.read_bytes() for p in run.rglob("*") if p.is_file()}


def states_while(run, action):
    """The run states status.json showed while `action` ran (polled from a thread)."""
    seen, done = [], threading.Event()

    def look():
        state = rd.read_status(run).get("state")
        if state and (not seen or seen[-1] != state):
            seen.append(state)

    def poll():
        while not done.is_set():
            look()
            done.wait(0.005)
        look()  # the state the action left: it may have been written after the last look

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        result = action()
    finally:
        done.set()
        poller.join()
    return result, seen


def test_a_finished_run_trains_on_to_a_raised_budget(tmp_path, capsys):
    run = make_run(tmp_path, **{"train.total_timesteps": 2 * EPOCH})
    assert engine_main([str(run)]) == 0
    assert rd.run_state(run) == "finished"

    before = files_of(run)
    for n in (2 * EPOCH, EPOCH):
        assert main(["train", "--resume", str(run), "--headless",
                     "--train.total-timesteps", str(n)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        assert f"--train.total-timesteps {n} is not above the 2,048 steps" in err
        assert f"--train.total-timesteps {4 * EPOCH}" in err  # the fix, spelled out
    assert files_of(run) == before

    args, _ = build_parser().parse_known_args(["train", "--resume", str(run), "--headless",
                                               "--train.total-timesteps", str(4 * EPOCH)])
    args.extra = []
    assert prepare_run(args) == (run, True)
    assert cfg.load(run / rd.CONFIG_FILE).train.total_timesteps == 4 * EPOCH
    code, states = states_while(run, lambda: engine_main([str(run), "--resume"]))
    assert code == 0
    assert "running" in states and states[-1] == "finished"
    rows = read_metrics(run)
    assert [r["epoch"] for r in rows] == [1, 2, 3, 4]
    assert [r["global_step"] for r in rows] == [EPOCH, 2 * EPOCH, 3 * EPOCH, 4 * EPOCH]
    assert rows[1]["learning_rate"] == 0.0  # the first plan ended at 2 epochs...
    assert rows[2]["learning_rate"] > 0.0  # ...the extension learns on
    assert rd.run_info(run).global_step == 4 * EPOCH
    assert "resumed from step-000000002048" in (run / rd.EVENTS_FILE).read_text()


def test_a_budget_raised_live_is_the_one_a_resume_checks(tmp_path, capsys):
    from puffer_tui.app.services.run_service import plan_resume
    from puffer_tui.engine.algo.trainer import Trainer
    from puffer_tui.engine.shared import checkpoint as ckpt

    run = make_run(tmp_path, **{"train.total_timesteps": EPOCH})
    with Trainer(cfg.load(run / rd.CONFIG_FILE)) as trainer:
        trainer.set_hyperparameter("train.total_timesteps", 4 * EPOCH)  # raised while training
        trainer.run_epoch()
        trainer.run_epoch()
        ckpt.save_checkpoint(run, trainer.state_dict())  # then stopped at 2 of its 4 epochs
    rd.write_json_atomic(run / rd.STATUS_FILE, {"state": "stopped", "pid": 1})
    # config.toml still says one epoch: the checks must not call the run finished
    assert plan_resume(run, {}, tmp_path) == (run, None)
    assert main(["attach", str(run)]) == 2
    err = capsys.readouterr().err
    assert f"puffer-tui train --resume {run}" in err and "trained all its" not in err
