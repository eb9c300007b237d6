"""`puffer-tui eval RUN|CHECKPOINT`: play a trained policy and report its score.

    puffer-tui eval runs/squared-20261122-001401              # latest checkpoint of a run
    puffer-tui eval squared-20261122-001401 --episodes 500    # a run name under the runs root
    puffer-tui eval runs/.../checkpoints/step-...pt --render ascii --fps 10
    puffer-tui eval squared-20261122-001401 --record best.gif   # into RUN/recordings/
    puffer-tui eval runs/cartpole-... --record ./cartpole.mp4 --episodes 1 --fps 50

Tested in: tests/app/test_cli_eval.py, tests/app/test_cli_eval_start.py,
tests/app/test_recording_defaults.py
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from puffer_tui.engine.shared import exit_codes as ec
from puffer_tui.engine.shared.protocol import FrameKind, palette_from_wire

EPISODES = 100
RENDER_EPISODES = 3  # watched at --fps: a solved cartpole episode is 500 frames
RGB_ROWS = 30  # cell rows of an image frame written to a file or pipe (a terminal: its height)
PROGRESS_EVERY = 5.0  # seconds between "N/M episodes" lines while a score is played


def add_parser(sub, name, help_text):
    p = sub.add_parser(name, help=help_text, description=help_text,
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=ec.help_epilog((ec.FINISHED, ec.ERROR, ec.USAGE, ec.STOPPED)))
    p.add_argument("target", metavar="RUN|CHECKPOINT",
                   help="a run directory or name (its latest checkpoint), or a checkpoint file")
    p.add_argument("--episodes", type=int, default=None,
                   help=f"episodes to play (default {EPISODES}; {RENDER_EPISODES} with --render or "
                        "--record)")
    p.add_argument("--num-envs", type=int, default=None,
                   help="envs played at once (default 64; 1 with --render)")
    p.add_argument("--render", choices=("ascii", "window"), default=None,
                   help="animate env 0 (tiles in the env's palette, Gymnasium images in half "
                        "blocks, or its ansi text): in the terminal (ascii) or in a raylib "
                        "window (window; needs a display, e.g. xvfb-run)")
    p.add_argument("--view", choices=("env", "obs"), default="env",
                   help="with --render: the env's own drawing (env), or its observation drawn "
                        "as an image, as the policy sees it (obs; e.g. Atari's 4 x 84 x 84 "
                        "frame stack, side by side)")
    p.add_argument("--fps", type=float, default=10.0,
                   help="frames per second with --render, and of a --record file (default 10)")
    p.add_argument("--record", metavar="FILE.gif|FILE.mp4",
                   help="write env 0's frames of every episode played to a GIF or MP4 (needs "
                        'pip install "puffer-tui[record]"); a bare name goes into the run\'s '
                        "recordings/ folder; plays one env")
    p.add_argument("--overlay", action="store_true",
                   help="with --record or --render window: draw the policy's view into each "
                        "frame (action probabilities, V(s), value against return, saliency "
                        "heat; in the window the g key turns the heat to V(s), then off)")
    p.add_argument("--scale", metavar="K", type=int, default=None,
                   help="with --record: pixels per tile, or per image pixel (default: about "
                        "400 pixels wide)")
    p.add_argument("--screenshot", metavar="PATH", type=Path,
                   help="with --render window: save a PNG after --screenshot-after frames, exit")
    p.add_argument("--screenshot-after", metavar="N", type=int, default=30,
                   help="frames drawn before the screenshot (default 30)")
    p.add_argument("--seed", type=int, default=12345,
                   help="seed of the envs and of the policy's action sampling (default 12345)")
    p.add_argument("--deterministic", action="store_true",
                   help="take the most likely action instead of sampling")
    p.add_argument("--runs-dir", metavar="D", help="where run names are looked up")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=run)


def _fail(message: str) -> int:
    print(f"puffer-tui eval: error: {message}", file=sys.stderr)
    return ec.USAGE


def run(args) -> int:
    # The one app module that calls into the evaluator (see the import contract in
    # pyproject.toml): the policy plays in engine/evaluation/evaluate.py; this file parses, renders, prints.
    from puffer_tui.engine.evaluation.evaluate import EvaluationError, load_evaluator

    # Watched or recorded, every frame is played: a few episodes, not a score's hundred.
    episodes = args.episodes if args.episodes is not None else (
        RENDER_EPISODES if args.render or args.record else EPISODES)
    if episodes < 1:
        return _fail(f"--episodes must be >= 1, got {episodes}")
    if args.num_envs is not None and args.num_envs < 1:
        return _fail(f"--num-envs must be >= 1, got {args.num_envs}")
    if not 0 < args.fps <= 1000:
        return _fail(f"--fps must be in (0, 1000], got {args.fps}")
    if args.screenshot is not None and args.render != "window":
        return _fail("--screenshot needs --render window")
    if args.view != "env" and not (args.render or args.record):
        return _fail(f"--view {args.view} needs --render ascii, --render window or --record")
    if args.overlay and not (args.record or args.render == "window"):
        return _fail("--overlay needs --record or --render window (--render ascii shows the "
                     "policy's view anyway)")
    if args.scale is not None and not args.record:
        return _fail("--scale needs --record")
    if args.record and args.render:
        return _fail("--record and --render go one at a time: record, then watch the file")
    if args.record and args.num_envs not in (None, 1):
        return _fail("--record plays one env, whose frames it writes: leave out --num-envs")
    if args.screenshot_after < 1:
        return _fail(f"--screenshot-after must be >= 1, got {args.screenshot_after}")
    if args.render == "window":  # before anything loads or plays: no display, nothing to show
        # lazy: pulls numpy and the frame drawing, which this module does not load
        from puffer_tui.app.render_window import NO_DISPLAY_HINT, _has_display

        if not _has_display():
            return _fail(f"no display (DISPLAY is not set): {NO_DISPLAY_HINT}")
    num_envs = args.num_envs or (1 if args.render or args.record else 64)
    recording = None
    if args.record:  # the path is checked before anything plays
        # lazy: pulls gymnasium, the evaluator, which this module does not load
        from puffer_tui.engine.evaluation.evaluate import resolve_target
        from puffer_tui.engine.evaluation.recording import (
            RecordingError,
            check_recording_options,
            recording_path,
        )

        try:
            recording = check_recording_options(
                recording_path(args.record, resolve_target(args.target, args.runs_dir)),
                args.fps, args.scale)
        except (EvaluationError, RecordingError) as e:
            return _fail(str(e))
    try:
        evaluator = load_evaluator(args.target, args.runs_dir, num_envs, args.seed,
                                   args.deterministic, episodes)
    except EvaluationError as e:
        return _fail(str(e))
    evaluator.view = args.view
    refused = unrecordable(evaluator) if recording is not None else None
    if refused is not None:
        evaluator.close()
        return _fail(refused)
    interrupted = False
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.app.stop_signals import TermAsCtrlC

    signals = TermAsCtrlC()  # SIGTERM, SIGHUP: stop with the score so far, as Ctrl-C does
    try:
        signals.__enter__()  # before the first line: a signal after it is answered
        if args.render and args.episodes is None:
            print(f"playing {_episodes(episodes)} at {args.fps:g} fps (change with --episodes "
                  f"N and --fps F; Ctrl-C stops with the score so far)", file=sys.stderr,
                  flush=True)
        elif not args.render and recording is None:
            print(f"playing {_episodes(episodes)} of {evaluator.env_name} with "
                  f"{evaluator.checkpoint.name} ({num_envs} at once; Ctrl-C stops with the "
                  f"score so far)", file=sys.stderr, flush=True)
        if recording is not None:
            # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
            from puffer_tui.engine.shared.recordings import RecordingError

            try:
                made = record(evaluator, recording, args.fps, args.scale, args.overlay)
            except RecordingError as e:
                return _fail(str(e))
        elif args.render == "window":
            # lazy: pulls gymnasium, which this module does not load
            from puffer_tui.app.render_window import WindowUnavailableError

            try:
                play_in_window(evaluator, args.fps, args.screenshot, args.screenshot_after,
                               args.overlay)
            except (WindowUnavailableError, ValueError) as e:
                return _fail(str(e))
        else:
            from rich.console import Console

            # with --json, stdout carries only the JSON
            play(evaluator, args.render, args.fps, Console(stderr=True) if args.json else None)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        signals.__exit__()
        result = evaluator.result()
        evaluator.close()
    result["interrupted"] = interrupted
    if recording is not None:
        result["recording"] = str(recording) if recording.exists() else None
        if not interrupted:
            result.update(recording_frames=made.frames, recording_size=[made.width, made.height])
    if args.json:
        import json

        print(json.dumps(result, indent=2))
    else:
        print(summary(result, Path(result["checkpoint"]), episodes))
        if args.screenshot is not None and not interrupted:
            print(f"screenshot saved to {args.screenshot}")
        if recording is not None and interrupted and result["recording"]:
            print(f"recording of the frames played until Ctrl-C saved to {recording}")
        elif recording is not None and not interrupted:
            cut = (" (a GIF's frame limit was reached first: record an .mp4 for the rest)"
                   if made.cut_short else "")
            print(f"recording saved to {recording}: {made.frames} frames, "
                  f"{made.width} x {made.height} pixels at {args.fps:g} fps{cut}")
    if result["endless"]:  # the tally so far is printed above; this is why it is short
        print(f"puffer-tui eval: error: {result['endless']}", file=sys.stderr)
        return ec.ERROR
    return ec.STOPPED if interrupted else ec.FINISHED


def _episodes(count: int) -> str:
    return f"{count} episode" + ("" if count == 1 else "s")


def summary(result: dict, path: Path, target: int) -> str:
    def shown(key, fmt):
        return "-" if result[key] is None else format(result[key], fmt)

    cut = result["interrupted"] or result.get("endless")
    played = (f"{'interrupted' if result['interrupted'] else 'stopped'} after "
              f"{result['episodes']} of {_episodes(target)}" if cut
              else _episodes(result["episodes"]))
    return (f"{result['env']}: {played} from {path.name}: score {shown('score', '.3f')}, "
            f"return {shown('episode_return', '.3f')}, length {shown('episode_length', '.1f')}")


def unrecordable(evaluator) -> str | None:
    """Why env 0's frames cannot be recorded, as one line (None: they can)."""
    drawn = evaluator.frame_description
    if drawn in ("tile frames", "rgb frames"):
        return None
    if getattr(evaluator.envs[0], "render_mode", None) == "rgb_array" and \
            drawn.startswith("text frames"):
        # An rgb_array env that hands back text could not draw: the text says why
        # (e.g. Gymnasium's pygame missing).
        why = (evaluator.frame_message() or {}).get("text", "").strip()
        return f"{evaluator.env_name} cannot draw a picture to record: {' '.join(why.split())}"
    return (f"{evaluator.env_name} draws {drawn}: a recording needs pictures, tiles or "
            "images (a Gymnasium env with render_mode rgb_array)")


def record(evaluator, path: Path, fps: float, scale: int | None, overlay: bool = False):
    """Play the episodes, encoding env 0's every frame into `path` as it goes (with the
    policy's view drawn in: `overlay`)."""
    # lazy: pulls gymnasium, which this module does not load
    from puffer_tui.engine.evaluation.recording import record_episodes

    print(f"recording {_episodes(evaluator.target)} to {path} (Ctrl-C stops and keeps the "
          "frames so far)", file=sys.stderr, flush=True)
    palette = palette_from_wire(evaluator.palette)
    if overlay:
        # lazy: pulls torch and Pillow, only for an overlay
        from puffer_tui.engine.evaluation.recording_overlay import overlay_frames

        return record_episodes(overlay_frames(evaluator, palette, scale=scale), path, fps, 1,
                               palette)
    return record_episodes(evaluator.recording_frames(), path, fps, scale, palette)


def play(evaluator, render: str | None = None, fps: float = 10.0, console=None) -> None:
    """Play until the target episodes end, animating env 0 in the terminal with --render
    ascii (on `console`)."""
    shown = _Renderer(palette_from_wire(evaluator.palette), fps, evaluator.target, console) \
        if render == "ascii" else None
    next_report = time.monotonic() + PROGRESS_EVERY
    frames = evaluator.frames(render=shown is not None)
    if shown is not None and getattr(evaluator, "policy", None) is not None:
        # the policy's view of each frame, drawn under it
        # lazy: pulls torch, only for a render
        from puffer_tui.engine.evaluation.policy_view import EvaluatorWatch

        frames = ({**m, "policy": v} if m is not None and v is not None else m
                  for m, v in EvaluatorWatch(evaluator).frames())
    try:
        for message in frames:
            if shown is not None:
                shown.show(message, evaluator.episodes, evaluator.done_returns)
            elif time.monotonic() >= next_report:  # a long score shows that it moves
                next_report = time.monotonic() + PROGRESS_EVERY
                print(progress_text(evaluator), file=sys.stderr, flush=True)
    finally:
        if shown is not None:
            shown.close()


def progress_text(evaluator) -> str:
    returns = evaluator.done_returns
    mean = f"{sum(returns) / len(returns):.3f}" if returns else "-"
    return (f"  {evaluator.episodes}/{evaluator.target} episodes, mean return so far {mean} "
            f"({evaluator.steps:,} steps)")


def play_in_window(evaluator, fps: float, screenshot: Path | None,
                   screenshot_after: int, overlay: bool = False) -> None:
    """One frame per window frame; the window closes when the target episodes end, or after
    the screenshot. `overlay`: each frame with the policy's view drawn in (as a recording's),
    the saliency of the action first; the g key turns it to V(s)'s, then off, then back."""
    # lazy: pulls gymnasium, textual, which this module does not load
    from puffer_tui.app.render_window import run_window
    from puffer_tui.app.widgets.env_render import frame_from_message

    if not evaluator.has_frames:
        raise ValueError(f"{evaluator.env_name} has no frame to render")
    title = f"puffer-tui eval: {evaluator.env_name}"
    palette = palette_from_wire(evaluator.palette)
    on_key = None
    if overlay:
        # lazy: pulls torch and Pillow, only for an overlay
        from puffer_tui.engine.evaluation.policy_view import EvaluatorWatch
        from puffer_tui.engine.evaluation.recording_overlay import overlay_frames
        from puffer_tui.engine.shared.protocol import Frame, FrameKind, next_saliency

        watch = EvaluatorWatch(evaluator, "action")
        images = overlay_frames(evaluator, palette, watch=watch)

        def next_frame():
            image = next(images, None)
            return None if image is None else Frame(0, image.shape[0], image.shape[1],
                                                   image.tobytes(), FrameKind.RGB)

        def saliency_title() -> str:
            return f"{title}  [g] saliency: {watch.watch.saliency or 'off'}"

        def on_key(char: str) -> str | None:
            if char != "g":
                return None
            watch.watch.follow(0, 0, next_saliency(watch.watch.saliency))
            return saliency_title()

        title = saliency_title()
    else:
        frames = evaluator.frames()

        def next_frame():
            message = next(frames, None)
            return None if message is None else frame_from_message(message)

    run_window(next_frame, palette, title=title, fps=max(1, round(fps)),
               screenshot=screenshot, screenshot_after=screenshot_after, on_key=on_key)


class _Renderer:
    """Env 0's frames, at most `fps` a second: animated in a terminal; written to a file or pipe as one line per finished episode, then the last
    frame, so a log shows progress as it happens and the summary starts on its own line."""

    def __init__(self, palette: dict, fps: float, target: int, console=None):
        from rich.console import Console
        from rich.live import Live

        self.palette, self.target = palette, target
        self.console = console or Console()
        self.interval = 1.0 / fps
        self.next_frame = time.monotonic()
        self.reported = 0
        self.grid = None
        self.live = None
        if self.console.is_terminal:
            self.live = Live(console=self.console, refresh_per_second=min(fps, 30),
                             transient=False)
            self.live.start()

    def _grid(self, message: dict | None):
        """The frame as the dashboard's env panel draws it: one glyph per tile, an image in
        half blocks fitted to the terminal (in characters by brightness when the output has
        no colours), or the env's text."""
        from rich.text import Text

        # lazy: pulls textual, which this module does not load
        from puffer_tui.app.widgets.env_render import frame_from_message, frame_kind, frame_text
        from puffer_tui.app.widgets.frame_drawing import FrameImage, text_lines

        frame = None if message is None else frame_from_message(message)
        if frame is None:
            return None
        kind = frame_kind(frame)
        if kind == FrameKind.RGB:
            rows = self.console.size.height - 2 if self.live is not None else RGB_ROWS
            return FrameImage(frame, self.console.size.width, max(rows, 4))
        if kind == FrameKind.TEXT:
            return Text("\n").join(text_lines(frame, frame.width, frame.height))
        return frame_text(frame, self.palette, frame.width, frame.height)

    def _status(self, episodes: int, returns: list) -> str:
        last = f"{returns[-1]:.2f}" if returns else "-"
        return f"episode {episodes}/{self.target}  last return {last}"

    def show(self, message: dict | None, episodes: int, returns: list) -> None:
        from rich.console import Group
        from rich.text import Text

        # lazy: pulls textual, which this module does not load
        from puffer_tui.app.widgets.policy_strip import with_strip

        self.grid = self._grid(message)
        if self.live is not None:  # animated: the policy's view under the frame
            self.grid = with_strip(self.grid, message, self.console.size.width)
        if self.live is not None and self.grid is not None:
            self.live.update(Group(self.grid, Text(self._status(episodes, returns))))
        elif self.live is None:
            for k in range(self.reported, episodes):
                self.console.print(f"episode {k + 1}/{self.target}: return {returns[k]:.2f}",
                                   highlight=False)
            self.reported = episodes
        delay = self.next_frame - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        self.next_frame = max(self.next_frame, time.monotonic()) + self.interval

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
        elif self.grid is not None:
            self.console.print("last frame:")
            self.console.print(self.grid)
        self.console.print()  # the summary begins on a line of its own
