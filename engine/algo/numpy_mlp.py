"""A plain MLP policy on the CPU in numpy, without autograd: its forward and action draws for
collection, and its PPO minibatch with the gradients written out.

    mlp = NumpyMLP.for_policy(policy)   # None where the policy is not a plain MLP
    stats, ratio, values = mlp.loss_and_gradients(obs, actions, ...)  # sets param.grad
    params, values = mlp.step(obs)          # Policy.step's outputs, for collection

Why: on the small MLPs of classic and continuous control (64 or 128 wide, minibatches of 64
to 256) each operator's arithmetic takes a few microseconds, and the machinery around it
more: autograd records a graph and runs a backward engine, and each torch operator's dispatch
costs several times numpy's. docs/speed.md gives the figures (tools/loss_paths.py measures a
minibatch each way; `bench train` with and without `--train.numpy-math`).

What "plain MLP" means (`NumpyMLP.reason_not`): engine/algo/policy.py's Policy on the CPU
without an LSTM, whose encoders are float-vector ObservationEncoders (one linear layer; no
one-hot cells, images or structured leaves), with any of its activations and action heads
(Discrete, MultiDiscrete, Box with Gaussian or gSDE noise), a shared trunk or a separate
critic. Anything else trains through autograd. The function is
engine/algo/minibatch_loss.py's AutogradLoss, the reference: tests/engine/algo/
test_numpy_mlp.py compares the gradients of every such layout with it.

The arrays are views of the torch tensors (no copies): the parameters the optimizer changes
are what the next call reads, and the gradients land in each parameter's `.grad`, so
clipping and the optimizer (Adam or Muon) are unchanged. A gradient flows where autograd's
does: clamp passes it inside its bounds (inclusive), an elementwise max to the larger
argument (split in half between equal ones: in the policy term they are equal exactly where
the ratio is inside the clip range, and both halves carry the same gradient there).
"""
from __future__ import annotations

import functools
import math

import numpy as np
import torch

from puffer_tui.engine.algo.distributions import (
    LOG_2PI,
    LOG_STD_MAX,
    LOG_STD_MIN,
    SDE_VARIANCE_FLOOR,
)
from puffer_tui.engine.algo.encoders import ACTIVATIONS, ObservationEncoder

_ACTIVATION_NAMES = {fn: name for name, fn in ACTIVATIONS.items()}
_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_ENTROPY_CONSTANT = 0.5 * (1.0 + LOG_2PI)
_OUTPUT = 5  # where a tower's cache holds its output (the features the heads read)
STAT_ORDER = ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac")


def _as_array(x) -> np.ndarray:
    """A CPU tensor's memory as an array; arrays as they are."""
    return x if isinstance(x, np.ndarray) else x.detach().numpy()


def _column_sums(x: np.ndarray, out: np.ndarray) -> None:
    """x.sum(0) into `out`, as a product with a row of ones: BLAS's, a third of the time of
    numpy's reduction over the first axis of a [64, 64] array."""
    np.matmul(_ones(x.shape[0]), x, out=out)


@functools.cache
def _ones(n: int) -> np.ndarray:
    ones = np.ones(n, np.float32)
    ones.flags.writeable = False
    return ones


def _bounded(x: np.ndarray, low: float, high: float) -> np.ndarray:
    """np.clip's values without its wrapper (a few µs a call on arrays of a handful)."""
    return np.minimum(np.maximum(x, low), high)


def _erf(x: np.ndarray) -> np.ndarray:
    return torch.from_numpy(x).erf_().numpy()  # numpy has no erf; in place, on a temporary


def _activate(name: str, z: np.ndarray):
    """(activation(z), what its derivative needs besides z and the output)."""
    if name == "tanh":
        return np.tanh(z), None
    if name == "relu":
        return np.maximum(z, 0.0), None
    cdf = _erf(z * _SQRT_HALF)  # exact gelu: z * Phi(z), Phi(z) = (1 + erf(z / sqrt 2)) / 2
    cdf *= 0.5
    cdf += 0.5
    return z * cdf, cdf


def _activation_grad(name: str, grad: np.ndarray, z: np.ndarray, y: np.ndarray,
                     cdf: np.ndarray | None) -> np.ndarray:
    """d loss / d z from d loss / d y, for y = activation(z)."""
    if name == "tanh":
        return grad * (1.0 - y * y)
    if name == "relu":
        return grad * (y > 0)
    density = np.exp(-0.5 * z * z)  # gelu' = Phi(z) + z * phi(z)
    density *= z
    density *= _INV_SQRT_2PI
    density += cdf
    density *= grad
    return density


class _Tower:
    """encoder (table [in, H] + bias) -> activation -> hidden (weight [H, H] + bias) ->
    activation: the trunk of the shared policy, or one of the separate actor and critic."""

    def __init__(self, encoder: ObservationEncoder, hidden: torch.nn.Linear, activation: str):
        self.tensors = (encoder.table, encoder.bias, hidden.weight, hidden.bias)
        self.activation = activation

    def forward(self, x: np.ndarray, arrays):
        table, table_bias, weight, bias = arrays
        z1 = x @ table
        z1 += table_bias
        y1, d1 = _activate(self.activation, z1)
        z2 = y1 @ weight.T
        z2 += bias
        y2, d2 = _activate(self.activation, z2)
        return y2, (x, z1, y1, d1, z2, y2, d2)

    def backward(self, grad_out: np.ndarray, cache, arrays, grads) -> None:
        x, z1, y1, d1, z2, y2, d2 = cache
        weight = arrays[2]
        g_table, g_table_bias, g_weight, g_bias = grads
        g2 = _activation_grad(self.activation, grad_out, z2, y2, d2)
        np.matmul(g2.T, y1, out=g_weight)
        _column_sums(g2, g_bias)
        g1 = _activation_grad(self.activation, g2 @ weight, z1, y1, d1)
        np.matmul(x.T, g1, out=g_table)
        _column_sums(g1, g_table_bias)


class NumpyMLP:
    """Forward and backward of a plain MLP Policy over its own parameter tensors."""

    def __init__(self, policy):
        reason = self.reason_not(policy)
        if reason:
            raise ValueError(f"not a plain MLP policy: {reason}")
        self.policy = policy
        activation = _ACTIVATION_NAMES[policy.activation]
        self.separate = policy.separate_critic
        self.towers = [_Tower(policy.encoder, policy.hidden, activation)]
        if self.separate:
            self.towers.append(_Tower(policy.critic_encoder, policy.critic_hidden, activation))
        self.head = policy.actor
        self.box = self.head.kind == "box"
        self.sde = self.head.sde
        self.last_params = None  # the head's output of the last collect (see collect)
        # every parameter in a fixed order: the towers', the heads', the log std
        heads = (self.head.linear.weight, self.head.linear.bias, policy.critic.weight,
                 policy.critic.bias)
        self.tensors = [t for tower in self.towers for t in tower.tensors] + list(heads)
        if self.box:
            self.tensors.append(self.head.log_std)
        if len({id(t) for t in self.tensors}) != len(list(policy.parameters())):
            raise ValueError("not a plain MLP policy: it has parameters this module does not "
                             "know")
        self._pointers: list[int] = []
        self._arrays: list[np.ndarray] = []
        self._grads: list[torch.Tensor] = []  # each parameter's .grad, written in place
        self._grad_arrays: list[np.ndarray] = []
        self._flat_grad = np.zeros(0, np.float32)  # the buffer the gradients are views of
        self._head_key: bytes | None = None  # the log std _head_constants were computed for
        self._head_cache: tuple = ()

    @staticmethod
    def reason_not(policy) -> str:
        """Why `policy` cannot run in numpy here ("" if it has)."""
        if getattr(policy, "recurrent", True):
            return "an LSTM policy"
        if _ACTIVATION_NAMES.get(getattr(policy, "activation", None)) is None:
            return "an unknown activation"
        encoders = [policy.encoder] + ([policy.critic_encoder] if policy.separate_critic else [])
        for encoder in encoders:
            if type(encoder) is not ObservationEncoder or encoder.one_hot_values:
                return f"its encoder is a {type(encoder).__name__} (not one float layer)"
            if encoder.activation is not policy.activation:
                return "its encoder's activation differs from the trunk's"
        devices = {p.device.type for p in policy.parameters()}
        if devices != {"cpu"}:
            return f"its parameters are on {', '.join(sorted(devices))} (numpy is the CPU's)"
        if any(p.dtype != torch.float32 for p in policy.parameters()):
            return "its parameters are not float32"
        return ""

    @classmethod
    def for_policy(cls, policy) -> NumpyMLP | None:
        return None if cls.reason_not(policy) else cls(policy)

    def arrays(self) -> list[np.ndarray]:
        """The parameters as arrays, made again only if a tensor's storage moved."""
        pointers = [t.data_ptr() for t in self.tensors]
        if pointers != self._pointers:
            self._arrays = [_as_array(t) for t in self.tensors]
            # normal tensors even when the first call is collection's, in inference mode:
            # clipping scales the gradients in place outside it
            with torch.inference_mode(False):
                flat = torch.zeros(sum(t.numel() for t in self.tensors))
            # views of one flat buffer: clip_gradients is one dot product and one scaling
            offsets = np.cumsum([0] + [t.numel() for t in self.tensors])
            self._grads = [flat[a:b].view_as(t) for a, b, t in
                           zip(offsets[:-1], offsets[1:], self.tensors, strict=True)]
            self._grad_arrays = [g.numpy() for g in self._grads]
            self._flat_grad = flat.numpy()
            self._pointers = pointers
        return self._arrays

    # -- forward --------------------------------------------------------------------------------

    def _forward(self, obs: np.ndarray, arrays):
        """(head output [N, outputs] before gSDE's features, values [N], (the actor tower's
        cache, the critic tower's or, with a shared trunk, both heads' weights stacked))."""
        x = obs.reshape(obs.shape[0], -1).astype(np.float32, copy=False)
        actor, actor_cache = self.towers[0].forward(x, arrays[0:4])
        weight, bias, critic_weight, critic_bias = arrays[-5:-1] if self.box else arrays[-4:]
        if not self.separate:  # both heads from one product, as Policy._heads
            heads = np.concatenate((weight, critic_weight))
            out = actor @ heads.T
            out += np.concatenate((bias, critic_bias))
            return out[:, :-1], out[:, -1], (actor_cache, heads)  # the backward's product too
        critic, critic_cache = self.towers[1].forward(x, arrays[4:8])
        out = actor @ weight.T
        out += bias
        value = critic @ critic_weight[0]
        value += critic_bias[0]
        return out, value, (actor_cache, critic_cache)

    def step(self, obs: torch.Tensor):
        """(action params, values) as torch tensors: Policy.step's for this policy."""
        out, value, (actor_cache, _) = self._forward(obs.numpy(), self.arrays())
        if self.sde:
            out = np.concatenate((out, actor_cache[_OUTPUT]), -1)
        return torch.from_numpy(np.ascontiguousarray(out)), torch.from_numpy(
            np.ascontiguousarray(value))

    def collect(self, obs: torch.Tensor | np.ndarray, noise=None, rows=None):
        """One collection step: (actions, log-probs, values, the actions as the env takes
        them), numpy arrays, drawn as Policy.step + ActionHead.sample + to_env draw them,
        from the same torch random stream (so seeds and exact resume hold)."""
        head = self.head
        arrays = self.arrays()
        obs = obs if isinstance(obs, np.ndarray) else obs.numpy()
        out, value, (actor_cache, _) = self._forward(obs, arrays)
        features = actor_cache[_OUTPUT]
        # the head's parameters as Policy.step gives them, for a viewer of the policy
        # (engine/evaluation/policy_view.py); gSDE's also hold the features: not kept
        self.last_params = None if self.sde else out
        n = out.shape[0]
        if not self.box:  # Gumbel-max, one uniform per logit (distributions._categorical_sample)
            sizes = head.sizes
            chunks = [out] if len(sizes) == 1 else np.split(out, np.cumsum(sizes)[:-1], -1)
            picks = []
            for logits in chunks:  # torch.rand(...).clamp_(min=1e-20), the clamp in numpy
                uniform = np.maximum(torch.rand(logits.shape).numpy(), np.float32(1e-20))
                picks.append((logits - np.log(-np.log(uniform))).argmax(-1))
            picked = picks[0][:, None] if len(picks) == 1 else np.stack(picks, -1)
            actions = picked.astype(np.int32).reshape(n, *head.action_shape)
            env_actions = actions
        else:
            log_std, std, sigma2, low, high, _ = self._head_constants(arrays[-1])
            if not self.sde:
                actions = out + torch.randn(out.shape).numpy() * std
            elif noise is not None:
                weights = noise.advance(n, rows).numpy() * std
                actions = out + np.matmul(features[:, None, :], weights)[:, 0, :]
            else:
                variance = (features * features) @ sigma2
                actions = out + torch.randn(out.shape).numpy() * np.sqrt(
                    variance + SDE_VARIANCE_FLOOR)
            actions = actions.astype(np.float32, copy=False)
            if head.squash == "tanh":
                env_actions = low + (np.tanh(actions) + 1.0) * 0.5 * (high - low)
            else:
                env_actions = np.minimum(np.maximum(actions, low), high)
            actions = actions.reshape(n, *head.action_shape)
            env_actions = env_actions.reshape(actions.shape)
        logp = self._log_prob_entropy(out, features, actions,
                                      arrays[-1] if self.box else None, with_entropy=False)[0]
        return actions, logp, np.ascontiguousarray(value), env_actions

    def _head_constants(self, log_std_param: np.ndarray):
        """(bounded log std, exp of it, exp of twice it, the action bounds, where the log std
        is inside its bounds) of a Box head:
        the same for every step of a collection (the parameter changes in the update), so
        computed again only when its values changed (a handful of floats: their bytes are
        the key; torch's version counter misses the fused optimizer's writes)."""
        key = log_std_param.tobytes()
        if key != self._head_key:
            log_std = _bounded(log_std_param, LOG_STD_MIN, LOG_STD_MAX)
            # where clamp passes the log std's gradient (inside its bounds, inclusive)
            inside = (log_std_param >= LOG_STD_MIN) & (log_std_param <= LOG_STD_MAX)
            self._head_cache = (log_std, np.exp(log_std), np.exp(2.0 * log_std),
                                self.head.low.numpy(), self.head.high.numpy(), inside)
            self._head_key = key
        return self._head_cache

    # -- the action head's log-probability and entropy, and their gradients --------------------

    def _log_prob_entropy(self, out: np.ndarray, features: np.ndarray, actions: np.ndarray,
                          log_std_param: np.ndarray | None, with_entropy: bool = True):
        """(log-probs [N], entropies [N] (None unless `with_entropy`), what the backward
        needs)."""
        n = out.shape[0]
        if not self.box:
            sizes = self.head.sizes
            chunks = [out] if len(sizes) == 1 else np.split(out, np.cumsum(sizes)[:-1], -1)
            picked = actions.reshape(n, len(chunks)).astype(np.int64)
            rows = np.arange(n)
            logp = np.zeros(n, np.float32)
            entropy = np.zeros(n, np.float32) if with_entropy else None
            saved = []
            for i, logits in enumerate(chunks):
                shifted = logits - logits.max(-1, keepdims=True)
                logp_all = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
                logp += logp_all[rows, picked[:, i]]
                if with_entropy:
                    probs = np.exp(logp_all)
                    chunk_entropy = -(probs * logp_all).sum(-1)
                    entropy += chunk_entropy
                    saved.append((logp_all, probs, chunk_entropy))
            return logp, entropy, (rows, picked, saved)
        actions = actions.reshape(n, -1).astype(np.float32, copy=False)
        log_std, std, sigma2 = self._head_constants(log_std_param)[:3]
        if self.sde:
            squared = features * features
            variance = squared @ sigma2
            variance += SDE_VARIANCE_FLOOR
            row_log_std = 0.5 * np.log(variance)
            std = np.exp(row_log_std)
            entropy = (row_log_std + _ENTROPY_CONSTANT).sum(-1) if with_entropy else None
        else:
            squared = variance = None
            row_log_std = log_std
            entropy = np.full(n, float((log_std + _ENTROPY_CONSTANT).sum()), np.float32) \
                if with_entropy else None
        z = (actions - out) / std
        logp = (-0.5 * z * z - row_log_std).sum(-1) - (0.5 * LOG_2PI) * z.shape[1]
        return logp, entropy, (z, std, sigma2, squared, variance)

    def _head_backward(self, grad_logp: np.ndarray, grad_entropy: np.ndarray, saved,
                       log_std_param, grad_log_std) -> np.ndarray:
        """d loss / d head output [N, outputs]; writes the log std's gradient (Box)."""
        if not self.box:
            rows, picked, chunks = saved
            grads = []
            for i, (logp_all, probs, chunk_entropy) in enumerate(chunks):
                g = logp_all + chunk_entropy[:, None]
                g *= grad_entropy[:, None]
                g += grad_logp[:, None]
                g *= -probs
                g[rows, picked[:, i]] += grad_logp
                grads.append(g)
            return grads[0] if len(grads) == 1 else np.concatenate(grads, -1)
        z, std, sigma2, squared, variance = saved
        g_logp = grad_logp[:, None]
        grad_row_log_std = g_logp * (z * z - 1.0)
        grad_row_log_std += grad_entropy[:, None]
        if self.sde:  # row log std = 0.5 log(f^2 @ sigma^2 + floor); f carries no gradient
            grad_row_log_std *= 0.5
            grad_row_log_std /= variance
            np.matmul(squared.T, grad_row_log_std, out=grad_log_std)
            grad_log_std *= 2.0 * sigma2
        else:
            _column_sums(grad_row_log_std, grad_log_std)
        grad_log_std *= self._head_constants(log_std_param)[5]
        return g_logp * z / std

    # -- the minibatch ---------------------------------------------------------------------------

    def loss_and_gradients(self, obs, actions, old_logprob, adv, values, valid, weights,
                           clip_coef: float, vf_clip_coef: float, vf_coef: float,
                           ent_coef: float):
        """Learner._minibatch_loss's (stats, new ratios, new values) for the same arguments
        (numpy arrays or CPU tensors), with the gradients of its loss written into the
        parameters' `.grad`; the stats are Python floats, the ratios and values numpy."""
        arrays = self.arrays()
        grads = self._grad_arrays
        obs, actions, old_logprob, adv, values, valid = map(
            _as_array, (obs, actions, old_logprob, adv, values, valid))
        obs = obs.reshape(-1, *obs.shape[2:])
        out, new_value, (actor_cache, critic_cache) = self._forward(obs, arrays)
        features = actor_cache[_OUTPUT]
        log_std = arrays[-1] if self.box else None
        new_logprob, entropy, head_saved = self._log_prob_entropy(
            out, features, actions, log_std)

        # as ppo_loss.normalize_advantages and ppo_loss, flat over the minibatch
        count = max(float(valid.sum()), 1.0)
        mean = float((adv * valid).sum()) / count
        centred = adv - mean
        var = float(np.square(centred * valid).sum()) / max(count, 2.0)
        norm_adv = centred * (1.0 / (math.sqrt(var) + 1e-8)) * valid
        if weights is not None:
            norm_adv *= _as_array(weights)
        advantages, valid = norm_adv.reshape(-1), valid.reshape(-1)
        returns = (adv + values).reshape(-1)
        share = valid * (1.0 / count)  # each step's weight in the means

        logratio = new_logprob - old_logprob
        ratio = np.exp(logratio)
        negated = -advantages
        unclipped_term = negated * ratio
        clipped_term = negated * _bounded(ratio, 1.0 - clip_coef, 1.0 + clip_coef)
        # the gradient reaches the ratio where the unclipped term is the max (inside the
        # clip range the two are equal, and the halves sum to the same)
        chosen = unclipped_term >= clipped_term
        grad_ratio = np.where(chosen, negated * share, np.float32(0.0))
        surrogate = np.where(chosen, unclipped_term, clipped_term)

        difference = new_value - returns
        error = difference * difference
        if vf_clip_coef > 0:
            old_value = values.reshape(-1)
            moved = new_value - old_value
            clipped_value = old_value + _bounded(moved, -vf_clip_coef, vf_clip_coef)
            clipped_error = np.square(clipped_value - returns)
            plain = error > clipped_error
            tie = error == clipped_error
            in_value_clip = (moved >= -vf_clip_coef) & (moved <= vf_clip_coef)
            clipped_grad = (clipped_value - returns) * in_value_clip
            grad_error = np.where(plain, difference, clipped_grad)
            grad_error = np.where(tie, 0.5 * (difference + clipped_grad), grad_error)
            error = np.maximum(error, clipped_error)
        else:
            grad_error = difference
        grad_value = (vf_coef * share) * grad_error  # d (vf_coef * 0.5 * mean(error))

        # backward: the action head, the heads' layers, the towers
        grad_out = self._head_backward(grad_ratio * ratio, (-ent_coef) * share, head_saved,
                                       log_std, grads[-1] if self.box else None)
        g_weight, g_bias, g_critic_weight, g_critic_bias = grads[-5:-1] if self.box \
            else grads[-4:]
        n_rows = features.shape[0]
        weight, critic_weight = (arrays[-5], arrays[-3]) if self.box else (arrays[-4], arrays[-2])
        if not self.separate:  # one product back through both heads, as forward's
            grad_heads = np.concatenate((grad_out, grad_value[:, None]), 1)
            head_weights = grad_heads.T @ features
            g_weight[...], g_critic_weight[0] = head_weights[:-1], head_weights[-1]
            head_biases = _ones(n_rows) @ grad_heads
            g_bias[...], g_critic_bias[0] = head_biases[:-1], head_biases[-1]
            self.towers[0].backward(grad_heads @ critic_cache, actor_cache, arrays[0:4],
                                    grads[0:4])
        else:
            np.matmul(grad_out.T, features, out=g_weight)
            _column_sums(grad_out, g_bias)
            self.towers[0].backward(grad_out @ weight, actor_cache, arrays[0:4], grads[0:4])
            critic_features = critic_cache[_OUTPUT]
            np.matmul(grad_value, critic_features, out=g_critic_weight[0])
            g_critic_bias[0] = grad_value.sum()
            self.towers[1].backward(np.multiply.outer(grad_value, critic_weight[0]),
                                    critic_cache, arrays[4:8], grads[4:8])
        for tensor, grad in zip(self.tensors, self._grads, strict=True):
            if tensor.grad is not grad:  # the setter's checks cost more than this test
                tensor.grad = grad

        # the statistics, in one product: each row's terms weighted by its share
        terms = np.stack((surrogate, error, entropy, (ratio - 1) - logratio,
                          np.abs(ratio - 1) > clip_coef))
        sums = terms.astype(np.float32, copy=False) @ share
        stats = dict(zip(STAT_ORDER, sums.tolist(), strict=True))
        stats["value_loss"] *= 0.5
        return stats, ratio, new_value

    def clip_gradients(self, max_norm: float) -> float:
        """learner.clip_gradients for the gradients the last minibatch wrote: scaled to a
        total norm of at most `max_norm`; returns the norm before."""
        flat = self._flat_grad
        norm = math.sqrt(float(np.dot(flat, flat)))
        scale = max_norm / (norm + 1e-6)
        if scale < 1.0:
            flat *= scale
        return norm
