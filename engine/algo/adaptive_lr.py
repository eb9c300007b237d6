"""The update size held to a target: the learning rate scaled down when an update moved the
policy too far (its measured KL), and back up when it moved too little.

After each update the epoch's approx_kl is compared with `train.adaptive_lr_kl` (the target):
above twice the target the scale is divided by 1.5, below half of it multiplied by 1.5, and in
between it stays; the scale is kept within [adaptive_lr_min_scale, adaptive_lr_max_scale] and
multiplies the scheduled rate (engine/algo/schedule.py's cosine from train.learning_rate), so
the schedule still ends at 0. The rule is the one legged-robot PPO trainers use (an "adaptive"
schedule with a desired KL); it acts between updates, so one update is never cut short (that
is `train.target_kl`'s early stop, a separate brake).

On by default (target 0.03, so a change comes only above 0.06, where the doctor's usual range
of 0.01-0.05 ends) and with the default max scale of 1 the preset's rate is a ceiling: a run
whose updates stay in the band trains exactly as without it (every built-in preset's run on
the development envs did), and one that overshoots is slowed until it is back in it. The
trainer feeds it the ranks' mean KL, so all ranks keep one rate. A target of 0 turns it off.
"""

from __future__ import annotations

import math

STEP = 1.5  # the factor of one adjustment
LOW, HIGH = 0.5, 2.0  # the band around the target, as multiples of it


class AdaptiveRate:
    """The scale on the scheduled learning rate, moved by each update's measured KL."""

    def __init__(self, scale: float = 1.0):
        self.scale = scale

    def observe(self, train, approx_kl: float | None) -> str | None:
        """Move the scale after an update whose mean approx_kl was `approx_kl`; returns
        "down" or "up" when it moved (None when it stayed or the controller is off)."""
        target = float(train.adaptive_lr_kl)
        low, high = float(train.adaptive_lr_min_scale), float(train.adaptive_lr_max_scale)
        if target <= 0.0:
            return None
        before = self.scale
        if approx_kl is not None and math.isfinite(approx_kl):
            if approx_kl > HIGH * target:
                self.scale /= STEP
            elif approx_kl < LOW * target:
                self.scale *= STEP
        self.scale = min(max(self.scale, low), high)
        if self.scale < before:
            return "down"
        return "up" if self.scale > before else None

    def rate(self, train, scheduled: float) -> float:
        """The rate the next update uses: the scheduled one times the scale (off: scheduled)."""
        return scheduled * self.scale if float(train.adaptive_lr_kl) > 0.0 else scheduled

    def state_dict(self) -> dict:
        return {"scale": self.scale}

    def load_state_dict(self, state: dict | None) -> None:
        self.scale = float((state or {}).get("scale", 1.0))
