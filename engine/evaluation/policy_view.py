"""The policy's view of one watched agent: its action distribution, V(s), the step's reward,
the critic against the realized return once an episode ends, and what drives the choice
(saliency). Computed only while a viewer asks (engine/runtime/frame_source.py installs
`PolicyWatch.observe` as the trainer's `step_watch` then, and removes it after).

    watch = PolicyWatch(policy, gamma=lambda: 0.99, agents_per_env=1, frame_shape=(11, 11))
    watch.observe(obs, env_ids, actions, values, rewards, terminals, truncations)  # each step
    view = watch.view()          # the wire dict of a `frame` push's "policy" (docs/protocol.md)

Per step `observe` reads one row's value and the reward that arrived and, at an episode's
end, computes the discounted return from every step of it; the row's observation, action and
the head's output it drew from are copied only for the steps a view may read (`keep_from`).
The distribution (from the step's own head output, or a forward pass where the collection
does not give it) and the backward pass of the saliency run in `view`, at the frame rate, on
that one row. `observed` and `computed` count both, so a test can check that
nothing runs without a viewer.

Rewards and observations are the ones the policy and critic learn from (after
train.normalize_observations / normalize_rewards), so the value and the return compare like
with like. Saliency is |d log pi(a|s) / d input| (or of V(s)) per observation cell: for
small-integer grids (one-hot encoded, e.g. squared) the input is the one-hot encoding and a
cell reads the gradient of the input its content switches on (gradient x input: what
removing the content would change, to first order; an empty cell reads 0); for images a pixel
reads the gradient times its contrast with the median of its 5 x 5 neighbourhood (what
blurring it there would change, to first order: a uniform field, a wall and the straight edge
between them read 0), the channels summed.
"""

from __future__ import annotations

import base64
import math
import time
from collections import deque
from collections.abc import Callable

import numpy as np
import torch

from puffer_tui.engine.algo.encoders import ObservationEncoder
from puffer_tui.envs.image_spaces import image_layout

SALIENCY_OF = ("action", "value")  # what the gradient is taken of: log pi(a|s), or V(s)
MAX_EPISODE = 10_000  # steps of one episode kept for its value-vs-return series
SERIES_POINTS = 120  # points of the series sent (the chart is at most this wide)
RANKED_DIMS = 16  # flat observations: the dimensions listed, most salient first
MAX_HEADS, MAX_ACTIONS = 64, 256  # what a push holds at most (wider spaces are cut)
SALIENCY_INTERVAL = 0.25  # seconds a saliency map is reused for at least (4 a second at most)
# ... and at least as long as keeps its backward passes within this share of the trainer's time:
# a map that took 5 ms is reused for 1 s (the forward behind the strip is a tenth of it and
# runs at the viewer's frame rate)
SALIENCY_SHARE = 0.005
CONTRAST_RADIUS = 2  # pixels: the neighbourhood an image's pixel is set against (a 5 x 5 window)


class PolicyWatch:
    """One agent row of the trainer's vec env, watched step by step."""

    def __init__(self, policy, gamma: Callable[[], float], agents_per_env: int = 1,
                 frame_shape: tuple[int, int] | None = None, obs_names=None):
        self.policy = policy
        self.gamma = gamma
        self.agents_per_env = max(int(agents_per_env), 1)
        self.frame_shape = tuple(frame_shape) if frame_shape else None
        self.obs_names = list(obs_names) if obs_names else None
        self.env, self.agent, self.row = 0, 0, 0
        self.saliency: str | None = None
        self._salient = None
        self._saliency_cost = 0.0  # seconds the last saliency map took
        self.observed = 0  # steps recorded (the row's scalars; its arrays too when kept)
        self.computed = 0  # views computed (each from one kept row)
        # monotonic time from which each step's observation, action, state and head output are
        # kept for the next view: the frame source sets it to just before that view, so the
        # steps between views copy only their scalars (0: every step kept, as eval's watch)
        self.keep_from = 0.0
        self._clear()

    def _clear(self) -> None:
        self._obs = self._action = self._state = self._params = None
        self._kept = -1  # the `observed` count of the step whose row is kept
        self._value = math.nan
        self._reward = 0.0
        self._steps = 0  # steps of the current episode seen
        self._values: deque[float] = deque(maxlen=MAX_EPISODE)
        self._rewards: deque[float] = deque(maxlen=MAX_EPISODE)
        self.episode: dict | None = None  # the last finished episode's series and error
        self.episodes = 0  # episodes finished while watched

    def follow(self, env: int, agent: int = 0, saliency: str | None = None) -> None:
        """Watch agent `agent` of env `env` from now on (the series start afresh when either
        changes); `saliency` None, "action" or "value"."""
        row = env * self.agents_per_env + min(max(agent, 0), self.agents_per_env - 1)
        saliency = saliency if saliency in SALIENCY_OF else None
        if row != self.row or saliency != self.saliency:
            # (when, of what, the map) of the last saliency computed: kept while the same row
            # and kind are followed (the frame source repeats its wish at every capture)
            self._salient = None
        if row != self.row:
            self._clear()
        self.env, self.agent, self.row = env, agent, row
        self.saliency = saliency

    # -- each step (the trainer's thread) ------------------------------------------------------

    def observe(self, obs, env_ids, actions, values, rewards, terminals, truncations,
                masks=None, state=None, final_values=None, params=None) -> None:
        """One collection step of every row stepped: keep the watched row's. `params`: the
        action head's parameters the step drew from (the policy's output; None: the view
        computes them again)."""
        ids = np.asarray(env_ids)
        if len(ids) > self.row and ids[self.row] == self.row:
            pos = self.row  # every row stepped, in order: the usual case
        else:
            hits = np.flatnonzero(ids == self.row)
            if len(hits) == 0:
                return
            pos = int(hits[0])
        if masks is not None and not masks[pos]:
            return  # a dead or waiting agent: nothing happened to it this step
        self.observed += 1
        # each array read once, at one index: this runs at every step of the watched run
        reward = float(rewards[pos])
        if self._obs is not None:
            self._rewards.append(reward)  # the reward of the action taken last step
        terminal, truncated = bool(terminals[pos]), bool(truncations[pos])
        if terminal or truncated:
            bootstrap = 0.0
            if truncated and not terminal and final_values is not None:
                bootstrap = float(final_values[pos])
            self._finish(bootstrap, truncated and not terminal)
        self._reward = reward
        self._value = _scalar(values, pos)
        self._values.append(self._value)
        self._steps += 1
        if self.keep_from and time.monotonic() < self.keep_from:
            return  # no view reads this step: its scalars are enough
        self._kept = self.observed
        self._obs = _row(obs, pos)
        self._action = _row(actions, pos)
        self._state = None if state is None else (_row(state[0], pos), _row(state[1], pos))
        self._params = None if params is None else _row(params, pos)

    @property
    def ready(self) -> bool:
        """Whether the latest step's row is kept (a view now shows that step)."""
        return self._obs is not None and self._kept == self.observed

    def _finish(self, bootstrap: float, truncated: bool) -> None:
        """The episode that just ended: V(s_t) against the discounted return from t."""
        n = min(len(self._values), len(self._rewards))
        if n:
            values = np.fromiter(self._values, np.float64)[-n:]
            rewards = np.fromiter(self._rewards, np.float64)[-n:]
            returns = discounted_returns(rewards, float(self.gamma()), bootstrap)
            self.episode = {
                "length": self._steps, "truncated": truncated,
                "values": _series(values), "returns": _series(returns),
                "error": float(np.sqrt(np.mean((values - returns) ** 2))),
            }
            self.episodes += 1
        self._values.clear()
        self._rewards.clear()
        self._steps = 0

    # -- at the frame rate (the trainer's thread, at a safe point) ------------------------------

    def view(self) -> dict | None:
        """The wire dict of the watched row's latest step; None before its first step, or
        while its row is not kept (`ready`; the next step after `keep_from` keeps it)."""
        if not self.ready:
            return None
        self.computed += 1
        policy = self.policy
        if self._params is not None:  # what the step drew from: no forward pass
            params, value = _tensor(self._params, policy)[None], self._value
        else:
            obs = _tensor(self._obs, policy)
            state = None if self._state is None else tuple(
                _tensor(s, policy)[None] for s in self._state)
            with torch.no_grad():
                params, value, _ = policy.step(obs[None], state)
            value = float(value.float().reshape(-1)[0])
        head = policy.actor
        out = {"env": self.env, "agent": self.agent, "kind": head.kind,
               "value": _finite(round(value, 4)),
               "reward": _finite(round(self._reward, 4)), "step": self._steps}
        action = np.asarray(_numpy(self._action)).reshape(-1)
        params = params.float()
        if head.kind == "box":
            mean, features = head._split(params)  # noqa: SLF001 - the head's own layout
            if head.sde:
                std = head._sde_variance(features).sqrt()  # noqa: SLF001
            else:
                std = head.bounded_log_std().exp().expand_as(mean)
            out["mean"] = _floats(mean[0, :MAX_ACTIONS])
            out["std"] = _floats(std[0, :MAX_ACTIONS])
            out["action"] = _floats(action[:MAX_ACTIONS])
        else:
            chunks = params[0].split(head.sizes)[:MAX_HEADS]
            out["heads"] = [_floats(torch.softmax(c, -1)[:MAX_ACTIONS], 4) for c in chunks]
            out["action"] = [int(a) for a in action[:MAX_HEADS]]
        if self.episode is not None:
            out["episode"] = self.episode
        if self.saliency is not None:
            salient = self._saliency_now()
            if salient is not None:
                out["saliency"] = salient
        return out

    def _saliency_now(self) -> dict | None:
        """The saliency map, recomputed at most every SALIENCY_INTERVAL seconds, and no sooner
        than its own cost allows (SALIENCY_SHARE): a backward pass costs three forwards, and
        the map changes with the observation, not each frame."""
        now = time.monotonic()
        cached = self._salient
        interval = max(SALIENCY_INTERVAL, self._saliency_cost / SALIENCY_SHARE)
        if cached is None or cached[1] != self.saliency or now - cached[0] >= interval:
            began = time.perf_counter()
            salient = self.saliency_map(self.saliency)
            self._saliency_cost = time.perf_counter() - began
            self._salient = cached = (now, self.saliency, salient)
        return cached[2]

    def saliency_map(self, of: str = "action") -> dict | None:
        """|d log pi(a|s) / d input| (of "value": |d V(s) / d input|) of the latest step, per
        observation cell, as the wire dict: a grid (`height`, `width`, `cells` base64 bytes
        0-255, the largest 255) or, for flat vectors, the ranked dimensions."""
        magnitude = self.gradient(of)
        if magnitude is None:
            return None
        grid = _as_grid(magnitude, self.frame_shape)
        top = float(np.max(np.abs(magnitude))) or 1.0
        if grid is not None:
            cells = np.clip(np.rint(grid / top * 255.0), 0, 255).astype(np.uint8)
            return {"of": of, "height": int(cells.shape[0]), "width": int(cells.shape[1]),
                    "cells": base64.b64encode(cells.tobytes()).decode("ascii")}
        flat = magnitude.reshape(-1)
        order = np.argsort(-flat, kind="stable")[:RANKED_DIMS]
        names = self.obs_names if self.obs_names and len(self.obs_names) == flat.size else None
        side = math.isqrt(flat.size)
        if names is None and side >= 3 and side * side == flat.size:
            # a square window of cells that is not the frame (snake's view around its head)
            names = [f"cell {i // side},{i % side}" for i in range(flat.size)]
        return {"of": of, "dims": [[int(i), round(float(flat[i]) / top, 4),
                                    names[i] if names else f"obs[{i}]"] for i in order]}

    def gradient(self, of: str = "action") -> np.ndarray | None:
        """The magnitudes, shaped as the observation; None where the policy's input is not
        differentiable in it (structured observations)."""
        policy = self.policy
        obs = _tensor(self._obs, policy)[None]
        state = None if self._state is None else tuple(
            _tensor(s, policy)[None] for s in self._state)
        encoders = [m for m in (policy.encoder, getattr(policy, "critic_encoder", None))
                    if m is not None]
        hooks = []
        image = all(type(e).__name__ == "ImageEncoder" for e in encoders)
        with torch.inference_mode(False), torch.enable_grad():
            if all(isinstance(e, ObservationEncoder) and e.one_hot_values > 1
                   for e in encoders):
                # integer grids enter as one-hot inputs: the gradient is taken of those
                first = encoders[0]
                flat = obs.reshape(1, -1)
                leaf = torch.cat([flat == v for v in range(1, first.one_hot_values)],
                                 1).float().requires_grad_(True)
                for encoder in encoders:
                    hooks.append(encoder.register_forward_hook(
                        lambda m, args, output: m.activation(torch.addmm(m.bias, leaf, m.table))))
                inputs = obs
            elif all(isinstance(e, ObservationEncoder) and not e.one_hot_values
                     for e in encoders) or image:
                leaf = obs.float().clone().requires_grad_(True)
                inputs = leaf
            else:
                return None
            try:
                params, value, _ = policy.step(inputs, state)
                if of == "value":
                    target = value.float().sum()
                else:
                    action = _tensor(self._action, policy).reshape(1, -1)
                    target = policy.actor.evaluate(params.float(), action)[0].sum()
                (grad,) = torch.autograd.grad(target, leaf, allow_unused=True)
            finally:
                for hook in hooks:
                    hook.remove()
        if grad is None:
            return None
        grad = grad.detach().float().abs().cpu().numpy()[0]
        if leaf is not inputs:
            # one-hot: the gradient of the input the cell's content switches on (gradient x
            # input), so an empty cell (no input: the bias stands for it) reads 0
            active = leaf.detach().cpu().numpy()[0]
            grad = (grad * active).reshape(-1, obs[0].numel()).sum(0)
        elif image:
            # the same for a picture: gradient x (pixel - its neighbourhood's median), so what
            # stands out reads its part and a uniform field or wall 0 (a tracking policy's
            # plain gradient also lights the empty field where the ball could be: that is
            # sensitivity, not what drives this choice)
            grad = grad * _off_background(obs[0].detach().cpu().numpy())
        return grad.reshape(tuple(obs.shape[1:]))


def _off_background(image: np.ndarray) -> np.ndarray:
    """|pixel - its neighbourhood's median| of an image (HW, CHW or HWC), per channel: what
    stands out where it is. A uniform area (a field, a wall, a straight edge between them)
    reads 0 and an object thinner than half the window its contrast, as when the picture is
    blurred there (Greydanus et al., 2018, perturb an Atari frame by blurring a patch); times
    the gradient, the first-order change that would make to the policy."""
    pixels = image.astype(np.float32)
    layout = image_layout(image.shape) or ("hw" if image.ndim == 2 else "chw")
    planes = pixels[None] if layout == "hw" else (
        pixels if layout == "chw" else np.moveaxis(pixels, -1, 0))
    off = np.abs(planes - _median_filter(planes, CONTRAST_RADIUS))
    return off[0] if layout == "hw" else (off if layout == "chw" else np.moveaxis(off, 0, -1))


def _median_filter(planes: np.ndarray, radius: int) -> np.ndarray:
    """Each plane's median over a (2 radius + 1)^2 window, the borders repeated."""
    size = 2 * radius + 1
    padded = np.pad(planes, ((0, 0), (radius, radius), (radius, radius)), mode="edge")
    windows = np.lib.stride_tricks.sliding_window_view(padded, (size, size), axis=(1, 2))
    windows = windows.reshape(*windows.shape[:3], size * size)
    middle = size * size // 2
    return np.partition(windows, middle, axis=-1)[..., middle]


def discounted_returns(rewards: np.ndarray, gamma: float, bootstrap: float = 0.0) -> np.ndarray:
    """G_t = r_{t+1} + gamma G_{t+1} for each step t, from `bootstrap` after the last."""
    out = np.empty(len(rewards), np.float64)
    g = bootstrap
    for i in range(len(rewards) - 1, -1, -1):
        g = rewards[i] + gamma * g
        out[i] = g
    return out


def _as_grid(magnitude: np.ndarray, frame_shape) -> np.ndarray | None:
    """The magnitudes as an H x W grid, for grids and images; None for flat vectors."""
    shape = magnitude.shape
    if len(shape) == 1 and frame_shape and shape[0] == frame_shape[0] * frame_shape[1] \
            and shape[0] > 1:
        return magnitude.reshape(frame_shape)
    if len(shape) == 2 and min(shape) > 1:
        return magnitude
    if len(shape) == 3:
        layout = image_layout(shape) or ("chw" if shape[0] < shape[2] else "hwc")
        return magnitude.sum(0) if layout == "chw" else magnitude.sum(-1)
    return None


def _series(values: np.ndarray) -> list[float]:
    """At most SERIES_POINTS points of a series (means over equal stretches)."""
    if len(values) > SERIES_POINTS:
        edges = np.linspace(0, len(values), SERIES_POINTS + 1).astype(int)
        values = np.array([values[a:b].mean() for a, b in zip(edges[:-1], edges[1:])])
    return [_finite(round(float(v), 4)) for v in values]


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None


def _floats(t, digits: int = 4) -> list:
    return [_finite(round(float(v), digits)) for v in np.asarray(_numpy(t)).reshape(-1)]


def _numpy(x):
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def _row(x, pos: int):
    """A copy of row `pos` (the trainer reuses its buffers on the next step). A CPU tensor
    is read through numpy: a torch index and clone cost ten times more."""
    if isinstance(x, torch.Tensor):
        try:
            x = _cpu_numpy(x)
        except (TypeError, RuntimeError):  # on a device, or needing its gradient
            return x[pos].detach().clone()
    return np.array(x[pos], copy=True)


def _scalar(x, pos: int) -> float:
    if isinstance(x, torch.Tensor):
        try:
            return float(_cpu_numpy(x)[pos])
        except (TypeError, RuntimeError):
            return float(x[pos].item())
    return float(x[pos])


def _cpu_numpy(x: torch.Tensor) -> np.ndarray:
    """A CPU tensor's numpy view; TypeError on a device, RuntimeError where it needs its
    gradient. Asked rather than checked: `x.device.type` alone costs several microseconds in
    the running loop (each step of a watched run reads one value this way)."""
    return x.numpy()


def _tensor(x, policy) -> torch.Tensor:
    device = next(policy.parameters()).device
    return torch.as_tensor(x, device=device) if not isinstance(x, torch.Tensor) else x.to(device)


class EvaluatorWatch:
    """The policy's view of env 0's first agent while an Evaluator (engine/evaluation/
    evaluate.py) plays: `eval --render` and `eval --record --overlay`. `frames()` plays as
    Evaluator.frames does, each frame paired with the view of the decision made on it."""

    def __init__(self, evaluator, saliency: str | None = None):
        self.evaluator = evaluator
        policy = evaluator.policy
        self.watch = PolicyWatch(policy, lambda: float(evaluator.config.train.gamma), 1,
                                 getattr(getattr(evaluator.envs[0], "layout", None),
                                         "frame_shape", None) or _frame_shape(evaluator))
        self.watch.follow(0, 0, saliency)
        self._arrived = (0.0, False, False)  # the reward and ends that came with the obs

    def frames(self, frame=None):
        """(frame, policy view dict or None) per step until the target episodes end; `frame()`
        gives the frame (default: the evaluator's `frame_message`)."""
        evaluator = self.evaluator
        frame = frame or evaluator.frame_message
        while not evaluator.finished:
            shown = frame()
            obs, state = evaluator.obs, evaluator.state
            evaluator.step()
            self._observe(obs, state)
            yield shown, self.watch.view()
        yield frame(), self.watch.view()  # the last frame, with the last decision's view

    def _observe(self, obs, state) -> None:
        evaluator, policy = self.evaluator, self.evaluator.policy
        actions, rewards, terminals, truncations = evaluator.last_step
        seen = torch.as_tensor(np.asarray(obs[:1]), device=next(policy.parameters()).device)
        with torch.no_grad():
            if policy.obs_norm is not None:  # what the policy saw: training's statistics
                seen = policy.obs_norm(seen)
            state0 = None if state is None else (state[0][:1], state[1][:1])
            params, value, _ = policy.step(seen, state0)
        reward, terminal, truncated = self._arrived
        self.watch.observe(seen, np.array([0]), np.asarray(actions)[:1], value.float(),
                           np.array([reward]), np.array([terminal]), np.array([truncated]),
                           None, state0, params=params.float())
        self._arrived = (float(rewards[0]), bool(terminals[0]), bool(truncations[0]))


def _frame_shape(evaluator):
    frame = evaluator.envs[0].frame(0)
    shape = getattr(frame, "shape", None)
    return tuple(shape) if shape is not None and len(shape) == 2 else None
