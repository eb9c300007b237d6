"""Diagnosis rules: what is going wrong with a run, read off its epochs' numbers.

Each rule is a small function `rule(history, ctx, active) -> Finding | None` over the run's
recent epochs (`history`, oldest first; each a flat dict of signals, see SIGNALS) and the
run's current settings (`ctx`: env_name, learning_rate, ent_coef, gamma, max_grad_norm,
normalize_rewards, normalize_observations, entropy_max, num_workers, total_timesteps). It returns a Finding
while its condition holds, None otherwise; `active` says whether it has fired already, so
a rule may keep holding on a looser threshold than the one that fired it (no flicker).
engine/diagnosis/epoch_diagnosis.py runs them after each epoch, fires and clears them and makes the
protocol's `diagnosis` messages. No torch and no Textual here: the rules are plain
arithmetic on numbers, tested on rows recorded from real runs (tests/fixtures/diagnosis/).

The usual ranges the thresholds are set against (PPO on these envs, measured): approx_kl
0.001-0.05, clipfrac 0.05-0.3, entropy above a few percent of its maximum until the return
has risen, explained variance above 0.3 once warmed up.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

from puffer_tui.engine.shared.protocol import DIAGNOSIS_RULES

# the numbers of one epoch the rules read (absent or None: not measured this epoch)
SIGNALS = ("epoch", "global_step", "sps", "policy_loss", "value_loss", "entropy",
           "approx_kl", "clipfrac", "explained_variance", "score", "episodes",
           "episode_length", "timing_pct_env", "env_seconds_per_step",
           "compute_seconds_per_step", "grad_norm",
           "grad_clipped", "obs_ratio", "obs_worst", "obs_worst_scale", "obs_median_scale",
           "reward_absmax", "reward_gap", "return_spread", "ends", "terminals",
           "truncations")

WARNING, ERROR, INFO = "warning", "error", "info"


@dataclass
class Finding:
    severity: str
    text: str  # one line
    evidence: dict  # the numbers that made the rule fire, by name
    epochs: list[int]  # the epochs it saw them in
    # {"key", "from", "to", "live": True} (a live `set`), or {"key", "to", "live": False,
    # "restart": "--section.name V"} for a field that applies on restart; None: no one change
    suggestion: dict | None = None
    hint: str = ""  # what to look at when no single change fixes it
    extra: dict = field(default_factory=dict)


def _num(row: dict, key: str) -> float | None:
    value = row.get(key)
    if type(value) is float:  # the common case first: the rules read hundreds an epoch
        return value if math.isfinite(value) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _last(history: list[dict], key: str, n: int) -> list[float] | None:
    """The last n epochs' values of `key`; None unless all n have one."""
    if len(history) < n:
        return None
    values = [_num(row, key) for row in history[-n:]]
    return None if any(v is None for v in values) else values


def _epochs(history: list[dict], n: int) -> list[int]:
    return [int(row.get("epoch", 0)) for row in history[-n:]]


def _scores(history: list[dict]) -> list[tuple[int, float]]:
    return [(int(r.get("epoch", 0)), _num(r, "score")) for r in history
            if _num(r, "score") is not None and (_num(r, "episodes") or 0) > 0]


def _rounded(value: float) -> float:
    return float(f"{value:.2g}")


def score_rose(history: list[dict], ctx: dict, margin: float = 0.5,
               best: float | None = None) -> bool | None:
    """Whether the return has risen since the run's first epochs with episodes: the best
    mean of 3 consecutive scored epochs (ctx["best_score"], kept over the whole run by
    engine/diagnosis/state.py; or `best`, another measure of it) is above the first 3's by
    `margin` of their size (at least 0.1). None: too few scored epochs to tell."""
    first = ctx.get("first_scores") or []
    best = ctx.get("best_score") if best is None else best
    if len(first) < 3 or best is None:
        return None
    early = statistics.fmean(first[:3])
    return best - early > margin * max(abs(early), 0.1)


# -- the rules ----------------------------------------------------------------------------

# kl_blowup: an entropy under this share of its maximum in the epoch it fires means the
# overshooting update already made the policy (nearly) deterministic. Measured at the first
# epoch: CartPole-v1 at 30x the rate 9% (the policy never came back), squared at 7x 30% (it
# recovered by itself, KL back under 0.05 by epoch 3), a fresh policy about 100%.
KL_COLLAPSED = 0.2
# A converged policy's score keeps at least this share of what the run gained (its best
# 3-epoch mean over the first 3 scored epochs): squared's healthy 100M-step run dips to
# 0.66 in one epoch (a 3-epoch mean of 0.88 of its 0.2 -> 1.0), while an update that broke
# the policy takes the score back towards where it started.
KEPT_GAIN = 0.5


def converged(history: list[dict], ctx: dict) -> bool:
    """The policy became nearly deterministic by learning, not by one bad update: its entropy
    was under KL_COLLAPSED of its maximum in the 3 epochs before the last, the score rose,
    and the last 3 scored epochs keep KEPT_GAIN of the gain. Such a policy's approx_kl is
    dominated by its rare actions (a probability of 1e-4 that becomes 1e-2 counts as much as
    a whole shift of a young policy): squared at 100M steps spiked to 2.8 at epoch 347 with
    the score at 0.87-0.99, and recovered by itself the next epoch."""
    top = ctx.get("entropy_max")
    before = [_num(r, "entropy") for r in history[-4:-1]]
    if not top or len(before) < 3 or any(e is None or e >= KL_COLLAPSED * top for e in before):
        return False
    if not score_rose(history, ctx):
        return False
    recent = [score for _, score in _scores(history)[-3:]]
    early, best = statistics.fmean(ctx["first_scores"][:3]), ctx["best_score"]
    return len(recent) == 3 and statistics.fmean(recent) >= early + KEPT_GAIN * (best - early)


def _broke_after_spike(history, ctx, fresh: bool = True) -> bool:
    """An approx_kl above 1 in a policy that had converged, and the scored epochs after it
    (the last 3 of them) lost more than KEPT_GAIN of the run's gain: a converged policy's
    spike that was no outlier. `fresh` (to fire): the spike in the last 10 epochs, with 2 or 3
    scored epochs since (one low epoch is noise); else (to hold) any such spike the history
    (HISTORY epochs in engine/diagnosis/state.py) still holds. MiniGrid-KeyCorridorS3R1-v0
    (seed 1, 500k steps, the cosine rate) was at 0.951 by 135k steps, entropy 0.009, when one
    update's KL was 0.33 and a later one 2.2; `converged` still held on its older scores, then
    its episodes stopped ending, and its next scores were 0
    (tests/fixtures/diagnosis/late_kl_blowup_minigrid.jsonl)."""
    if not ctx.get("first_scores") or ctx.get("best_score") is None:
        return False
    early, best = statistics.fmean(ctx["first_scores"][:3]), ctx["best_score"]
    start = max(len(history) - 10, 0) if fresh else 0
    for spike in range(len(history) - 1, start - 1, -1):
        if (_num(history[spike], "approx_kl") or 0) <= 1.0:
            continue
        if not converged(history[:spike + 1], ctx):  # a young policy's spike fires as it comes
            continue
        after = [score for _, score in _scores(history[spike + 1:])]
        if len(after) < (2 if fresh else 1) or (fresh and len(after) > 3):
            return False
        return statistics.fmean(after[-3:]) < early + KEPT_GAIN * (best - early)
    return False


def kl_blowup(history, ctx, active):
    """The policy moves far more per update than PPO's clip allows: approx_kl above 1 in one
    epoch, or above 0.2 (clipfrac above 0.5) for 3 epochs; usually a learning rate too high.
    Held until 3 epochs are back under 0.1 / 0.4 with the policy not collapsed (a collapsed
    policy has a KL of 0 because nothing moves any more, not because the rate is right).
    Not fired on a converged policy (`converged`: deterministic by learning, its score held)
    whose KL spikes alone; if its score then falls, it fires: at the spike when the spike
    goes on, else (`_broke_after_spike`) once the scored epochs after it show the fall."""
    kl, clip = _last(history, "approx_kl", 1), _last(history, "clipfrac", 1)
    if kl is None or clip is None:
        return None
    if not active and converged(history, ctx):
        return None
    kl3, clip3 = _last(history, "approx_kl", 3), _last(history, "clipfrac", 3)
    sustained = kl3 is not None and clip3 is not None and all(
        k > 0.2 or c > 0.5 for k, c in zip(kl3, clip3))
    if active:
        entropy = _last(history, "entropy", 1)
        collapsed = ctx.get("entropy_max") and entropy and \
            entropy[0] < 0.02 * ctx["entropy_max"]
        calm = kl3 is not None and clip3 is not None and all(
            k < 0.1 and c < 0.4 for k, c in zip(kl3, clip3))
        if calm and not collapsed and not _broke_after_spike(history, ctx, fresh=False):
            return None
    elif not (kl[0] > 1.0 or sustained or _broke_after_spike(history, ctx)):
        return None
    # the evidence of the last 10 epochs (an earlier blow-up already had its diagnosis)
    seen = [(int(r.get("epoch", 0)), _num(r, "approx_kl"), _num(r, "clipfrac"))
            for r in history[-10:]
            if (_num(r, "approx_kl") or 0) > 0.2 or (_num(r, "clipfrac") or 0) > 0.5]
    worst = max(seen, key=lambda t: t[1] or 0) if seen else \
        (int(history[-1].get("epoch", 0)), kl[0], clip[0])
    lr, top = ctx["learning_rate"], ctx.get("entropy_max")
    entropy = _num(history[-1], "entropy")
    # not collapsed: a tenth live (a third was no better: squared at 7x, 0.505 against 0.481,
    # and both below the 0.643 of leaving it alone, which recovers by itself by epoch 3)
    to = _rounded(lr / 10)
    epochs = [e for e, _, _ in seen][-8:] or _epochs(history, 1)
    evidence = {"approx_kl": worst[1], "clipfrac": worst[2], "learning_rate": lr}
    text = (f"updates overshoot: approx_kl {worst[1]:.3g} (usual 0.01-0.05), clipfrac "
            f"{worst[2]:.2f} (usual 0.1-0.3): learning rate {lr:g} too high?")
    if top and entropy is not None and entropy < KL_COLLAPSED * top:
        # Already collapsed by the overshooting update(s): a deterministic policy's gradients
        # vanish, so a lower rate live changes nothing (measured: CartPole-v1 at 30x, lr/10
        # applied at epoch 1, 9.3 left alone and 9.3 with it, median of 3 seeds). Only a
        # fresh policy helps: a restart, from a checkpoint saved before the blow-up if any.
        first = min(epochs)
        return Finding(
            ERROR, text + f" The policy already collapsed (entropy {entropy:.2g} of "
            f"{top:.2g}): restart with a lower rate",
            {**evidence, "entropy": entropy, "entropy_max": top}, epochs,
            {"key": "train.learning_rate", "from": lr, "to": to, "live": False,
             "restart": f"--train.learning-rate {to:g}"},
            hint=f"a live change cannot revive it: puffer-tui train {ctx.get('env_name') or 'ENV'}"
                 f" --train.learning-rate {to:g}" + (
                     f", or puffer-tui train --from RUN/CHECKPOINT --train.learning-rate {to:g}"
                     f" from a checkpoint saved before epoch {first}" if first > 1 else ""))
    return Finding(ERROR, text, evidence, epochs,
                   {"key": "train.learning_rate", "from": lr, "to": to, "live": True})


COLLAPSE_MARGIN = 0.25


def policy_collapse(history, ctx, active):
    """The action distribution became (nearly) deterministic before the return rose: entropy
    under 2% of its maximum for 2 epochs (held until above 5%) with no rise in the score.
    Discrete actions only (a Gaussian's entropy has no maximum to compare with)."""
    top = ctx.get("entropy_max")
    entropy = _last(history, "entropy", 2)
    # an error must be sure nothing was learnt: a gain of a quarter of where the score began
    # is learning (MountainCar-v0 from -160 to -95, MiniGrid-Empty-Random-5x5 from 0.68 to
    # 0.97, both near-deterministic once solved)
    if not top or entropy is None or score_rose(history, ctx, COLLAPSE_MARGIN) is not False:
        return None
    limit = (0.05 if active else 0.02) * top
    if not all(e < limit for e in entropy):
        return None
    ent = ctx["ent_coef"]
    to = _rounded(max(0.01, ent * 10))
    scores = _scores(history)
    return Finding(
        ERROR, f"policy collapsed: entropy {entropy[-1]:.3g} of at most {top:.3g} while the "
        f"score stayed at {scores[-1][1]:.3g}: it stopped exploring before it learned",
        {"entropy": entropy[-1], "entropy_max": top, "score": scores[-1][1],
         "first_score": statistics.fmean(ctx["first_scores"][:3]), "ent_coef": ent},
        _epochs(history, 2),
        {"key": "train.ent_coef", "from": ent, "to": to, "live": True} if ent < to else None,
        hint="" if ent < to else "lower train.learning_rate, or restart from an earlier checkpoint")


def value_dominates(history, ctx, active):
    """The value loss is orders of magnitude above the policy loss (over 1000x, 3 epochs, and
    over 1000 with rewards over 10, over 10,000 otherwise): with large rewards the returns are
    unscaled and the critic's gradients drown the policy's; with small ones the critic has
    diverged."""
    vl, pl = _last(history, "value_loss", 3), _last(history, "policy_loss", 3)
    rew = _last(history, "reward_absmax", 1)
    if vl is None or pl is None:
        return None
    factor = 100 if active else 1000
    ratios = [v / max(abs(p), 1e-3) for v, p in zip(vl, pl)]
    large = rew is not None and rew[0] > 10
    # returns of ~100 (CartPole's +1 a step) give value losses in the hundreds while the
    # run learns well: only far larger ones count, lower with large rewards
    floor = (100 if active else 1000) if large else (1000 if active else 10_000)
    if not all(r > factor and v > floor for r, v in zip(ratios, vl)):
        return None
    suggestion, hint = None, ""
    if large and not ctx.get("reward_clamp"):
        # now: clip the rewards to [-1, 1] as DQN does on Atari (live); better, on restart:
        # scale them by the return's running std (keeps their ratios)
        suggestion = {"key": "train.reward_clamp", "from": 0.0, "to": 1.0, "live": True}
        hint = "or restart with --train.normalize-rewards true (keeps their ratios)"
    elif large and not ctx.get("normalize_rewards"):
        suggestion = {"key": "train.normalize_rewards", "to": True, "live": False,
                      "restart": "--train.normalize-rewards true"}
    why = (f"rewards up to {rew[0]:.3g} are unscaled" if large else
           "the critic diverged (rewards are small: look at the learning rate)")
    return Finding(
        WARNING, f"value loss {vl[-1]:.3g} is {min(ratios):.3g}x the policy loss: {why}",
        {"value_loss": vl[-1], "policy_loss": pl[-1], "ratio": min(ratios),
         "reward_absmax": rew[0] if rew else None}, _epochs(history, 3), suggestion, hint)


def critic_blind(history, ctx, active):
    """The critic explains nothing: explained variance under 0.1 for 15 epochs after a
    20-epoch warm-up (held until 3 epochs above 0.2), in epochs whose returns differ (their
    spread over 5% of their size). A young critic is often negative for its first 20 epochs
    (CartPole's, while the run learns well); a solved run's returns are all alike, its
    explained variance noise (-5 on a solved CartPole or password): not a blind critic."""
    n = 3 if active else 15
    ev = _last(history, "explained_variance", n)
    # the spread is measured only in epochs under 0.1 (engine/diagnosis/epoch_diagnosis.py): holding
    # does not read it, or the first epoch at 0.1 would clear it (and the next refire it)
    spread = [] if active else _last(history, "return_spread", n)
    if ev is None or spread is None or int(history[-1].get("epoch", 0)) < 20:
        return None
    if active and all(e > 0.2 for e in ev):
        return None
    if not active and not (all(e < 0.1 for e in ev) and all(s > 0.05 for s in spread)):
        return None
    suggestion, vf = None, ctx.get("vf_coef", 1.0)
    if vf < 0.1:
        suggestion = {"key": "train.vf_coef", "from": vf, "to": 1.0, "live": True}
    elif not ctx.get("normalize_rewards") and (_num(history[-1], "reward_absmax") or 0) > 10:
        suggestion = {"key": "train.normalize_rewards", "to": True, "live": False,
                      "restart": "--train.normalize-rewards true"}
    return Finding(
        WARNING, f"the critic is blind: explained variance {ev[-1]:.2f} for {len(ev)} epochs "
        f"(useful above 0.3); advantages are noise", {"explained_variance": ev[-1],
                                                      "mean": statistics.fmean(ev),
                                                      "return_spread": spread[-1]
                                                      if spread else None,
                                                      "vf_coef": vf},
        _epochs(history, n), suggestion,
        hint="check the reward scale, train.gamma and the observations")


PLATEAU_BUDGET = 0.25  # the share of train.total_timesteps a plateau waits for


def plateau(history, ctx, active):
    """The return has not risen in 30 scored epochs since the start, nor in the first
    quarter of the run's budget (train.total_timesteps): learning never took off (a run that
    rose and then levelled off at its best is not a plateau here). The budget's share is for
    envs with short epochs: breakout's default run has 30 epochs in 500k steps, while its
    score first rises at about 800k."""
    rose = score_rose(history, ctx, margin=0.1)
    if rose is None or rose:
        return None
    step = _num(history[-1], "global_step") or 0
    if not active and step < PLATEAU_BUDGET * (ctx.get("total_timesteps") or 0):
        return None
    scores = _scores(history)
    if len(scores) < (3 if active else 30):
        return None
    ent = ctx["ent_coef"]
    suggestion = None
    if ent < 0.01:
        suggestion = {"key": "train.ent_coef", "from": ent, "to": 0.01, "live": True}
    return Finding(
        WARNING, f"no progress: the score is {scores[-1][1]:.3g} after {len(scores)} epochs, "
        f"as at the start ({statistics.fmean(ctx['first_scores'][:3]):.3g})",
        {"score": scores[-1][1], "first_score": statistics.fmean(ctx["first_scores"][:3]),
         "epochs": len(scores)}, [scores[0][0], scores[-1][0]], suggestion,
        hint="" if suggestion else "explore more, or check the reward the env gives")


# score_lost: a score is held over this many consecutive scored epochs (one lucky stretch of
# a run that never learnt, RedBlueDoors' 0.17 at 20k steps then 0.0-0.07, is not held)
HELD = 10
# ... and lost when the last HELD scored epochs keep under this share of what the held best
# gained over the first 3 (a healthy run's dips keep far more: squared's worst 3-epoch mean
# after converging keeps 0.88 of its gain, LavaGapS6's seeds that kept their policy 0.99)
LOST_KEEP = 0.25


def score_lost(history, ctx, active):
    """The run learnt and then lost it: it held a score over HELD scored epochs (the best such
    median, ctx["best_held"], kept over the whole run by engine/diagnosis/state.py), had risen
    to it (score_rose's margin), and its last HELD scored epochs keep under LOST_KEEP of that
    gain. Held until each of the last 3 keeps KEPT_GAIN of it. No live change brings the
    policy back: it is relearnt, so the fix is a restart from a checkpoint saved while the score
    was held. MiniGrid-LavaGapS6-v0 at the MiniGrid preset (seed 0, 1M steps) was at 0.948
    from epoch 100 to 131, then lost it between KL spikes to 0.0 by epoch 231, with no other
    rule firing (tests/fixtures/diagnosis/score_lost.jsonl)."""
    held = ctx.get("best_held")
    if held is None or not score_rose(history, ctx, best=held):
        return None
    early = statistics.fmean(ctx["first_scores"][:3])
    scores = [score for _, score in _scores(history)]
    n = 3 if active else HELD
    if len(scores) < n:
        return None
    now = statistics.fmean(scores[-n:])
    if active and all(s >= early + KEPT_GAIN * (held - early) for s in scores[-n:]):
        return None  # each of the last 3, not their mean: one lucky epoch does not clear it
    if not active and now >= early + LOST_KEEP * (held - early):
        return None
    # and a fall of half the held score's own size: a resumed run's first scores are already
    # learnt ones, so its noise is a large share of a small gain (breakout resumed at epoch
    # 1000, tests/fixtures/diagnosis/false_short_horizon_breakout.jsonl: held 0.66, a 10-epoch
    # dip to 0.41 from a start of 0.37)
    if not active and held - now <= 0.5 * abs(held):
        return None
    start, end = ctx.get("best_held_epochs") or (None, None)
    lower = _rounded(ctx["learning_rate"] / 3)
    return Finding(
        ERROR, f"the run lost what it learnt: the score is {now:.3g} over its last {n} "
        f"scored epochs, after holding {held:.3g} (epochs {start}-{end}; it began at "
        f"{early:.3g})", {"score": now, "best_held": held, "first_score": early,
                          "held_from_epoch": start, "held_to_epoch": end},
        _epochs(history, 1) if active else [start, end, int(history[-1].get("epoch", 0))],
        # no measured live fix: SB3's early stop kept LavaGapS6's but undid GoToDoor-5x5's
        # (docs/benchmarks.md, "MiniGrid's early stop")
        hint=f"restart from a checkpoint saved at epochs {start}-{end} with a lower rate: "
             f"puffer-tui train --from RUN/CHECKPOINT --train.learning-rate {lower:g}")


def grad_always_clipped(history, ctx, active):
    """The gradient norm before clipping is above train.max_grad_norm in nearly every
    minibatch (95%) for 10 epochs, by 100x at the median: every step is cut to a hundredth
    or less, its size set by the clip rather than by the learning rate. (A few times over
    the clip is common in healthy runs: CartPole's unscaled returns give 5-50x.)"""
    top = ctx.get("max_grad_norm") or 0
    share = _last(history, "grad_clipped", 3 if active else 10)
    norm = _last(history, "grad_norm", 3 if active else 10)
    if top <= 0 or share is None or norm is None:
        return None
    if not (all(s >= (0.8 if active else 0.95) for s in share)
            and statistics.median(norm) > (30 if active else 100) * top):
        return None
    suggestion = None
    if (_num(history[-1], "reward_absmax") or 0) > 10 and not ctx.get("normalize_rewards"):
        suggestion = {"key": "train.normalize_rewards", "to": True, "live": False,
                      "restart": "--train.normalize-rewards true"}
    return Finding(
        WARNING, f"gradients always clipped: norm {statistics.median(norm):.3g} before the "
        f"clip at {top:g} in {min(share):.0%}+ of minibatches",
        {"grad_norm": statistics.median(norm), "max_grad_norm": top, "clipped": min(share)},
        _epochs(history, len(share)), suggestion,
        hint="large losses: reward scale, value loss, learning rate")


def obs_scale(history, ctx, active):
    """Observation columns thousands of times apart: the largest column's absolute max over
    1000x the median column's (2 epochs; held until under 100x). Not measured when
    train.normalize_observations is on (the policy then sees normalized values)."""
    # the last measures within 10 epochs (the doctor skips the scan on some epochs of a
    # fast run, to keep its cost down)
    measured = [r for r in history[-10:] if _num(r, "obs_ratio") is not None]
    measured = measured[-(1 if active else 2):]
    ratio = [r["obs_ratio"] for r in measured]
    if len(measured) < (1 if active else 2) or not all(r > (100 if active else 1000)
                                                       for r in ratio):
        return None
    last = measured[-1]
    return Finding(
        WARNING, f"observation column {int(last['obs_worst'])} reaches "
        f"{last['obs_worst_scale']:.3g}, {ratio[-1]:.0f}x the typical column "
        f"({last['obs_median_scale']:.3g})",
        {"column": int(last["obs_worst"]), "scale": last["obs_worst_scale"],
         "median_scale": last["obs_median_scale"], "ratio": ratio[-1]},
        [int(r.get("epoch", 0)) for r in measured],
        {"key": "train.normalize_observations", "to": True, "live": False,
         "restart": "--train.normalize-observations true"})


def episode_ends(history, ctx, active):
    """Episodes never end (none in the run after 10,000 steps per env), or always end at the
    time limit (no terminal in the run's first 20+ epochs and 1000+ episodes) while the
    return does not rise: the agent never reaches what ends an episode; check the env's
    time limit or reward. (A run that learns to survive until the limit had terminals
    first; envs that only truncate, e.g. MuJoCo's, rise.)"""
    last = history[-1]
    per_env = (_num(last, "global_step") or 0) / max(ctx.get("num_agents") or 1, 1)
    if ctx.get("ends_seen", 0) == 0 and per_env >= 10_000 and _last(history, "ends", 10):
        return Finding(WARNING, f"no episode ended in {per_env:,.0f} steps per env",
                       {"ends": 0, "steps_per_env": per_env}, _epochs(history, 10),
                       hint="does the env ever end an episode? Give it a time limit" + (
                           ": --env.max-episode-steps N" if str(ctx.get("env_name") or "")
                           .startswith("gym:") else ""))
    truncs = _last(history, "truncations", 10)
    if truncs is None or ctx.get("terminals_seen", 0) > 0 or int(last.get("epoch", 0)) < 20:
        return None
    if ctx.get("truncations_seen", 0) >= 1000 and score_rose(history, ctx) is False:
        return Finding(INFO, f"every episode ends at the time limit "
                       f"({int(ctx['truncations_seen']):,} so far, no terminal) and the score "
                       f"does not rise", {"truncations": int(ctx["truncations_seen"]),
                                          "terminals": 0}, _epochs(history, 10),
                       hint="the time limit may be too short to reach the goal")
    return None


def short_horizon(history, ctx, active):
    """train.gamma looks too short for the episodes: its horizon 1/(1-gamma) is under a
    twentieth of the mean episode length for 5 epochs (held while under a tenth), and the
    rewards are further apart than it (the median over the last 5 epochs of the batch's
    steps per rewarded step), so the policy cannot tie an action to its reward. Long
    episodes with rewards all along are not it: breakout's default run (gamma 0.99, episodes
    of 2,000+ steps once it plays well, a brick every few dozen steps) learns to the end. A
    reward paid on every step (a -1 per step) reads as dense here: such envs are not judged."""
    gamma = ctx.get("gamma", 0.99)
    gaps = _last(history, "reward_gap", 5)
    if gamma >= 1 or gaps is None or statistics.median(gaps) <= 1 / (1 - gamma):
        return None
    # the last 5 epochs that ended episodes (long episodes end only every few epochs)
    seen = []
    for r in reversed(history):
        length = _num(r, "episode_length")
        if length is not None:
            seen.insert(0, (int(r.get("epoch", 0)), length))
            if len(seen) == 5:
                break
    if len(seen) < 5:
        return None
    lengths = [n for _, n in seen]
    horizon = 1 / (1 - gamma)
    length = statistics.fmean(lengths)
    if horizon * (10 if active else 20) >= length:
        return None
    to = min(0.999, max(0.99, round(1 - 2 / length, 3)))
    return Finding(
        WARNING, f"train.gamma {gamma:g} looks {horizon:.3g} steps ahead; episodes last "
        f"{length:.0f}: rewards further away are invisible",
        {"gamma": gamma, "horizon": horizon, "episode_length": length,
         "steps_per_reward": statistics.median(gaps)}, [e for e, _ in seen],
        {"key": "train.gamma", "from": gamma, "to": to, "live": True})


def _rolling_median(values: list[float], n: int) -> list[float]:
    return [statistics.median(values[i:i + n]) for i in range(len(values) - n + 1)]


def env_bound(history, ctx, active):
    """Throughput fell to under half its best (3-epoch medians) for 5 epochs because the env
    itself got slower: the env takes over 70% of the time, and its time per step grew over
    2.5x *relative to the learner's own compute per step* (forward + learn) in every one of
    the last 5 epochs. The ratio is what makes it the env: a shared machine whose load
    rises slows the env and the learner alike: on healthy Acrobot-v1, Hopper-v5 and
    CartPole-v1 runs under a changing load the env's wall time per step grew past that
    threshold and fired this rule, the ratio stayed under it (tests/fixtures/diagnosis/
    false_env_bound_acrobot.jsonl); an env made slower grows the ratio far past it."""
    n = 5
    share = _last(history, "timing_pct_env", n)
    # the cheap test first: most runs' env takes well under 70% of the time
    if len(history) < 2 * n or share is None or min(share) <= (60 if active else 70):
        return None
    sps = [_num(r, "sps") for r in history]
    per_step = [_num(r, "env_seconds_per_step") for r in history]
    compute = [_num(r, "compute_seconds_per_step") for r in history]
    if None in sps or None in per_step or None in compute or min(compute) <= 0:
        return None
    medians = _rolling_median(sps, 3)
    best_at = max(range(len(medians)), key=medians.__getitem__)
    now = max(sps[-n:])
    split = [e / c for e, c in zip(per_step, compute)]
    # the env's cheapest share of the work, steadied over 5 epochs (one quick epoch is not it)
    reference = min(_rolling_median(split[:-n], n))
    fall = 0.6 if active else 0.5
    if not (now < fall * medians[best_at]
            and min(split[-n:]) > (2.0 if active else 2.5) * reference):
        return None
    env_then = statistics.median(per_step[best_at:best_at + 3])
    env_now = min(per_step[-n:])
    workers = ctx.get("num_workers") or 1
    return Finding(
        WARNING, f"the env is the bottleneck: {now:,.0f} steps/s, from {medians[best_at]:,.0f}; "
        f"the env takes {min(share):.0f}% of the time, {env_now / env_then:.1f}x more per step",
        {"sps": now, "best_sps": medians[best_at], "env_share": min(share),
         "env_step_slowdown": env_now / env_then,
         "env_vs_compute": min(split[-n:]) / reference},
        [int(history[best_at].get("epoch", 0)), int(history[-1].get("epoch", 0))],
        {"key": "vec.num_workers", "to": workers * 2, "live": False,
         "restart": f"--vec.num-workers {workers * 2}"},
        hint="a slower env (bigger levels?) or a starved CPU (other processes)")


RULES: dict[str, Callable] = {
    "kl_blowup": kl_blowup, "policy_collapse": policy_collapse,
    "value_dominates": value_dominates, "critic_blind": critic_blind, "plateau": plateau,
    "score_lost": score_lost, "grad_always_clipped": grad_always_clipped, "obs_scale": obs_scale,
    "episode_ends": episode_ends, "short_horizon": short_horizon, "env_bound": env_bound,
}
assert tuple(RULES) == DIAGNOSIS_RULES, "engine/shared/protocol.py DIAGNOSIS_RULES names the rules"

# What a diagnosis can follow from: while one of these is in force it explains this one,
# and the dashboard shows the cause with this one folded under it (one root, one line).
# Measured together on the runs broken on purpose (benchmarks/doctor.py): a learning rate
# 60x too high fires kl_blowup at epoch 1, then policy_collapse, value_dominates,
# grad_always_clipped, episode_ends and plateau; rewards x1000 fire value_dominates, then
# grad_always_clipped and critic_blind; a column x1e4 fires obs_scale, then critic_blind.
EXPLAINED_BY: dict[str, tuple[str, ...]] = {
    "policy_collapse": ("kl_blowup",),  # the overshooting update lands on a corner
    "value_dominates": ("kl_blowup",),  # the critic diverges with the policy
    "grad_always_clipped": ("kl_blowup", "value_dominates"),  # the large losses' gradients
    "critic_blind": ("kl_blowup", "value_dominates", "obs_scale"),
    "episode_ends": ("kl_blowup", "policy_collapse"),  # a stuck policy reaches no end
    "plateau": ("kl_blowup", "policy_collapse", "episode_ends", "short_horizon"),
    "score_lost": ("kl_blowup", "value_dominates"),  # the overshooting updates undo it
}

