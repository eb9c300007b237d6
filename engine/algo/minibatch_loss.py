"""One minibatch's PPO loss and gradients, behind one interface with two implementations.

    gradients = minibatch_gradients(policy, optimizer, ...)
    stats, new_ratio, new_value = gradients(minibatch, train)   # sets every parameter's .grad
    norm = gradients.clip(train.max_grad_norm)

`AutogradLoss` is the reference, the one to read: the policy's forward, the log-probabilities
of the actions taken, the advantages normalized, engine/algo/ppo_loss.py, loss.backward().
`NumpyLoss` computes the same function and the same gradients written out in numpy
(engine/algo/numpy_mlp.py), for the one case where that is much faster: a plain MLP in float32
on the CPU, where each torch operator's dispatch costs more than its arithmetic. It is used
only where it applies and `train.numpy_math` allows; tests/engine/algo/test_numpy_mlp.py holds
every head and layout of it to AutogradLoss, and docs/speed.md gives the speed-up.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import torch

from puffer_tui.engine.algo.numpy_mlp import NumpyMLP
from puffer_tui.engine.algo.ppo_loss import normalize_advantages, ppo_loss
from puffer_tui.engine.algo.precision import autocast, check_precision


@torch.no_grad()
def clip_gradients(params: list[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Scale the gradients of `params` (one device and dtype) to a total norm of at most
    `max_norm`; returns the norm before. torch.nn.utils.clip_grad_norm_'s arithmetic to the
    bit, in four kernels: its own checks and grouping cost a tenth of a small policy's
    minibatch."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return torch.zeros((), device=params[0].device if params else None)
    total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    torch._foreach_mul_(grads, (max_norm / (total + 1e-6)).clamp_(max=1.0))
    return total


def _loss_args(mb, train) -> tuple:
    """The minibatch's loss inputs after the observations, flattened as the loss reads them."""
    rows, cols = mb.valid.shape[:2]
    return (mb.actions.reshape(rows * cols, -1), mb.logprob.reshape(-1), mb.adv, mb.values,
            mb.valid, mb.weights, train.clip_coef, train.vf_clip_coef, train.vf_coef,
            train.ent_coef)


class AutogradLoss:
    """The reference: the loss built from torch operators and differentiated by autograd.
    `train_forward` replays sequences (the policy's, DDP's wrapper of it, or a compiled one);
    `compile_loss` (train.compile) compiles the whole minibatch loss into one forward and one
    backward graph."""

    arrays = False  # minibatches are tensors

    def __init__(self, policy, optimizer, train_forward: Callable | None = None,
                 precision: str = "float32", compile_loss: bool = False):
        self.policy, self.optimizer = policy, optimizer
        self.params = list(policy.parameters())  # fixed: looked up once, not per minibatch
        self.train_forward = train_forward or policy.forward_sequence
        self.precision = check_precision(precision)
        self._compiled = (torch.compile(self.loss, dynamic=False) if compile_loss else None)

    def loss(self, obs, state, starts, actions, old_logprob, adv, values, valid, weights,
             clip_coef: float, vf_clip_coef: float, vf_coef: float, ent_coef: float):
        """(loss, stats, new ratios, new values): everything between the minibatch's tensors
        and loss.backward(), so that train.compile can fuse it."""
        with autocast(self.precision, obs.device):
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

    def _compiled_or_eager(self, *args):
        """The compiled loss where train.compile asks. A machine where the compiler cannot
        build (Inductor's CPU code needs a C++ compiler) trains on eagerly, saying so."""
        if self._compiled is None:
            return self.loss(*args)
        try:
            return self._compiled(*args)
        except torch._dynamo.exc.BackendCompilerFailed as e:
            self._compiled = None
            cause = getattr(e, "inner_exception", None) or e
            reason = f"{type(cause).__name__}: {str(cause).strip().splitlines()[0]}" \
                if str(cause).strip() else type(cause).__name__
            warnings.warn(f"train.compile: torch.compile could not build the loss ({reason}); "
                          f"training on without it", stacklevel=3)
            return self.loss(*args)

    def __call__(self, mb, train):
        loss, stats, new_ratio, new_value = self._compiled_or_eager(
            mb.obs, mb.state, mb.starts, *_loss_args(mb, train))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        return stats, new_ratio.detach(), new_value.detach()

    def clip(self, max_norm: float):
        return clip_gradients(self.params, max_norm)


class NumpyLoss:
    """AutogradLoss's function and gradients for a plain MLP, written out in numpy."""

    arrays = True  # minibatches are numpy views of the batch (cheap to index and slice)

    def __init__(self, mlp: NumpyMLP):
        self.mlp = mlp

    def __call__(self, mb, train):
        return self.mlp.loss_and_gradients(mb.obs, *_loss_args(mb, train))

    def clip(self, max_norm: float) -> float:
        return self.mlp.clip_gradients(max_norm)


def minibatch_gradients(policy, optimizer, train_forward: Callable | None = None,
                        precision: str = "float32", compile_loss: bool = False,
                        numpy_math: bool = True) -> AutogradLoss | NumpyLoss:
    """NumpyLoss where it applies (a plain MLP in float32, eager, trained through its own
    forward rather than DDP's, whose gradient averaging hooks into autograd) and `numpy_math`
    allows; AutogradLoss otherwise."""
    plain = (numpy_math and not compile_loss and precision == "float32"
             and (train_forward is None or train_forward == policy.forward_sequence))
    mlp = NumpyMLP.for_policy(policy) if plain else None
    if mlp is not None:
        return NumpyLoss(mlp)
    return AutogradLoss(policy, optimizer, train_forward, precision, compile_loss)

