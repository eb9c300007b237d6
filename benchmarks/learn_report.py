"""The arithmetic of `puffer-tui bench learn`: training returns at step marks, medians over
seeds with their spread, ours against SB3, and the Markdown table.

A side's training curve is a list of chunks [step at the chunk's end, mean return of the
episodes that finished in it (None if none did), episodes]: one per epoch for ours (read from
metrics.jsonl), one per rollout for SB3 (its Monitor's records). The return at a step mark is
the mean over the newest whole chunks ending at or before the mark that together hold at least
`window` episodes (all finished so far when fewer have): the same rule for both sides. The 100%
mark is the end of the run (each side completes its last epoch or rollout, so it may pass the
budget by less than one of them).

Tested in: tests/benchmarks/test_bench_learn.py (the report's arithmetic, merged outputs)
"""

from __future__ import annotations

import statistics

MARKS = (0.25, 0.5, 1.0)
WINDOW = 20  # episodes


def return_at(chunks: list, step: int, window: int = WINDOW) -> tuple[float, int] | None:
    """(mean return, episodes it covers) of the newest chunks ending by `step`; None when no
    episode has finished by then."""
    total = count = 0.0
    for end, mean, n in reversed(chunks):
        if end > step:
            continue
        if n and mean is not None:
            total += mean * n
            count += n
        if count >= window:
            break
    return (total / count, int(count)) if count else None


def first_rise(chunks: list, rise: float, window: int = WINDOW) -> int | None:
    """The first chunk end whose windowed return is `rise` above the first windowed return
    (the one that first holds `window` episodes); None if it never rose that much."""
    base = None
    for end, _, _ in chunks:
        now = return_at(chunks, end, window)
        if now is None:
            continue
        if base is None:
            if now[1] >= window:
                base = now[0]
            continue
        if now[0] >= base + rise:
            return end
    return None


def _mark_step(chunks: list, budget: int, mark: float) -> int:
    """The step a mark stands for; 100% is the end of the run: each side finishes its last
    epoch or rollout, at most one past the budget (the actual steps are reported)."""
    step = int(round(budget * mark))
    if mark >= 1.0 and chunks:
        step = max(step, chunks[-1][0])
    return step


def spread(values: list) -> dict | None:
    """Median, min and max of the values that exist; None when none do."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "n": len(values)}


def summarize(runs: list[dict], budget: int, marks=MARKS, window: int = WINDOW,
              rise: float | None = None) -> dict:
    """One side's runs (a dict each: chunks, eval, wall_s, cpu_s, sps, error) over seeds."""
    good = [r for r in runs if not r.get("error")]
    # a run stopped by hand (for time) is not a failure of either side; its note says so
    stopped = sum(1 for r in runs if r.get("error") and r.get("stopped"))
    out = {"seeds": len(good), "failed": len(runs) - len(good) - stopped, "stopped": stopped}
    for mark in marks:
        at = [return_at(r["chunks"], _mark_step(r["chunks"], budget, mark), window)
              for r in good]
        out[f"return@{mark:g}"] = spread([a[0] if a else None for a in at])
    out["eval"] = spread([(r.get("eval") or {}).get("episode_return") for r in good])
    for key in ("wall_s", "cpu_s", "sps", "steps"):
        out[key] = spread([r.get(key) for r in good])
    out["cpu_ms_per_step"] = spread([1000 * r["cpu_s"] / r["steps"] for r in good
                                     if r.get("cpu_s") is not None and r.get("steps")])
    if rise is not None:
        rises = [first_rise(r["chunks"], rise, window) for r in good]
        out["first_rise"] = spread(rises)
        out["first_rise_runs"] = rises
    return out


def _median(summary: dict, key: str):
    value = summary.get(key)
    return value["median"] if value else None


def compare(ours: dict, sb3: dict, marks=MARKS) -> dict:
    """Ours against SB3 on the medians: returns as differences (ours - SB3: returns can be
    negative, so a ratio would mislead), times and rates as ratios (ours / SB3)."""
    out = {}
    for key in [f"return@{m:g}" for m in marks] + ["eval"]:
        a, b = _median(ours, key), _median(sb3, key)
        out[f"{key}_diff"] = a - b if a is not None and b is not None else None
        # within SB3's spread over seeds: "as good as" in the sense of the issue's bar
        theirs = sb3.get(key)
        out[f"{key}_at_least_sb3"] = (a >= theirs["min"] if a is not None and theirs else None)
    for key in ("wall_s", "cpu_s", "sps", "cpu_ms_per_step"):
        a, b = _median(ours, key), _median(sb3, key)
        out[f"{key}_ratio"] = a / b if a is not None and b else None
    return out


def _fmt(value, digits: int = 1) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def cell(s: dict | None, digits: int = 1) -> str:
    """'median (min..max)', or the median alone for one seed."""
    if not s:
        return "-"
    if s["n"] == 1 or s["min"] == s["max"]:
        return _fmt(s["median"], digits)
    return f"{_fmt(s['median'], digits)} ({_fmt(s['min'], digits)}..{_fmt(s['max'], digits)})"


def _ratio(value) -> str:
    return "-" if value is None else (f"{value:.2f}x" if value < 10 else f"{value:.0f}x")


def markdown(report: dict, marks=MARKS) -> str:
    """One block of rows per env: ours, SB3, and the comparison."""
    heads = ["env (steps)", "side", *[f"return @{int(m * 100)}%" for m in marks],
             "eval (final policy)", "wall s", "CPU s", "steps/s"]
    lines = ["| " + " | ".join(heads) + " |", "|" + " --- |" * len(heads)]
    for name, env in report["envs"].items():
        label = f"{name} ({env.get('steps', 0):,})"
        if env.get("skipped"):
            lines.append(f"| {label} | skipped: {env['skipped']} |" + " |" * (len(heads) - 2))
            continue
        sides = env.get("summary", {})
        # the zoo's settings, or (MPE, which it has none for) PettingZoo's SB3 tutorial's
        peer = "SB3 + PettingZoo tutorial" if env.get("zoo") == "pettingzoo-tutorial" \
            else "SB3 + zoo"
        for side, title in (("ours", "puffer-tui"), ("sb3", peer)):
            s = sides.get(side)
            if s is None:
                if side == "sb3":
                    lines.append(f"| {label} | SB3: {env.get('no_peer', 'not run')} |"
                                 + " |" * (len(heads) - 2))
                continue
            rets = [cell(s.get(f"return@{m:g}")) for m in marks]
            failed = (f", {s['failed']} failed" if s.get("failed") else "") + (
                f", {s['stopped']} stopped for time" if s.get("stopped") else "")
            seeds = f"{s['seeds']} seed" + ("" if s["seeds"] == 1 else "s")
            lines.append(f"| {label} | {title} ({seeds}{failed}) | " + " | ".join(
                [*rets, cell(s.get("eval")), cell(s.get("wall_s"), 0), cell(s.get("cpu_s"), 0),
                 cell(s.get("sps"), 0)]) + " |")
            label = ""
        c = sides.get("compare")
        if c:
            diffs = [_signed(c.get(f"return@{m:g}_diff")) for m in marks]
            lines.append("| | ours - SB3; ours / SB3 | " + " | ".join(
                [*diffs, _signed(c.get("eval_diff")), _ratio(c.get("wall_s_ratio")),
                 _ratio(c.get("cpu_s_ratio")), _ratio(c.get("sps_ratio"))]) + " |")
        rise = (sides.get("ours") or {}).get("first_rise")
        if "first_rise" in (sides.get("ours") or {}):
            theirs = (sides.get("sb3") or {}).get("first_rise")
            lines.append(f"| | first rise of the return | ours: {cell(rise, 0)} steps; "
                         f"SB3: {cell(theirs, 0)} steps |" + " |" * (len(heads) - 3))
    return "\n".join(lines)


def _signed(value) -> str:
    return "-" if value is None else f"{value:+,.1f}"
