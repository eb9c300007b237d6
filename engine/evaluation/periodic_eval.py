"""Evaluation during training: every `eval.interval` epochs the engine plays the current policy
on envs of its own and adds the result to the epoch's metrics row as its `eval` group.

    evaluation = PeriodicEval(config, run_dir, events, interrupted)
    if evaluation.due(trainer.epoch):
        group = evaluation.run(trainer)   # {"score", "episode_return", "episode_length",
                                          #  "episodes", "seconds"}; None if cut short

Training is left exactly as it was: the evaluation's envs are its own (`eval.num_envs` one-env
objects of the run's env and settings, built once, reset with fresh seeds each time), the
policy samples from the Evaluator's own torch stream seeded from (train.seed, epoch), and the
process's Python, NumPy and torch generators are captured before and restored after (an env's
code may draw from them). A run with evaluation on trains on the same batches as one without.

The best evaluation so far keeps its policy: `checkpoints/best.pt` is the trainer's whole state
(the format of every checkpoint, with its checksum beside it, so `eval` and `train --from` load
it), and `checkpoints/best.json` its score, step and epoch (a resumed run goes on comparing
with it). Every `eval.record_every` evaluations, env 0's first episode is also recorded into
`recordings/eval-<step>.<gif|mp4>` (engine/evaluation/recording.py); a recording that cannot be made
(no imageio, an env without pictures) is said once as a warning and training goes on.

Only the main learner rank evaluates. Between steps the evaluation calls `interrupted()`,
which applies queued commands (a pause waits there) and says whether to give up: a stop, or
`eval.interval` set to 0 while an evaluation runs (the way out of one that never ends).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from puffer_tui.engine.algo import checkpoint_state
from puffer_tui.engine.shared.atomic_write import StagedFiles
from puffer_tui.engine.shared.checkpoint import (
    checkpoint_dir,
    checksum_path,
    non_finite_tensors,
    serialized,
)
from puffer_tui.engine.shared.config import eval_env_settings

BEST_CHECKPOINT = "best.pt"
BEST_SCORE = "best.json"
DEFAULT_FPS = 15.0  # recordings of envs that name no render fps


def eval_seed(train_seed: int, epoch: int) -> int:
    """The seed of the evaluation after `epoch`: fresh episodes each time, reproducible."""
    return int(np.random.SeedSequence([int(train_seed) & 0xFFFFFFFF, int(epoch)])
               .generate_state(1)[0])


def criterion(group: dict) -> float | None:
    """What "best" compares: the eval score, or the mean return for envs that log no score."""
    for key in ("score", "episode_return"):
        value = group.get(key)
        if isinstance(value, (int, float)) and math.isfinite(value):
            return float(value)
    return None


class PeriodicEval:
    def __init__(self, config, run_dir: Path, events, interrupted: Callable[[], bool]):
        self.config = config  # the trainer's own object: live changes of eval.* show here
        self.run_dir = Path(run_dir)
        self.events = events
        self.interrupted = interrupted
        self.evaluator = None  # built on the first evaluation
        self.evaluations = 0
        self.recording_off: str | None = None  # why recordings stopped (said once)
        self.failed = False
        self.best = read_best(self.run_dir)

    def due(self, epoch: int) -> bool:
        interval = self.config.eval.interval
        return not self.failed and interval > 0 and epoch % interval == 0

    def run(self, trainer) -> dict | None:
        """Evaluate trainer.policy now (main thread, between epochs): the eval group, or None
        when interrupted or failed (an error event says why; training goes on)."""
        settings = self.config.eval
        start = time.perf_counter()
        saved = checkpoint_state.capture_rng(trainer.device)
        try:
            evaluator = self._evaluator(trainer.policy)
            evaluator.restart(eval_seed(self.config.train.seed, trainer.epoch),
                              settings.episodes, settings.deterministic)
            self.evaluations += 1
            every = settings.record_every
            if every and self.evaluations % every == 0 and self.recording_off is None:
                self._record(evaluator, trainer.global_step)
            while not evaluator.finished:
                if self.interrupted():
                    return None
                evaluator.step()
        except Exception as e:  # an env or policy failing here must not end the training
            self.failed = True
            self.close()
            self.events.error(f"evaluation failed, training goes on without it: "
                              f"{type(e).__name__}: {e}")
            return None
        finally:
            checkpoint_state.restore_rng(saved, trainer.device)
        result = evaluator.result()
        group = {"score": result["score"], "episode_return": result["episode_return"],
                 "episode_length": result["episode_length"], "episodes": result["episodes"],
                 "seconds": time.perf_counter() - start}
        self._keep_if_best(trainer, group)
        return group

    def _evaluator(self, policy):
        # lazy: pulls gymnasium, the evaluator, which this module does not load
        from puffer_tui.engine.evaluation.evaluate import Evaluator

        if self.evaluator is None:
            settings = self.config.eval
            # its own envs: the run's settings with eval.env_overrides on top (same spaces,
            # checked before the run started: engine/startup/preflight.py)
            config = dataclasses.replace(self.config, env=eval_env_settings(self.config))
            self.evaluator = Evaluator(policy, config, None, settings.num_envs,
                                       eval_seed(self.config.train.seed, 0), settings.deterministic,
                                       settings.episodes)
        self.evaluator.policy = policy
        return self.evaluator

    # -- the best policy ------------------------------------------------------------------------

    def _keep_if_best(self, trainer, group: dict) -> None:
        value = criterion(group)
        if value is None or (self.best is not None and value <= self.best["value"]):
            return
        best = {"value": value, "score": group["score"],
                "episode_return": group["episode_return"],
                "global_step": trainer.global_step, "epoch": trainer.epoch}
        try:
            path = save_best(self.run_dir, trainer.state_dict(), best)
        except Exception as e:  # like a periodic checkpoint: a failed save never ends the run
            self.events.warning(f"could not save the best policy: {type(e).__name__}: {e}")
            return
        self.best = best
        self.events.info(f"best evaluation so far ({value:.4g}): {path.name} saved "
                         f"(step {trainer.global_step}, epoch {trainer.epoch})")

    # -- recordings -------------------------------------------------------------------------------

    def _record(self, evaluator, step: int) -> None:
        # lazy: pulls gymnasium, which this module does not load
        from puffer_tui.engine.evaluation.recording import (
            GIF_MAX_FPS,
            RecordingError,
            check_recording_path,
            periodic_recording_path,
            record_episodes,
        )

        settings = self.config.eval
        suffix = f".{settings.record_format}"
        path = periodic_recording_path(self.run_dir, step, suffix)
        env = evaluator.envs[0]
        fps = _render_fps(env) or DEFAULT_FPS
        if suffix == ".gif":
            fps = min(fps, GIF_MAX_FPS)
        try:
            check_recording_path(path)  # imageio (and ffmpeg for mp4) before playing
            # record_scale 0: the size `eval --record` makes (about 400 px wide, whatever
            # the frames: tiles or an image)
            scale = settings.record_scale or None
            made = record_episodes(self._first_episode(evaluator), path, fps, scale, env.palette)
        except (RecordingError, OSError) as e:
            self.recording_off = str(e)
            self.events.warning(f"periodic recordings are off for this run, training goes on: "
                                f"{e}")
            return
        cut = " (cut short: the GIF reached its size limit)" if made.cut_short else ""
        where = made.path.relative_to(self.run_dir)  # the run dir is known to every reader
        self.events.info(f"recording saved: {where} ({made.frames} frames, "
                         f"{made.width}x{made.height}, {fps:g} fps){cut}")

    def _first_episode(self, evaluator) -> Iterator:
        """Env 0's frames until its first episode ends, stepping every env (their episodes
        count as usual): what the recording holds."""
        # lazy: pulls gymnasium, the evaluator, which this module does not load
        from puffer_tui.engine.evaluation.evaluate import copied_frame

        first, last = evaluator.rows[0]
        yield copied_frame(evaluator.frame())
        while not self.interrupted():
            evaluator.step()
            yield copied_frame(evaluator.frame())
            if evaluator.starts[first:last].any():
                return

    def close(self) -> None:
        evaluator, self.evaluator = self.evaluator, None
        if evaluator is not None:
            evaluator.close()


# -- best.pt and best.json ----------------------------------------------------------------------

def read_best(run_dir: Path) -> dict | None:
    """The best evaluation kept so far (checkpoints/best.json), or None."""
    try:
        best = json.loads((checkpoint_dir(run_dir) / BEST_SCORE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = best.get("value") if isinstance(best, dict) else None
    return best if isinstance(value, (int, float)) and math.isfinite(value) else None


def save_best(run_dir: Path, state: dict, best: dict) -> Path:
    """Write `state` as checkpoints/best.pt (with its checksum) and `best` as best.json, all
    three renamed into place together (engine/shared/atomic_write.py)."""
    bad = non_finite_tensors(state)
    if bad:
        raise ValueError(f"non-finite values in {', '.join(bad[:5])}")
    directory = checkpoint_dir(run_dir)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / BEST_CHECKPOINT
    data, digest = serialized(state, path)
    try:
        with StagedFiles() as files:
            files.stage(path, data)
            files.stage(checksum_path(path), digest)
            files.stage(directory / BEST_SCORE, json.dumps(best) + "\n")
            # best.pt is replaced, not added: drop the old checksum first, so a crash between
            # the renames leaves a best.pt without one (loaded unverified), never a mismatch
            checksum_path(path).unlink(missing_ok=True)
            files.commit()
    finally:
        del data
    return path


def _render_fps(env) -> float | None:
    metadata = getattr(env, "metadata", None)
    fps = metadata.get("render_fps") if isinstance(metadata, dict) else None
    return float(fps) if isinstance(fps, (int, float)) and fps > 0 else None

