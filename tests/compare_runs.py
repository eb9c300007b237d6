"""Two tiny finished runs to compare: config.toml by the real config code, metrics.jsonl rows
as the trainer writes them, and an events.log with a live learning-rate change."""

from __future__ import annotations

import json
import os
import time

from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import run_dir as rd

START = 1_790_000_000  # the first engine start, unix time (whole seconds, as events.log has)


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def make_compare_run(root, learning_rate="0.01", epochs=6, score_gain=0.1, set_at_s=None,
                     state="finished", now=None):
    """A squared run of `epochs` epochs of 4096 steps, 10 s each; with `set_at_s`, the
    learning rate was changed live that many seconds after the engine started."""
    run = rd.create_run_dir("squared", root, now=now)
    config = cfg.load_config("squared", {"train.learning_rate": learning_rate,
                                         "train.total_timesteps": str(epochs * 4096)})
    cfg.save(config, run / rd.CONFIG_FILE)
    rows = [{"epoch": e, "global_step": e * 4096, "sps": 400.0 + e, "uptime": 10.0 * e,
             "learning_rate": float(learning_rate), "policy_loss": -0.01 * e,
             "value_loss": 1.0 / e, "entropy": 1.5, "approx_kl": 0.001, "clipfrac": 0.0,
             "explained_variance": 0.1, "episode_return": score_gain * e,
             "episode_length": 20.0, "score": score_gain * e}
            for e in range(1, epochs + 1)]
    (run / rd.METRICS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    lines = [f"{_stamp(START)} [info] engine 4242 starting squared (new run)"]
    if set_at_s is not None:
        lines.append(f"{_stamp(START + set_at_s)} [info] train.learning_rate changed from "
                     f"{learning_rate} to 0.001 (from the next epoch)")
    end = START + 10 * epochs + 1  # the training time, and a second to start up
    steps = epochs * 4096
    lines += [f"{_stamp(end)} [info] checkpoint saved: step-{steps:012d}-epoch-{epochs:08d}.pt "
              f"(step {steps}, epoch {epochs})",
              f"{_stamp(end)} [info] training finished at step {steps}; checkpoint ..."]
    (run / rd.EVENTS_FILE).write_text("\n".join(lines) + "\n")
    os.utime(run / rd.METRICS_FILE, (end + 0.5, end + 0.5))  # its last row written then
    rd.write_json_atomic(run / rd.STATUS_FILE, {"state": state, "global_step": epochs * 4096,
                                                "total_timesteps": epochs * 4096})
    return run
