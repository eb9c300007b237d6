"""The run's schedules: the learning rate (cosine from train.learning_rate to 0) and the
prioritized-sampling beta (linear from train.prio_beta0 to 1) both follow one `progress`
that goes from 0 at step 0 to 1 at train.total_timesteps.

A resume may change total_timesteps. Recomputing progress as step / new_total would make both
schedules jump (stopping at 10M of 20M and resuming with 12M would drop the rate from 0.5 lr0
to 0.07 lr0 at once). Instead the schedule is re-anchored where the run stopped: from the
anchor (step, progress) on, progress moves linearly to 1 over the remaining budget, so the
rate and beta continue from their values at the cut and reach their ends at the new total.
With the budget unchanged the anchor stays (0, 0) and the schedule is exactly the original.
A live change of total_timesteps (`set`, the app's editor) re-anchors the same way at the step
where it arrives (`budget_moved`), so the end of the run and the schedules move together.

One exception: a run whose schedule had already ended (a finished run extended with
`train --resume RUN --train.total-timesteps N`) would go on at a rate of 0 and learn nothing.
It continues instead where a schedule planned for N steps from the start would be at that
step (progress step / N).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Anchor:
    """The schedule passes through `progress` at `step` and reaches 1 at total_timesteps."""

    step: int = 0
    progress: float = 0.0

    def as_dict(self) -> dict:
        return {"anchor_step": self.step, "anchor_progress": self.progress}


START = Anchor()


def progress(train, global_step: int, anchor: Anchor = START) -> float:
    """Where the run is in its schedules, 0 to 1."""
    return _progress(train.total_timesteps, global_step, anchor)


def _progress(total: int, global_step: int, anchor: Anchor) -> float:
    if global_step >= total:
        return 1.0
    done = (global_step - anchor.step) / (total - anchor.step)
    return min(max(anchor.progress + (1.0 - anchor.progress) * done, 0.0), 1.0)


def learning_rate(train, global_step: int, anchor: Anchor = START) -> float:
    """The scheduled rate: cosine from train.learning_rate down to 0."""
    if not train.anneal_lr:
        return train.learning_rate
    return train.learning_rate * 0.5 * (1.0 + math.cos(math.pi * progress(train, global_step,
                                                                            anchor)))


def budget_moved(anchor: Anchor, old_total: int, new_total: int, global_step: int) -> Anchor:
    """The anchor once total_timesteps changes from `old_total` to `new_total` at
    `global_step`: the schedules go on from where they are and reach their ends at the new
    total (from the "step / new_total" point when the old schedule had already ended)."""
    if new_total == old_total:
        return anchor
    if global_step >= new_total:
        return Anchor(global_step, 1.0)
    if global_step >= old_total:  # the old schedule had ended: its rate 0 would learn nothing
        return Anchor(global_step, global_step / new_total)
    return Anchor(global_step, _progress(old_total, global_step, anchor))


def resumed_anchor(saved: dict | None, train, global_step: int) -> Anchor:
    """The anchor a resumed run continues with, from a checkpoint's `lr_schedule` entry.
    Same budget: the saved anchor (the schedule goes on exactly). A new budget: re-anchored
    at the resume step (budget_moved)."""
    saved = saved or {}
    old = Anchor(int(saved.get("anchor_step", 0)), float(saved.get("anchor_progress", 0.0)))
    old_total = int(saved.get("total_timesteps", train.total_timesteps))
    return budget_moved(old, old_total, train.total_timesteps, global_step)
