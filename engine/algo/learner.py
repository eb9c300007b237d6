"""One PPO update over a collected batch, minibatch by minibatch (PufferLib 3.0's loop).

Before each minibatch the advantages of the whole batch are recomputed (cheap: the C kernel)
with the latest importance ratios and values, so V-trace corrects for how far the policy has
moved since collection; segments are drawn by priority, their advantages normalised and
importance-weighted, and the PPO loss is minimised with Adam (or Muon, engine/algo/optimizers.py)
and gradient-norm clipping.

`shuffle_steps` (feedforward policies): minibatches are single steps, each epoch a fresh
permutation of the whole batch (standard PPO). Whole segments are what an LSTM needs, but for an
MLP they are correlated data: a minibatch of one or a few segments holds one or a few
trajectories' consecutive steps, and normalizing advantages within it removes the difference
between those trajectories (on Hopper-v5 a minibatch of one 64-step segment learned to about
900 at 500k steps; see envs/gym_presets/mujoco.toml).

`precision` "bfloat16" runs the policy's forward (and so its backward) under torch.autocast:
matrix products in bfloat16, the heads' outputs cast back to float32 before the loss, whose
arithmetic, like the advantages and the optimizer's state, stays float32.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable

import torch

from puffer_tui.engine.algo.adaptive_lr import AdaptiveRate
from puffer_tui.engine.algo.advantage import compute_advantage
from puffer_tui.engine.algo.explicit_gradients import ExplicitMLP
from puffer_tui.engine.algo.ppo_loss import normalize_advantages, ppo_loss
from puffer_tui.engine.algo.sampling import annealed_beta, sample_segments, segment_priorities
from puffer_tui.engine.algo.schedule import START, Anchor, learning_rate, progress
from puffer_tui.engine.shared.protocol import LOSS_KEYS

__all__ = ["Learner", "explained_variance", "learning_rate"]

# averaged over minibatches (explained variance is computed once, over the whole batch)
STAT_NAMES = tuple(k for k in LOSS_KEYS if k != "explained_variance")


def explained_variance(values: torch.Tensor, returns: torch.Tensor, valid: torch.Tensor) -> float:
    count = valid.sum().clamp(min=1.0)
    mean = (returns * valid).sum() / count
    var_returns = (((returns - mean) * valid) ** 2).sum() / count
    residual = returns - values
    res_mean = (residual * valid).sum() / count
    var_residual = (((residual - res_mean) * valid) ** 2).sum() / count
    if var_returns.item() <= 1e-12:
        return 0.0  # constant returns: nothing to explain (and NaN is not JSON)
    return float(1.0 - var_residual / var_returns)


@torch.no_grad()
def clip_gradients(params: list[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Scale the gradients of `params` (one device and dtype) to a total norm of at most
    `max_norm`; returns the norm before. torch.nn.utils.clip_grad_norm_'s arithmetic to the
    bit, in four kernels: its own checks and grouping cost about 0.1 ms a call, a tenth of a
    64-wide policy's minibatch."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return torch.zeros((), device=params[0].device if params else None)
    total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    torch._foreach_mul_(grads, (max_norm / (total + 1e-6)).clamp_(max=1.0))
    return total


def _rows(t, order):
    """t[order] for a numpy array or a tensor; index_select for a tensor, the same rows."""
    return t.index_select(0, order) if isinstance(t, torch.Tensor) else t[order]


def kl_too_far(stats: dict, train) -> bool:
    """SB3's early stop: whether this minibatch's approx_kl (measured before its step) is
    over 1.5x `train.target_kl`, the policy having moved too far from the one that collected
    the batch. Off (0) it reads nothing, so the minibatch loop never waits on the device."""
    target = float(getattr(train, "target_kl", 0.0))
    return target > 0.0 and float(stats["approx_kl"]) > 1.5 * target


class Learner:
    def __init__(self, policy, optimizer, train_forward: Callable | None = None,
                 precision: str = "float32", compile_loss: bool = False):
        if precision not in ("float32", "bfloat16"):
            raise ValueError(f"precision must be float32 or bfloat16, got {precision!r}")
        self.policy = policy
        self.params = list(policy.parameters())  # fixed: looked up once, not per minibatch
        self.optimizer = optimizer
        # the (possibly compiled) function replaying sequences: (obs, state, starts) -> heads
        self.train_forward = train_forward or policy.forward_sequence
        self.precision = precision
        # train.compile: the whole minibatch loss as one graph (and its backward as another).
        # On a small MLP each eager op costs more than its arithmetic: HalfCheetah-v5's
        # minibatch of 64 (forward, loss, backward, Adam) took 1.96 ms compiled against
        # 3.04 ms eager on the 2-core dev box (medians of 6 rounds of 1,500; README).
        self._compiled_loss = (torch.compile(self._minibatch_loss, dynamic=False)
                               if compile_loss else None)
        # A plain MLP in float32, eager, its forward the policy's own (not DDP's, whose
        # gradient averaging hooks into autograd): the minibatch's gradients written out,
        # several times cheaper than autograd's on small networks (explicit_gradients.py).
        plain = (not compile_loss and precision == "float32"
                 and (train_forward is None or train_forward == policy.forward_sequence))
        self.explicit = ExplicitMLP.for_policy(policy) if plain else None

    @property
    def numpy_math(self) -> bool:
        """Whether the policy's arithmetic runs in numpy (explicit_gradients.py) rather than
        through torch's autograd (what a benchmark reports beside its figures)."""
        return self.explicit is not None

    def minibatch_loss(self, *args):
        """_minibatch_loss, compiled where train.compile asks. A machine where the compiler
        cannot build (Inductor's CPU code needs a C++ compiler) trains on eagerly, saying so."""
        if self._compiled_loss is None:
            return self._minibatch_loss(*args)
        try:
            return self._compiled_loss(*args)
        except torch._dynamo.exc.BackendCompilerFailed as e:
            self._compiled_loss = None
            cause = getattr(e, "inner_exception", None) or e
            reason = f"{type(cause).__name__}: {str(cause).strip().splitlines()[0]}" \
                if str(cause).strip() else type(cause).__name__
            warnings.warn(f"train.compile: torch.compile could not build the loss ({reason}); "
                          f"training on without it", stacklevel=2)
            return self._minibatch_loss(*args)

    def autocast(self, device: torch.device):
        """The precision's context for the policy's forward passes (the trainer's collection
        uses it too, so that the log-probs a minibatch compares were computed alike)."""
        if self.precision == "float32":
            return contextlib.nullcontext()
        return torch.autocast(device.type, dtype=torch.bfloat16)

    def collection_casts(self, device: torch.device) -> CollectionCasts:
        """What the trainer holds open around a whole collection (see CollectionCasts)."""
        return CollectionCasts(self.params, device, self.precision == "bfloat16",
                               lambda: self.autocast(device))

    def _minibatch_loss(self, obs, state, starts, actions, old_logprob, adv, values, valid,
                        weights, clip_coef: float, vf_clip_coef: float, vf_coef: float,
                        ent_coef: float):
        """(loss, stats, new ratios, new values) of one minibatch: the policy's forward, the
        log-probabilities of the actions taken, the advantages normalized, the PPO loss.
        Everything between the minibatch's tensors and loss.backward(), so that
        `train.compile` can fuse it into one forward and one backward graph."""
        with self.autocast(obs.device):
            params, new_value = self.train_forward(obs, state, starts)
        params, new_value = params.float(), new_value.float()  # no-ops in float32
        new_logprob, entropy = self.policy.actor.evaluate(params, actions)
        returns = adv + values
        count = valid.sum().clamp(min=1.0)  # shared by the normalization and the loss
        norm_adv = normalize_advantages(adv, valid, count)
        if weights is not None:
            norm_adv = norm_adv * weights
        loss, stats, new_ratio = ppo_loss(
            new_logprob, old_logprob, entropy, new_value, values.reshape(-1),
            norm_adv.reshape(-1), returns.reshape(-1), valid.reshape(-1), clip_coef,
            vf_clip_coef, vf_coef, ent_coef, count)
        return loss, stats, new_ratio, new_value

    def set_learning_rate(self, lr: float) -> None:
        for group in self.optimizer.param_groups:
            group["lr"] = lr

    def update(self, data: dict, get_train: Callable, global_step: int,
               safe_point: Callable[[], None], schedule: Anchor = START,
               adaptive: AdaptiveRate | None = None) -> dict:
        """Train on `data` (RolloutBuffer.tensors on the device). `get_train()` returns the
        current train config: live changes made at a safe point apply to the next minibatch.
        `schedule` anchors the learning-rate and beta schedules (engine/algo/schedule.py)."""
        train = get_train()
        segments, horizon = data["values"].shape
        device = data["values"].device
        rewards = data["rewards"]
        terminals, truncations = data["terminals"], data["truncations"]
        starts = (terminals + truncations) > 0
        values = data["values"].clone()  # refreshed with each minibatch's new values
        ratio = torch.ones_like(values)
        # The last step of a segment has no successor in the batch, hence no advantage.
        valid = data["masks"].clone()
        valid[:, -1] = 0.0
        advantages = torch.empty_like(values)
        recurrent = "state_h" in data

        # Shuffled steps: the batch seen as [segments * horizon, 1] (views of the same
        # storage, so the refreshed values and ratios land where the advantages read them).
        shuffle = bool(getattr(train, "shuffle_steps", False))
        if shuffle and recurrent:
            raise ValueError("train.shuffle_steps is for feedforward policies: an LSTM "
                             "replays whole segments (set shuffle_steps false)")
        rows, cols = (segments * horizon, 1) if shuffle else (segments, horizon)

        explicit = self.explicit
        # The explicit path's minibatches are numpy arrays (views of the same memory): numpy
        # indexes and slices small arrays in a fraction of torch's per-call cost.
        def by_row(t: torch.Tensor):
            view = t.reshape(rows, cols, *t.shape[2:])  # a view: all are contiguous
            return view.numpy() if explicit is not None else view

        obs_rows, actions_rows = by_row(data["observations"]), by_row(data["actions"])
        logprob_rows, starts_rows = by_row(data["logprobs"]), by_row(starts)
        collected_rows, values_rows = by_row(data["values"]), by_row(values)
        ratio_rows, valid_rows, adv_rows = by_row(ratio), by_row(valid), by_row(advantages)
        if shuffle:
            mb_rows = max(1, min(rows, train.minibatch_size))
        else:
            mb_rows = max(1, min(segments, train.minibatch_size // horizon))
        per_epoch = max(1, rows // mb_rows)
        minibatches = train.update_epochs * per_epoch
        # Sums that become tensors on the device with autograd's stats (no sync per
        # minibatch) and stay Python floats with explicit_gradients.py's.
        sums = {name: 0.0 for name in STAT_NAMES}
        ev = 0.0
        # pre-clip gradient norms, for engine/diagnosis/rules.py
        grad_norm, grad_clipped = 0.0, 0.0
        # Per minibatch only what changes: on a 64-wide MLP each torch op costs about as much
        # as its arithmetic, so what is the same all epoch is gathered or computed once.
        static = None  # shuffled steps: this epoch's batch in its drawn order, sliced below
        clamped_at, used_rewards = None, rewards  # train.reward_clamp's rewards, and its value
        measured = stepped = 0  # minibatches whose loss was computed, and those stepped
        for i in range(minibatches):
            if i:
                safe_point()
                train = get_train()
            scheduled = learning_rate(train, global_step, schedule)
            self.set_learning_rate(scheduled if adaptive is None else
                                   adaptive.rate(train, scheduled))
            refresh = train.refresh_advantages  # off: GAE of the collected values only
            if i == 0 or refresh:
                clamp = train.reward_clamp
                if clamp != clamped_at:  # a live field: clamped again only when it changes
                    used_rewards = rewards.clamp(-clamp, clamp) if clamp > 0 else rewards
                    clamped_at = clamp
                compute_advantage(values if refresh else data["values"],
                                  used_rewards, terminals, truncations, ratio, train.gamma,
                                  train.gae_lambda, train.vtrace_rho_clip, train.vtrace_c_clip,
                                  out=advantages, final_values=data.get("final_values"))
            if i == 0:
                ev = explained_variance(values, advantages + values, valid)
            if shuffle:  # every step once an epoch, uniformly: no priorities, weights 1
                part = i % per_epoch
                if part == 0:
                    order = torch.randperm(rows, device=device)
                    if explicit is not None:
                        order = order.numpy()
                    # one gather an epoch instead of one per minibatch and tensor; a slice
                    # of the permuted copy holds what indexing by its part of `order` would.
                    # index_select, not t[order]: the same rows, and for a batch of frames
                    # (1,024 Atari stacks, 28 MB) quicker (medians of 10: 17.8 ms against
                    # 23.9 ms on the dev box).
                    static = {name: _rows(t, order) for name, t in (
                        ("obs", obs_rows), ("actions", actions_rows), ("logprob", logprob_rows),
                        ("starts", starts_rows), ("valid", valid_rows),
                        ("collected", collected_rows))}
                    if not refresh:  # the advantages are fixed for the whole update
                        static["adv"] = _rows(adv_rows, order)
                cut = slice(part * mb_rows, (part + 1) * mb_rows)
                idx = order[cut]
                mb = {name: t[cut] for name, t in static.items()}
                weights = None
            else:
                probs = segment_priorities(advantages, train.prio_alpha, valid)
                beta = annealed_beta(train.prio_beta0, progress(train, global_step, schedule))
                idx, weights = sample_segments(probs, mb_rows, beta)
                if explicit is not None:
                    idx, weights = idx.numpy(), weights.numpy()
                mb = {"obs": obs_rows[idx], "actions": actions_rows[idx],
                      "logprob": logprob_rows[idx], "starts": starts_rows[idx],
                      "valid": valid_rows[idx], "collected": collected_rows[idx]}
            if refresh or "adv" not in mb:
                mb["adv"] = adv_rows[idx]

            state = (data["state_h"][idx], data["state_c"][idx]) if recurrent else None
            # the value targets and the value clip's reference: the values the advantages
            # were computed with (refreshed ones, or the collected ones)
            mb_values = values_rows[idx] if refresh else mb["collected"]
            args = (mb["actions"].reshape(mb_rows * cols, -1), mb["logprob"].reshape(-1),
                    mb["adv"], mb_values, mb["valid"], weights, train.clip_coef,
                    train.vf_clip_coef, train.vf_coef, train.ent_coef)
            if explicit is not None:  # sets every parameter's .grad
                stats, new_ratio, new_value = explicit.loss_and_gradients(mb["obs"], *args)
            else:
                loss, stats, new_ratio, new_value = self.minibatch_loss(
                    mb["obs"], state, mb["starts"], *args)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                new_ratio, new_value = new_ratio.detach(), new_value.detach()
            measured = i + 1
            if kl_too_far(stats, train):
                # its stats describe the policy before this step; the step is not taken
                for name in STAT_NAMES:
                    sums[name] += stats[name]
                break
            if train.max_grad_norm > 0:
                norm = (clip_gradients(self.params, train.max_grad_norm) if explicit is None
                        else explicit.clip_gradients(train.max_grad_norm))
                grad_norm += norm
                grad_clipped += norm > train.max_grad_norm
            self.optimizer.step()
            stepped = i + 1

            if refresh:
                # what the next minibatch's V-trace reads; unread while refreshing is off (if
                # it is turned on live mid-update, the steps trained before read as collected)
                ratio_rows[idx] = new_ratio.reshape(mb_rows, cols)
                values_rows[idx] = new_value.reshape(mb_rows, cols)
            for name in STAT_NAMES:
                sums[name] += stats[name]

        row = {name: float(sums[name]) / measured for name in STAT_NAMES}
        row["explained_variance"] = ev
        row["learning_rate"] = float(self.optimizer.param_groups[0]["lr"])
        row["minibatches"] = stepped  # fewer than planned when train.target_kl stopped it
        row["grad_norm"] = float(grad_norm) / measured  # 0 when clipping is off
        row["grad_clipped"] = float(grad_clipped) / measured  # share clipped
        self.last_update = row  # what engine/diagnosis/doctor.py reads after each epoch
        return row


class CollectionCasts:
    """The collection's forward passes under bfloat16, each weight cast once a collection.

    autocast casts a float32 weight to bfloat16 on every forward pass, and caches the copy
    only while an autocast context is open (and never in inference mode). Around one step
    that cache dies with the step: Pong's 3136 x 512 layer took 1.2 ms a step to cast, more
    than half the forward pass of 8 frames. This context keeps an outer (disabled) autocast
    open for the whole collection, so each step's `step()` context (no_grad and autocast)
    reuses the copies; nothing else runs under autocast. The weights do not change during a
    collection (the learner runs after it), but should a safe point load new ones in place,
    `refresh()` sees their version counters move and drops the stale copies.
    In float32 it is inference mode a step, as before."""

    def __init__(self, params: list[torch.Tensor], device: torch.device, bfloat16: bool,
                 autocast: Callable):
        # autocast: the learner's own context (Learner.autocast), so that collection and
        # update compute the log-probs an update compares in the same precision
        self.params, self.device, self.bfloat16 = params, device, bfloat16
        self.autocast = autocast
        self._outer = None
        self._versions = None

    def _version(self) -> int:
        return sum(p._version for p in self.params)

    def __enter__(self) -> CollectionCasts:
        if self.bfloat16:
            self._outer = torch.autocast(self.device.type, enabled=False)
            self._outer.__enter__()
            self._versions = self._version()
        return self

    def __exit__(self, *exc) -> None:
        if self._outer is not None:  # leaving the outermost autocast clears its cache
            self._outer.__exit__(*exc)
            self._outer = None

    def refresh(self) -> None:
        """Drop the cached copies if a weight changed in place since they were made."""
        if self._outer is not None and self._version() != self._versions:
            torch.clear_autocast_cache()
            self._versions = self._version()

    def step(self):
        """The context of one step's forward passes."""
        if not self.bfloat16:
            return torch.inference_mode()
        stack = contextlib.ExitStack()
        stack.enter_context(torch.no_grad())
        stack.enter_context(self.autocast())
        return stack
