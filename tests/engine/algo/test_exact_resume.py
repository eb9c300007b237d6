"""Exact resume: a stopped and resumed run reproduces the uninterrupted one, loss for loss.

Checkpoints carry the C envs' state (structs, heap blocks, RNGs, logs), the step result in
flight at the epoch boundary and the per-agent LSTM state (docs/exact-resume.md)."""

import io
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import torch
from engine_harness import TINY, kill_engine, make_run, wait_until
from tree_paths import REPO_ROOT

from puffer_tui.engine.algo.trainer import Trainer
from puffer_tui.engine.runtime.metrics import flatten, read_metrics
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.checkpoint import list_checkpoints
from puffer_tui.engine.shared.config import load_config
from puffer_tui.engine.vec import make
from puffer_tui.envs import creator, from_gymnasium

LOSSES = ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac")
SMALL = {"vec.num_envs": 8, "train.horizon": 8, "train.minibatch_size": 16,
         "train.hidden_size": 16, "train.total_timesteps": 100_000, "train.torch_threads": 1}


def _roundtrip(state):
    """Through torch.save and a weights-only load, as checkpoints are read."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def _losses(rows):
    return [[flatten(row)[k] for k in LOSSES] for row in rows]  # trainer rows or file rows


def _cut_and_resume(env, overrides, before=3, after=4, drop=()):
    """Losses of `after` epochs run on after `before`, uninterrupted and from a checkpoint
    (with the entries in `drop` left out of it)."""
    config = {**SMALL, **overrides}
    with Trainer(load_config(env, config)) as first:
        for _ in range(before):
            first.run_epoch()
        state = _roundtrip(first.state_dict())
        uninterrupted = [first.run_epoch() for _ in range(after)]
    for key in drop:
        state[key] = None
    with Trainer(load_config(env, config)) as resumed:
        resumed.load_state_dict(state)
        continued = [resumed.run_epoch() for _ in range(after)]
    return _losses(uninterrupted), _losses(continued)


@pytest.mark.parametrize("env, overrides", [
    ("cartpole", {"env.max_steps": 7}),  # truncations inside every batch
    ("cartpole", {"env.max_steps": 7, "train.policy": "lstm"}),
    ("snake", {"vec.num_envs": 2}),  # heap-allocated env state, several agents per env
])
def test_trainer_state_dict_resumes_exactly(env, overrides):
    uninterrupted, continued = _cut_and_resume(env, overrides)
    assert continued == uninterrupted


def test_without_the_env_and_lstm_state_the_resume_diverges():
    # The same comparison fails when the checkpoint lacks what this work added: the check
    # above can tell an exact resume from an approximate one.
    with pytest.warns(UserWarning, match="resume is not exact"):
        uninterrupted, continued = _cut_and_resume(
            "cartpole", {"env.max_steps": 7, "train.policy": "lstm"},
            drop=("vecenv", "lstm_state"))
    assert continued != uninterrupted


def test_multiprocessing_synchronous_resume_is_exact():
    overrides = {"env.max_steps": 7, "train.policy": "lstm", "vec.backend": "multiprocessing",
                 "vec.num_workers": 2}
    uninterrupted, continued = _cut_and_resume("cartpole", overrides, before=2, after=3)
    assert continued == uninterrupted


# -- the vec env's saved state ------------------------------------------------------------------


def _steps(vecenv, actions):
    out = []
    for a in actions:
        obs, rewards, terminals, truncations, _, _, masks = vecenv.recv()
        out.append([np.array(x) for x in (obs, rewards, terminals, truncations, masks,
                                          vecenv.final_observations)])
        vecenv.send(a)
    return out


@pytest.mark.parametrize("backend", ["serial", "multiprocessing"])
@pytest.mark.parametrize("env, settings", [
    ("squared", {}), ("cartpole", {"max_steps": 9}), ("breakout", {"max_ticks": 40}),
    ("cpr", {"max_ticks": 30}), ("snake", {"max_steps": 12}), ("memory", {}),
])
def test_vec_state_continues_every_env_exactly(backend, env, settings):
    workers = {} if backend == "serial" else {"num_workers": 2}
    make_vec = lambda seed: make(creator(env, **settings), num_envs=4, backend=backend,  # noqa
                                 seed=seed, **workers)
    with make_vec(3) as a, make_vec(11) as b:
        rng = np.random.default_rng(0)
        sizes = a.single_action_space.nvec if hasattr(a.single_action_space, "nvec") \
            else np.array(a.single_action_space.n)
        actions = [(rng.random((a.num_agents, *np.shape(sizes))) * sizes).astype(np.int32)
                   for _ in range(60)]
        a.async_reset(3)
        _steps(a, actions[:20])
        state = a.get_state()
        b.async_reset(11)
        b.set_state(state)
        expected, got = _steps(a, actions[20:]), _steps(b, actions[20:])
    for t, (x, y) in enumerate(zip(expected, got)):
        for name, u, v in zip(("obs", "rewards", "terminals", "truncations", "masks", "final"),
                              x, y):
            np.testing.assert_array_equal(u, v, err_msg=f"{name} at step {t}")


def test_vec_state_is_refused_by_other_settings_before_anything_changes():
    with make(creator("cartpole", max_steps=9), num_envs=4, seed=0) as a, \
            make(creator("cartpole", max_steps=10), num_envs=4, seed=0) as b, \
            make(creator("cartpole", max_steps=9), num_envs=3, seed=0) as c:
        a.async_reset(0)
        state = a.get_state()
        b.async_reset(0)
        before = b.env.get_state()
        with pytest.raises(ValueError, match="max_steps"):
            b.set_state(state)
        assert b.env.get_state() == before
        c.async_reset(0)
        with pytest.raises(ValueError, match="num_envs"):
            c.set_state(state)


def test_every_env_that_allocates_lists_its_heap_blocks():
    # the driver saves struct bytes; memory from c_init is saved only through c_heap

    headers = sorted(REPO_ROOT.glob("envs/*/*.h"))
    assert headers
    allocating = [h for h in headers if "alloc(" in h.read_text()]
    assert allocating, "breakout, cpr and snake allocate in c_init"
    for header in allocating:
        assert "#define PUFFER_ENV_HEAP" in header.read_text(), f"{header.name} has no c_heap"


def test_binding_refuses_state_bytes_of_the_wrong_size():
    env = creator("snake")(num_envs=2, seed=0)
    state = env._c.get_state()
    with pytest.raises(ValueError, match="bytes"):
        env._c.set_state(state[:-1])
    env.close()


def test_gymnasium_envs_checkpoint_without_env_state_and_resume_says_so():
    config = load_config("squared", {**SMALL, "vec.num_envs": 4, "train.minibatch_size": 16})
    vec = make(from_gymnasium("CartPole-v1"), num_envs=4, seed=0)
    with Trainer(config, vecenv=vec) as trainer:
        trainer.run_epoch()
        state = _roundtrip(trainer.state_dict())
    assert state["vecenv"] is None
    vec = make(from_gymnasium("CartPole-v1"), num_envs=4, seed=0)
    with Trainer(config, vecenv=vec) as resumed:
        with pytest.warns(UserWarning, match="no env state"):
            resumed.load_state_dict(state)
        assert resumed.inexact_resume
        resumed.run_epoch()


# -- a real engine process, stopped by SIGINT and resumed ----------------------------------------

ENGINE = [sys.executable, "-m", "puffer_tui.engine"]
EPOCHS = 24  # small epochs: the interrupt lands mid-run however slow the machine
ENGINE_CONFIG = {**TINY, "vec.num_envs": 16, "train.minibatch_size": 64,
                 "train.total_timesteps": EPOCHS * 16 * 16, "env.max_steps": 9}


def _engine(run, *flags):
    return subprocess.Popen([*ENGINE, str(run), *flags], stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT, start_new_session=True)


def test_sigint_then_resume_reproduces_the_uninterrupted_engine_run(tmp_path):
    whole = make_run(tmp_path / "whole", "cartpole", **ENGINE_CONFIG)
    cut = make_run(tmp_path / "cut", "cartpole", **ENGINE_CONFIG)
    try:
        whole_engine = _engine(whole)  # side by side with the cut run: they share nothing
        engine = _engine(cut)
        wait_until(lambda: len(read_metrics(cut)) >= 2, 60, what="two epochs")
        os.kill(engine.pid, signal.SIGINT)
        assert engine.wait(60) == 0
        stopped_at = len(read_metrics(cut))
        assert rd.run_state(cut) == "stopped" and list_checkpoints(cut)
        assert stopped_at < EPOCHS, "the run finished before the interrupt: use a longer one"
        assert whole_engine.wait(120) == 0
        assert _engine(cut, "--resume").wait(120) == 0
    finally:
        kill_engine(whole)
        kill_engine(cut)
    expected, got = read_metrics(whole), read_metrics(cut)
    assert [r["epoch"] for r in got] == [r["epoch"] for r in expected] == list(
        range(1, EPOCHS + 1))
    assert _losses(got) == _losses(expected)
