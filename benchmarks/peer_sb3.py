"""`puffer-tui bench train --peer sb3`: Stable-Baselines3's PPO beside ours, in one run.

Both train Gymnasium's CartPole-v1: SB3 with its defaults (`PPO("MlpPolicy", "CartPole-v1")`:
one env, 2048-step rollouts, 10 epochs of 64-sample minibatches) and the torch thread count
ours uses, ours with gym:CartPole-v1's preset and the flags given. Each side gets `budget` seconds of wall time (model building not
counted) and stops early once the mean length of its last 100 finished episodes reaches 475
(checked after each rollout/epoch; ours counts whole epochs back until they hold 100
episodes). Reported for both: training agent-steps/s, and the seconds and agent steps to
that mean length; then ours against SB3 as ratios (a side that never got there makes its
ratio a bound).

Tested in: tests/benchmarks/test_bench_peer.py
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from puffer_tui.benchmarks.vec_runners import tree_cpu_seconds
from puffer_tui.engine.runtime.metrics import flatten

ENV_SPEC = "gym:CartPole-v1"
GYM_ID = "CartPole-v1"
REACH = 475.0  # mean episode length: CartPole-v1's own "solved" bar
WINDOW = 100  # episodes the mean is taken over (SB3's ep_info_buffer holds the last 100)


@dataclass
class PeerResult:
    name: str
    steps: int = 0
    seconds: float = 0.0
    sps: float = 0.0
    reached: bool = False
    reach_seconds: float | None = None
    reach_steps: int | None = None
    last_mean_length: float | None = None
    cpu_seconds: float | None = None  # this process's threads and its workers', while training


def require_sb3():
    try:
        import stable_baselines3
    except ImportError:
        raise SystemExit('--peer sb3 needs Stable-Baselines3, which is not installed: '
                         'pip install "puffer-tui[bench]"') from None
    return stable_baselines3


def window_mean(epochs: list[tuple[float, int]], window: int = WINDOW) -> float | None:
    """The mean episode length of the newest epochs ((mean, episodes) each, oldest first)
    that together hold at least `window` episodes; None until that many have finished."""
    total = count = 0.0
    for mean, episodes in reversed(epochs):
        if episodes:
            total += mean * episodes
            count += episodes
        if count >= window:
            return total / count
    return None


def train_ours(config, budget: float) -> PeerResult:
    # lazy: pulls gymnasium, torch, the trainer, the policy, the vectorizer, which this module does not load
    from puffer_tui.engine.algo.trainer import Trainer

    result = PeerResult("puffer-tui")
    epochs: list[tuple[float, int]] = []
    elapsed = 0.0
    with Trainer(config) as trainer:
        cpu = tree_cpu_seconds()
        start = time.perf_counter()
        while not trainer.done:
            row = flatten(trainer.run_epoch())
            elapsed = time.perf_counter() - start
            epochs.append((row.get("episode_length") or 0.0, int(row.get("episodes") or 0)))
            mean = window_mean(epochs)
            if mean is not None:
                result.last_mean_length = mean
                if mean >= REACH:
                    result.reached = True
                    result.reach_seconds, result.reach_steps = elapsed, trainer.global_step
                    break
            if elapsed >= budget:
                break
        result.steps = trainer.global_step
        result.cpu_seconds = tree_cpu_seconds() - cpu
    result.seconds = elapsed
    result.sps = result.steps / max(elapsed, 1e-9)
    return result


def train_sb3(budget: float, seed: int) -> PeerResult:
    require_sb3()
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback

    result = PeerResult("stable-baselines3")

    class Watch(BaseCallback):
        """Stops at the budget, or at the step after a rollout whose window reached REACH."""

        def _on_training_start(self) -> None:
            self.cpu = tree_cpu_seconds()
            self.start = time.perf_counter()

        def _on_step(self) -> bool:
            return not result.reached and time.perf_counter() - self.start < budget

        def _on_rollout_end(self) -> None:
            episodes = self.model.ep_info_buffer
            if len(episodes) < WINDOW:
                return
            mean = sum(e["l"] for e in episodes) / len(episodes)
            result.last_mean_length = mean
            if mean >= REACH and not result.reached:
                result.reached = True
                result.reach_seconds = time.perf_counter() - self.start
                result.reach_steps = self.model.num_timesteps

    model = PPO("MlpPolicy", GYM_ID, seed=seed, device="cpu", verbose=0)
    watch = Watch()
    model.learn(total_timesteps=10**12, callback=watch)
    result.seconds = time.perf_counter() - watch.start
    result.cpu_seconds = tree_cpu_seconds() - watch.cpu
    result.steps = model.num_timesteps
    result.sps = result.steps / max(result.seconds, 1e-9)
    model.get_env().close()
    return result


def ratios(ours: PeerResult, peer: PeerResult) -> dict:
    """Ours against the peer: SPS (ours / theirs), and how many times sooner ours reached the
    mean length, in seconds and in steps (theirs / ours). A side that did not reach it
    counts its whole run: the ratio is then a lower bound (only they missed) or an upper
    bound (only we did); None when neither reached."""
    out = {"sps": ours.sps / peer.sps if peer.sps else None}
    for key, mine, theirs in (("seconds", ours.reach_seconds, peer.reach_seconds),
                              ("steps", ours.reach_steps, peer.reach_steps)):
        bound = "exact" if ours.reached and peer.reached else (
            "lower" if ours.reached else "upper" if peer.reached else None)
        spent_mine = mine if ours.reached else (ours.seconds if key == "seconds" else ours.steps)
        spent_theirs = theirs if peer.reached else (
            peer.seconds if key == "seconds" else peer.steps)
        out[f"time_to_reach_{key}"] = (spent_theirs / spent_mine
                                       if bound and spent_mine else None)
        out[f"time_to_reach_{key}_bound"] = bound
    return out


def measure_peer(config, budget: float) -> dict:
    """Both sides in turn (SB3 first, with torch's thread count as it found it), and the
    comparison: what `bench train --peer sb3 --json` writes under "peer"."""
    import sys

    import torch

    # lazy: pulls gymnasium, torch, the trainer, the vectorizer, which this module does not load
    from puffer_tui.engine.algo.trainer_setup import auto_threads

    require_sb3()
    # SB3 gets the torch threads ours takes: its default (one per core) beside other load
    # oversubscribes the cores, which slows torch several times over
    threads = config.train.torch_threads or auto_threads(config)
    print(f"training stable-baselines3 PPO on {GYM_ID} (budget {budget:g} s, {threads} torch "
          f"threads)...", file=sys.stderr, flush=True)
    torch.set_num_threads(threads)
    peer = train_sb3(budget, config.train.seed)
    print(f"training puffer-tui on {ENV_SPEC} (budget {budget:g} s)...", file=sys.stderr,
          flush=True)
    ours = train_ours(config, budget)
    return {"reach": REACH, "window": WINDOW, "budget": budget, "sb3_torch_threads": threads,
            "ours": asdict(ours), "peer": asdict(peer), "ratios": ratios(ours, peer)}


def reach_text(result: PeerResult, key: str) -> str:
    """The seconds or steps a side took to the mean length; "> what it spent" if it never got
    there."""
    value = result.reach_seconds if key == "seconds" else result.reach_steps
    if value is None:
        spent = result.seconds if key == "seconds" else result.steps
        return f"> {spent:,.1f}" if key == "seconds" else f"> {spent:,}"
    return f"{value:,.1f}" if key == "seconds" else f"{value:,}"


def ratio_text(r: dict, key: str) -> str:
    """A ratio of `ratios()`, marked ">= " or "<= " where it is a bound."""
    value, bound = r.get(key), r.get(f"{key}_bound", "exact")
    if value is None:
        return "-"
    return {"lower": ">= ", "upper": "<= "}.get(bound, "") + (
        f"{value:.1f}x" if value >= 1 else f"{value:.2f}x")


def print_table(summary: dict) -> None:
    """The terminal table of `measure_peer`'s summary."""
    from rich.console import Console
    from rich.table import Table

    ours, peer = PeerResult(**summary["ours"]), PeerResult(**summary["peer"])
    r = summary["ratios"]
    reach = reach_text

    def ratio(key):
        return ratio_text(r, key)

    table = Table(title=f"PPO on CartPole-v1: puffer-tui vs Stable-Baselines3 (mean length of "
                        f"the last {WINDOW} episodes >= {REACH:g})")
    for name, justify in (("measure", "left"), ("puffer-tui", "right"),
                          ("stable-baselines3", "right"), ("ratio", "right")):
        table.add_column(name, justify=justify)
    table.add_row("training agent-steps/s", f"{ours.sps:,.0f}", f"{peer.sps:,.0f}",
                  ratio("sps"))
    table.add_row(f"seconds to {REACH:g}", reach(ours, "seconds"), reach(peer, "seconds"),
                  ratio("time_to_reach_seconds"))
    table.add_row(f"agent steps to {REACH:g}", reach(ours, "steps"), reach(peer, "steps"),
                  ratio("time_to_reach_steps"))
    last = [f"{x.last_mean_length:.0f}" if x.last_mean_length is not None else "-"
            for x in (ours, peer)]
    table.add_row("last mean length", *last, "")
    Console().print(table)
    Console().print("ratios: ours / theirs for agent-steps/s; theirs / ours for the time and "
                    "steps to the mean length (above 1: ours is faster)")
