"""The trainer's options: `train.optimizer` (adam, muon) with checkpoints that carry its
state, `train.precision bfloat16` (autocast), and the policy's fused heads."""

from __future__ import annotations

import copy
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from puffer_tui.engine.algo.minibatch_loss import clip_gradients
from puffer_tui.engine.algo.optimizers import (
    FusedAdam,
    MuonWithAdam,
    make_optimizer,
    muon_parameter_names,
)
from puffer_tui.engine.algo.trainer import Trainer
from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared.config import load_config
from puffer_tui.engine.shared.protocol import LOSSES

SMALL = {"vec.num_envs": 8, "train.horizon": 8, "train.minibatch_size": 16,
         "train.hidden_size": 16, "train.total_timesteps": 100_000, "train.torch_threads": 1}


def _trainer(**overrides):
    return Trainer(load_config("squared", {**SMALL, **overrides}))


def test_adam_is_fused_on_cpu():
    with _trainer() as trainer:
        assert isinstance(trainer.optimizer, FusedAdam)
        assert trainer.optimizer.state_dict()["param_groups"][0]["fused"] is True


def _twin_models():
    torch.manual_seed(0)
    first = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3))
    return first, copy.deepcopy(first)


def _steps(model, optimizer, count: int, seed: int, skip_last_layer_every: int = 0) -> None:
    generator = torch.Generator().manual_seed(seed)
    for i in range(count):
        x = torch.randn(16, 5, generator=generator)
        optimizer.zero_grad(set_to_none=True)
        model(x).pow(2).mean().backward()
        if skip_last_layer_every and i % skip_last_layer_every == 0:
            for param in model[2].parameters():
                param.grad = None  # a parameter outside this loss keeps its moments
        optimizer.step()


def _same(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    return all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def test_fused_adam_steps_as_torch_adam_to_the_bit_and_shares_its_checkpoints():
    ours, theirs = _twin_models()
    settings = {"lr": 3e-3, "betas": (0.95, 0.999), "eps": 1e-8}
    mine = FusedAdam(ours.parameters(), **settings)
    torchs = torch.optim.Adam(theirs.parameters(), fused=True, **settings)
    _steps(ours, mine, 40, seed=1, skip_last_layer_every=3)
    _steps(theirs, torchs, 40, seed=1, skip_last_layer_every=3)
    assert _same(ours, theirs)
    saved_ours, saved_torch = mine.state_dict(), torchs.state_dict()
    assert saved_ours["param_groups"] == saved_torch["param_groups"]
    for index, entry in saved_torch["state"].items():
        assert set(entry) == set(saved_ours["state"][index])
        for name, value in entry.items():
            assert value.dtype == saved_ours["state"][index][name].dtype
            assert torch.equal(value, saved_ours["state"][index][name]), (index, name)

    # each loads the other's state (a checkpoint written before or after this optimizer) and
    # the next steps agree; the loaded group settings replace the constructor's
    ours2, theirs2 = copy.deepcopy(ours), copy.deepcopy(theirs)
    mine2 = FusedAdam(ours2.parameters(), lr=1.0, betas=(0.5, 0.5), eps=1e-3)
    mine2.load_state_dict(copy.deepcopy(saved_torch))
    torchs2 = torch.optim.Adam(theirs2.parameters(), fused=True, lr=1.0)
    torchs2.load_state_dict(copy.deepcopy(saved_ours))
    assert mine2.param_groups[0]["betas"] == (0.95, 0.999)
    _steps(ours2, mine2, 10, seed=2)
    _steps(theirs2, torchs2, 10, seed=2)
    assert _same(ours2, theirs2)


def test_fused_adam_refuses_a_state_for_another_policy():
    model, _ = _twin_models()
    state = FusedAdam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8).state_dict()
    smaller = torch.nn.Linear(5, 7)
    with pytest.raises(ValueError, match="groups of \\[4\\] parameters, this policy has one "
                                         "group of 2"):
        FusedAdam(smaller.parameters(), lr=1e-3, betas=(0.9, 0.999),
                  eps=1e-8).load_state_dict(state)


def test_a_training_run_does_not_import_torch_dynamo():
    """torch.optim's first step imports torch._dynamo (about 1 s of CPU): a run's start-up."""
    script = textwrap.dedent("""
        import sys
        from puffer_tui.engine.algo.trainer import Trainer
        from puffer_tui.engine.shared.config import load_config
        overrides = {"vec.num_envs": 8, "train.horizon": 8, "train.minibatch_size": 16,
                     "train.hidden_size": 16, "vec.backend": "serial"}
        with Trainer(load_config("squared", overrides)) as trainer:
            trainer.run_epoch()
            trainer.run_epoch()
        print("dynamo imported:", "torch._dynamo" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "dynamo imported: False" in done.stdout


def test_muon_takes_the_hidden_matrices_and_adam_the_rest():
    with _trainer(**{"train.optimizer": "muon"}) as trainer:
        opt = trainer.optimizer
        assert isinstance(opt, MuonWithAdam)
        assert isinstance(opt.muon, torch.optim.Muon)
        named = dict(trainer.policy.named_parameters())
        muon = {id(p) for g in opt.muon.param_groups for p in g["params"]}
        adam = {id(p) for g in opt.adam.param_groups for p in g["params"]}
        assert muon == {id(named["hidden.weight"])}
        assert muon.isdisjoint(adam) and muon | adam == {id(p) for p in named.values()}
        # one learning rate drives both (the learner sets it on every group)
        trainer.ppo.set_learning_rate(0.005)
        assert {g["lr"] for g in opt.param_groups} == {0.005}


def test_muon_gets_the_lstm_matrices_never_the_input_table_or_heads():
    with _trainer(**{"train.optimizer": "muon", "train.policy": "lstm"}) as trainer:
        names = muon_parameter_names(trainer.policy)
    assert set(names) == {"lstm.weight_ih_l0", "lstm.weight_hh_l0"}


def test_muon_trains_and_its_state_round_trips_through_a_checkpoint(tmp_path):
    overrides = {"train.optimizer": "muon", "vec.backend": "serial"}
    with _trainer(**overrides) as first:
        before = first.policy.hidden.weight.detach().clone()
        for _ in range(2):
            row = first.run_epoch()
        assert not torch.equal(before, first.policy.hidden.weight)
        assert all(math.isfinite(v) for v in row[LOSSES].values())
        ckpt.save_checkpoint(tmp_path, first.state_dict())
        state = first.state_dict()["optimizer"]
        assert set(state) == {"adam", "muon"}
        assert "momentum_buffer" in next(iter(state["muon"]["state"].values()))
        first.run_epoch()
        expected = {k: v.clone() for k, v in first.policy.state_dict().items()}
    _, saved = ckpt.load_latest(tmp_path)
    with _trainer(**overrides) as second:
        second.load_state_dict(saved)
        loaded = second.optimizer.state_dict()
        for part in ("adam", "muon"):
            for key, moments in saved["optimizer"][part]["state"].items():
                for name, tensor in moments.items():
                    assert torch.equal(loaded[part]["state"][key][name], tensor), (part, name)
        second.run_epoch()  # the same epoch as the first trainer's third: exact resume
        for key, tensor in second.policy.state_dict().items():
            assert torch.equal(tensor, expected[key]), key


def test_a_checkpoint_of_another_optimizer_is_refused_by_name(tmp_path):
    with _trainer() as adam_run:
        adam_run.run_epoch()
        state = adam_run.state_dict()
    with _trainer(**{"train.optimizer": "muon"}) as muon_run, \
            pytest.raises(ValueError, match="train.optimizer"):
        muon_run.load_state_dict(state)


def test_make_optimizer_refuses_an_unknown_name():
    policy = torch.nn.Linear(2, 2)
    train = load_config("squared", SMALL).train
    train.optimizer = "sgd"
    with pytest.raises(ValueError, match="adam or muon"):
        make_optimizer(policy, train)


def test_bfloat16_autocasts_the_training_forward_and_trains_finite():
    with _trainer(**{"train.precision": "bfloat16"}) as trainer:
        seen = []
        hook = trainer.policy.hidden.register_forward_hook(
            lambda _m, _i, out: seen.append(out.dtype) if torch.is_grad_enabled() else None)
        before = trainer.policy.hidden.weight.detach().clone()
        for _ in range(3):
            row = trainer.run_epoch()
        hook.remove()
        assert seen and set(seen) == {torch.bfloat16}  # the learner's forwards
        assert all(math.isfinite(v) for v in row[LOSSES].values()), row[LOSSES]
        assert trainer.policy.hidden.weight.dtype == torch.float32
        assert not torch.equal(before, trainer.policy.hidden.weight)


@pytest.mark.parametrize("flags, expected", [("fpu avx512f avx512_bf16 sse", "bfloat16"),
                                             ("fpu amx_bf16 amx_tile", "bfloat16"),
                                             ("fpu avx512f avx512bw", "float32")])
def test_auto_precision_is_bfloat16_only_on_cpus_that_multiply_it_natively(
        monkeypatch, tmp_path, flags, expected):
    from puffer_tui.engine.algo import trainer_setup

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
    real_open = open
    monkeypatch.setattr("builtins.open", lambda path, *a, **k: real_open(
        cpuinfo if path == "/proc/cpuinfo" else path, *a, **k))
    cpu = torch.device("cpu")
    assert trainer_setup.resolve_precision("auto", cpu) == expected
    assert trainer_setup.resolve_precision("float32", cpu) == "float32"  # asked for: kept
    assert trainer_setup.resolve_precision("bfloat16", cpu) == "bfloat16"


@pytest.mark.parametrize("major, expected", [(7, "float32"), (8, "bfloat16"), (9, "bfloat16")])
def test_auto_precision_on_cuda_asks_the_device_itself_for_native_bfloat16(
        monkeypatch, major, expected):
    """Before Ampere (compute capability 8) CUDA only emulates bfloat16; torch's
    is_bf16_supported() counts emulation, so the device's own capability decides."""
    from types import SimpleNamespace

    from puffer_tui.engine.algo import trainer_setup

    asked = []
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda device: asked.append(device) or SimpleNamespace(major=major))
    device = torch.device("cuda", 1)
    assert trainer_setup.resolve_precision("auto", device) == expected
    assert asked == [device]


def test_a_trainer_with_auto_precision_runs_what_it_resolved_and_says_so(monkeypatch):
    from puffer_tui.engine.algo import trainer_setup
    from puffer_tui.engine.runtime.telemetry import TrainerFeed

    for native, precision in ((True, "bfloat16"), (False, "float32")):
        monkeypatch.setattr(trainer_setup, "cpu_has_native_bf16", lambda n=native: n)
        with _trainer(**{"train.precision": "auto"}) as trainer:
            assert trainer.precision == trainer.ppo.gradients.precision == precision
            assert TrainerFeed.of(trainer).device == ("cpu bf16" if native else "cpu")


def test_bfloat16_gradients_point_where_float32_ones_do():
    """The CNN's update under autocast is the float32 update up to rounding: on Atari-shaped
    frames the two gradients agree in direction (cosine > 0.98) for every weight tensor."""
    pytest.importorskip("ale_py", reason="ale-py not installed (pip install 'puffer-tui[atari]')")
    from gymnasium import spaces

    from puffer_tui.engine.algo.policy import make_policy

    train = load_config("gym:ALE/Pong-v5").train
    torch.manual_seed(0)  # the weights: over seeds 0-5 the worst cosine was 0.986-0.9999
    policy = make_policy(spaces.Box(0, 255, (4, 84, 84), np.uint8), spaces.Discrete(6), train)
    generator = torch.Generator().manual_seed(0)
    frames = torch.randint(0, 256, (64, 4, 84, 84), dtype=torch.uint8, generator=generator)
    actions = torch.randint(0, 6, (64,), generator=generator)
    returns = torch.randn(64, generator=generator)

    def gradients(bf16: bool):
        policy.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            params, values, _ = policy.step(frames)
        logp, entropy = policy.actor.evaluate(params.float(), actions)
        loss = -(logp * returns).mean() + (values.float() - returns).pow(2).mean() \
            - 0.01 * entropy.mean()
        loss.backward()
        return [p.grad.detach().flatten().clone() for p in policy.parameters()]

    for exact, mixed in zip(gradients(False), gradients(True), strict=True):
        cosine = torch.nn.functional.cosine_similarity(exact, mixed, dim=0)
        assert cosine > 0.98, cosine


@pytest.mark.parametrize("precision, dtype", [("bfloat16", torch.bfloat16),
                                              ("float32", torch.float32)])
def test_collection_infers_in_the_learners_precision(precision, dtype):
    """The log-probs stored at collection and those the learner recomputes come from forwards
    in the same precision (else the first ratio of an update is precision noise, not 1)."""
    with _trainer(**{"train.precision": precision}) as trainer:
        seen = []
        hook = trainer.policy.hidden.register_forward_hook(
            lambda _m, _i, out: seen.append(out.dtype) if not torch.is_grad_enabled() else None)
        trainer.run_epoch()
        hook.remove()
        assert seen and set(seen) == {dtype}
        assert trainer.buffer.logprobs.dtype == torch.float32


class _CountMatmuls(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket in (torch.ops.aten.mm, torch.ops.aten.addmm):
            self.count += 1
        return func(*args, **(kwargs or {}))


def test_the_heads_are_one_matrix_product_with_the_heads_own_weights():
    with _trainer() as trainer:
        policy = trainer.policy
        hidden = torch.randn(32, 16)
        with _CountMatmuls() as ops:
            params, values = policy._heads(hidden)
        assert ops.count == 1
        torch.testing.assert_close(params, policy.actor(hidden))
        torch.testing.assert_close(values, policy.critic(hidden).squeeze(-1))


def test_muon_without_torch_optim_muon_is_a_config_error_naming_the_fix(monkeypatch):
    from puffer_tui.engine.algo.optimizers import check_available
    from puffer_tui.engine.shared.config import ConfigError

    train = load_config("squared", {**SMALL, "train.optimizer": "muon"}).train
    monkeypatch.delattr(torch.optim, "Muon")
    with pytest.raises(ConfigError, match="torch >= 2.9.*train.optimizer adam"):
        check_available(train)
    with pytest.raises(ConfigError, match="torch.optim.Muon"):
        make_optimizer(torch.nn.Linear(2, 2), train)


@pytest.mark.parametrize("max_norm", [1e-3, 1e6])  # clipped, and left alone
def test_clip_gradients_is_torchs_clip_grad_norm_to_the_bit(max_norm):
    ours, theirs = _twin_models()
    x = torch.randn(16, 5, generator=torch.Generator().manual_seed(3))
    for model in (ours, theirs):
        model(x).pow(2).mean().backward()
    norm = clip_gradients(list(ours.parameters()), max_norm)
    expected = torch.nn.utils.clip_grad_norm_(theirs.parameters(), max_norm)
    assert torch.equal(norm, expected)
    for mine, torchs in zip(ours.parameters(), theirs.parameters()):
        assert torch.equal(mine.grad, torchs.grad)


class _CountCasts(TorchDispatchMode):
    """Counts the copies made of one tensor (autocast's casts of a weight), but not while
    `paused`."""

    def __init__(self, tensor: torch.Tensor):
        super().__init__()
        self.pointer, self.count, self.paused = tensor.data_ptr(), 0, False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket is torch.ops.aten._to_copy and not self.paused \
                and args[0].data_ptr() == self.pointer:
            self.count += 1
        return func(*args, **(kwargs or {}))


def test_a_bfloat16_collection_casts_each_weight_once_not_once_a_step(monkeypatch):
    """autocast's cast of a weight to bfloat16 is kept for the whole collection (8 steps
    here), not redone on every step: Pong's 3136 x 512 layer took half a step to cast."""
    with _trainer(**{"train.precision": "bfloat16"}) as trainer:
        trainer.run_epoch()
        counter = _CountCasts(trainer.policy.hidden.weight)
        update = trainer.ppo.update

        def update_uncounted(*args, **kwargs):  # the learner casts a changed weight anew
            counter.paused = True
            try:
                return update(*args, **kwargs)
            finally:
                counter.paused = False

        monkeypatch.setattr(trainer.ppo, "update", update_uncounted)
        with counter:
            trainer.run_epoch()
        assert trainer.config.train.horizon == 8 and counter.count == 1


def test_collection_casts_drop_their_copies_when_a_weight_changes_in_place():
    """A weight loaded in place between two steps (say, by a safe point) is cast afresh:
    the step after it computes what a fresh autocast would, to the bit."""
    with _trainer(**{"train.precision": "bfloat16"}) as trainer:
        policy = trainer.policy
        space = trainer.vecenv.single_observation_space
        obs = torch.as_tensor(np.stack([space.sample() for _ in range(4)]))
        casts = trainer.collection_casts()
        with casts:
            with casts.step():
                before = policy.step(obs)[1]
            with torch.no_grad():
                policy.critic.weight.mul_(-2.0)
            casts.refresh()
            with casts.step():
                after = policy.step(obs)[1]
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            expected = policy.step(obs)[1]
        assert not torch.equal(before, after)
        assert torch.equal(after, expected)


def test_collection_casts_cast_a_weight_once_where_a_context_a_step_casts_it_each_step():
    from torch.profiler import profile

    with _trainer(**{"train.precision": "bfloat16"}) as trainer:
        policy, shape = trainer.policy, list(trainer.policy.hidden.weight.shape)
        space = trainer.vecenv.single_observation_space
        obs = torch.as_tensor(np.stack([space.sample() for _ in range(4)]))

        def casts_of_the_weight(events) -> int:
            return sum(1 for e in events if e.name == "aten::_to_copy"
                       and e.input_shapes and e.input_shapes[0] == shape)

        with profile(record_shapes=True) as per_step:  # the old way: a context a step
            for _ in range(3):
                with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
                    policy.step(obs)
        casts = trainer.collection_casts()
        with profile(record_shapes=True) as held, casts:
            for _ in range(3):
                casts.refresh()
                with casts.step():
                    policy.step(obs)
        assert casts_of_the_weight(per_step.events()) == 3
        assert casts_of_the_weight(held.events()) == 1
