"""The engine's diagnosis after each epoch (rank 0): measure the signals the rules read from
the trainer's epoch row and its last batch, run the rules (engine/diagnosis/state.py), and
say what fired or cleared: a `diagnosis` push to every client, an event (events.log,
engine.out, `--headless`), and a `diagnoses` field in the metrics row. It also warns, once
each, of values in the env's episode-end infos that are not numbers and so are not logged
(engine/algo/episode_log.py).

    doctor = Doctor(trainer, events, publish=server.publish_event)
    row = doctor.examine(row)          # after run_epoch (and the evaluation)

The extra measurements are cheap by design: the batch's rewards, masks and episode ends
are [segments, horizon] tensors, the observations are summed over a strided sample of at
most SAMPLE_ROWS rows, and the gradient norms come from the clip the learner does anyway
(`Learner.last_update`). benchmarks/doctor.py measures the whole cost against training time.

`PUFFER_TUI_DIAGNOSIS_TRACE=FILE` appends each epoch's signals and settings to FILE (one
JSON line each): how the rules' tests get epochs recorded from real runs.
"""

from __future__ import annotations

import json
import math
import os
import time

from puffer_tui.engine.algo.episode_log import take_ignored
from puffer_tui.engine.diagnosis.advice import fitted
from puffer_tui.engine.diagnosis.autopilot import Autopilot, Change
from puffer_tui.engine.diagnosis.state import Diagnoser, event_text, row_entry
from puffer_tui.engine.shared.protocol import DIAGNOSES, ENV, LOSSES, TIMING, TIMING_PCT, json_safe

SAMPLE_ROWS = 1024  # observation rows measured per epoch at most (a column 1000x
# the others shows in any thousand rows)
# the share of training time under which the observation scan runs every epoch; above it,
# on the epochs that bring the doctor back under (on breakout's short epochs about every other)
SCAN_BUDGET = 0.004
SCAN_EVERY = 3  # the scan runs every third epoch at least (a run's first epochs cost most)
RETURN_SEGMENTS = 256  # segments whose returns are computed per epoch at most
TRACE_ENV = "PUFFER_TUI_DIAGNOSIS_TRACE"


def entropy_max(action_space) -> float | None:
    """The largest entropy of the policy's action distribution (discrete spaces only)."""
    n = getattr(action_space, "n", None)
    if n is not None:
        return math.log(int(n)) if int(n) > 1 else None
    nvec = getattr(action_space, "nvec", None)
    if nvec is not None:
        return float(sum(math.log(int(k)) for k in list(nvec.reshape(-1)) if int(k) > 1)) or None
    return None


def settings_of(trainer) -> dict:
    """The run's current settings the rules compare with (live ones change under them)."""
    train = trainer.config.train
    return {"env_name": trainer.config.env_name, "learning_rate": train.learning_rate,
            "ent_coef": train.ent_coef, "vf_coef": train.vf_coef, "reward_clamp": train.reward_clamp,
            "gamma": train.gamma, "max_grad_norm": train.max_grad_norm,
            "normalize_rewards": train.normalize_rewards,
            "normalize_observations": train.normalize_observations,
            "total_timesteps": train.total_timesteps,
            "num_workers": trainer.config.vec.num_workers, "num_agents": trainer.num_agents,
            "entropy_max": entropy_max(trainer.vecenv.single_action_space)}


def row_signals(row: dict, steps: int) -> dict:
    """The rules' numbers found in the epoch row (`steps`: agent steps of the epoch)."""
    losses, env = row.get(LOSSES) or {}, row.get(ENV) or {}
    signals = {k: row.get(k) for k in ("epoch", "global_step", "sps")}
    signals.update({k: losses.get(k) for k in ("policy_loss", "value_loss", "entropy",
                                               "approx_kl", "clipfrac", "explained_variance")})
    signals["score"] = env.get("score", env.get("episode_return"))
    signals["episodes"] = env.get("episodes", 0)
    signals["episode_length"] = env.get("episode_length")
    signals["timing_pct_env"] = (row.get(TIMING_PCT) or {}).get("env")
    timing = row.get(TIMING) or {}
    if timing.get("env") is not None and steps > 0:
        signals["env_seconds_per_step"] = timing["env"] / steps
        # the learner's own compute per step: env_bound's yardstick for a slower env
        signals["compute_seconds_per_step"] = \
            sum(timing.get(k) or 0.0 for k in ("forward", "learn")) / steps
    return signals


def _array(tensor):
    """A tensor as a numpy array: no copy on the CPU (numpy's per-call cost is a fraction
    of torch's on arrays this small), one copy from a GPU."""
    return tensor.detach().cpu().numpy()


def return_spread(buffer, gamma: float, segments: int = RETURN_SEGMENTS) -> float:
    """How much the batch's discounted returns differ: their std over the mean of their
    absolute values, on at most `segments` segments. As the advantage kernel aligns them:
    the reward and the end flag of step t+1 close the return of step t; a terminal adds
    nothing after it, a truncation the critic's value of its final observation, the
    segment's end its last value. Explained variance means something only when this is not
    tiny: a solved run's returns are all alike."""
    import numpy as np

    take = slice(0, min(segments, buffer.rewards.shape[0]))

    def rows(tensor):
        return _array(tensor[take].float())

    rewards, values, finals = rows(buffer.rewards), rows(buffer.values), rows(buffer.final_values)
    # what follows step t+1's reward: 0 after a terminal, the final value after a truncation,
    # else the return of step t+1 (the scan below); column by column, time backwards
    cut = rows(buffer.terminals) > 0
    truncated = rows(buffer.truncations) > 0
    keep = ~(cut | truncated)
    boot = np.where(truncated & ~cut, finals, 0.0) * gamma
    ahead = values[:, -1]
    returns = np.empty_like(rewards[:, :-1])
    for t in range(rewards.shape[1] - 2, -1, -1):
        ahead = rewards[:, t + 1] + boot[:, t + 1] + gamma * keep[:, t + 1] * ahead
        returns[:, t] = ahead
    scale = float(np.abs(returns).mean())
    return float(returns.std()) / scale if scale > 1e-8 else 0.0


def batch_signals(buffer, normalized_observations: bool, observations: bool = True) -> dict:
    """Reward scale, episode ends and (float vector observations, unless normalized or
    `observations` is off) the columns' scales of the batch the learner just trained on."""
    import numpy as np

    masks = _array(buffer.masks).reshape(-1)
    rewards, terminals = _array(buffer.rewards).reshape(-1), _array(buffer.terminals).reshape(-1)
    truncations = _array(buffer.truncations).reshape(-1)
    if not masks.all():  # rows of dead or waiting agents: left out (rare: one copy)
        keep = masks > 0
        rewards, terminals, truncations = rewards[keep], terminals[keep], truncations[keep]
    signals = {"ends": 0.0, "terminals": 0.0, "truncations": 0.0}
    if rewards.size:
        ended, cut = terminals > 0, truncations > 0
        signals["reward_absmax"] = max(float(rewards.max()), -float(rewards.min()))
        signals["terminals"] = float(np.count_nonzero(ended))
        signals["truncations"] = float(np.count_nonzero(cut))
        signals["ends"] = float(np.count_nonzero(ended | cut))
        # steps per rewarded step: how far apart the rewards are (short_horizon)
        signals["reward_gap"] = rewards.size / max(int(np.count_nonzero(rewards)), 1)
    obs = buffer.observations
    if not observations or normalized_observations or not obs.is_floating_point() \
            or obs.dim() != 3 \
            or obs.shape[-1] < 2:
        return signals
    # whole segments, spread over the batch: each is one contiguous block the cache reads
    # ahead (rows strided over the whole buffer cost a cache miss each)
    every = max(1, obs.shape[0] * obs.shape[1] // SAMPLE_ROWS)
    sample = _array(obs[::every]).reshape(-1, obs.shape[-1])
    scales = np.abs(sample).max(0).astype(np.float64)
    used = scales[scales > 1e-6]
    if used.size >= 2:
        # torch's median of an even count is the lower middle value: kept, for the records
        median = float(np.partition(used, (used.size - 1) // 2)[(used.size - 1) // 2])
        worst = int(scales.argmax())
        signals.update(obs_ratio=float(scales[worst]) / median, obs_worst=worst,
                       obs_worst_scale=float(scales[worst]), obs_median_scale=median)
    return signals


class Doctor:
    def __init__(self, trainer, events, publish=None, submit=None):
        """`submit(key, value, reply)`: sends a live `set` the way a person's goes (the
        engine queues it for the epoch's end; `reply` gets its answer): the autopilot's."""
        self.trainer = trainer
        self.events = events
        self.publish = publish or (lambda message: None)
        self.submit = submit
        self.diagnoser = Diagnoser()
        self.autopilot = Autopilot()
        self.seconds = 0.0  # time spent diagnosing, for benchmarks/doctor.py
        self._last_step = trainer.global_step
        self._last_signals: dict = {}
        self._unscanned = 0  # epochs since the observation scan last ran
        trace = os.environ.get(TRACE_ENV)
        self._trace = open(trace, "a", encoding="utf-8") if trace else None  # noqa: SIM115

    def examine(self, row: dict) -> dict:
        """The row, with a `diagnoses` field when a rule fired or cleared this epoch."""
        start = time.thread_time()  # this thread's CPU: what diagnosing costs, not waits
        ignored = take_ignored()
        if ignored:
            self.events.warning(
                f"the env's episode-end info has values that are not numbers, not logged: "
                f"{', '.join(ignored)} (its numbers are logged as env/<key>; said once)")
        trainer = self.trainer
        steps = int(row.get("global_step", 0)) - self._last_step
        self._last_step = int(row.get("global_step", 0))
        signals = row_signals(row, steps)
        update = getattr(trainer.ppo, "last_update", None) or {}
        if trainer.config.train.max_grad_norm > 0 and "grad_norm" in update:
            signals.update(grad_norm=update["grad_norm"], grad_clipped=update["grad_clipped"])
        train = trainer.config.train
        # the observation scan (half the cost) skips the epochs the doctor is over budget:
        # columns' scales change slowly, and obs_scale reads the last ones measured
        # ... but at least every SCAN_EVERY epochs (obs_scale wants 2 measures in 10)
        uptime = row.get("uptime")
        scan = not isinstance(uptime, (int, float)) or self.seconds <= SCAN_BUDGET * uptime \
            or self._unscanned >= SCAN_EVERY - 1
        self._unscanned = 0 if scan else self._unscanned + 1
        signals.update(batch_signals(trainer.buffer, train.normalize_observations, scan))
        if (signals.get("explained_variance") or 0.0) < 0.1:  # only critic_blind reads it
            signals["return_spread"] = return_spread(trainer.buffer, train.gamma)
        settings = settings_of(trainer)
        self._last_signals = signals
        messages = self.diagnoser.feed(signals, settings)
        for message in messages:  # advice the run would take, on this machine, or none
            if message.get("suggestion"):
                message["suggestion"] = fitted(message["suggestion"], trainer.config)
        self.seconds += time.thread_time() - start
        if self._trace is not None:  # seconds: this far; uptime: the training time so far
            self._trace.write(json.dumps(json_safe({
                "signals": signals, "settings": settings, "seconds": self.seconds,
                "uptime": row.get("uptime")})) + "\n")
            self._trace.flush()
        self._say(messages)
        self._autopilot(messages, signals)
        return {**row, DIAGNOSES: [row_entry(m) for m in messages]} if messages else row

    def active(self) -> list[dict]:
        """The diagnoses in force (telemetry's `diagnoses`, for clients that attach later)."""
        return list(self.diagnoser.active.values())

    def command(self, command, boundary) -> dict:
        """The `diagnosis` command (engine/runtime/commands.py calls it like its own handlers):
        `{"silence": RULE}` silences a rule for this run; without args, what is active."""
        rule = command.args.get("silence")
        if rule is not None:
            cleared = self.diagnoser.silence(rule, self._last_signals)
            self.events.info(f"diagnosis {rule} silenced for this run")
            if cleared is not None:
                self.publish(json_safe(cleared))
        return {"active": [m["rule"] for m in self.active()],
                "silenced": sorted(self.diagnoser.silenced)}

    def close(self) -> None:
        if self._trace is not None:
            self._trace.close()
            self._trace = None

    def _autopilot(self, messages: list[dict], signals: dict) -> None:
        on = bool(getattr(self.trainer.config.train, "autopilot", False)) and \
            self.submit is not None
        for change in self.autopilot.feed(messages, signals, on):
            self.submit(change.key, change.new, self._applied(change))

    def _applied(self, change: Change):
        def reply(result: dict) -> None:
            if result.get("ok"):
                self.events.emit("warning" if change.revert else "info", change.text())
            else:
                self.events.warning(f"autopilot could not apply {change.key} {change.new} "
                                    f"for {change.rule}: {result.get('error')}")
        return reply

    def _say(self, messages: list[dict]) -> None:
        for message in messages:
            level = "info" if message["status"] == "cleared" or \
                message.get("severity") == "info" else "warning"
            self.events.emit(level, event_text(message))
            self.publish(json_safe(message))
