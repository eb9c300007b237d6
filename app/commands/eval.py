"""`puffer-tui eval RUN|CHECKPOINT`: play a trained policy and report its score.

    puffer-tui eval runs/squared-20261122-001401              # latest checkpoint of a run
    puffer-tui eval squared-20261122-001401 --episodes 500    # a run name under the runs root
    puffer-tui eval runs/.../checkpoints/step-...pt --render ascii --fps 10
"""

from __future__ import annotations

import sys
import time
from pathlib import Path


def add_parser(sub, name, help_text):
    p = sub.add_parser(name, help=help_text, description=help_text)
    p.add_argument("target", metavar="RUN|CHECKPOINT",
                   help="a run directory or name (its latest checkpoint), or a checkpoint file")
    p.add_argument("--episodes", type=int, default=100, help="episodes to play (default 100)")
    p.add_argument("--num-envs", type=int, default=None,
                   help="envs played at once (default 64; 1 with --render)")
    p.add_argument("--render", choices=("ascii", "window"), default=None,
                   help="animate env 0 with the env's palette: in the terminal (ascii) or in a "
                        "raylib window (window; needs a display, e.g. xvfb-run)")
    p.add_argument("--fps", type=float, default=10.0, help="frames per second with --render")
    p.add_argument("--screenshot", metavar="PATH", type=Path,
                   help="with --render window: save a PNG after --screenshot-after frames, exit")
    p.add_argument("--screenshot-after", metavar="N", type=int, default=30,
                   help="frames drawn before the screenshot (default 30)")
    p.add_argument("--seed", type=int, default=12345, help="env seed (default 12345)")
    p.add_argument("--deterministic", action="store_true",
                   help="take the most likely action instead of sampling")
    p.add_argument("--runs-dir", metavar="D", help="where run names are looked up")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=run)


def _fail(message: str) -> int:
    print(f"puffer-tui eval: error: {message}", file=sys.stderr)
    return 2


def resolve_target(target: str, runs_dir: str | None) -> Path:
    """The checkpoint file meant by a file path, a run directory, or a run name."""
    from puffer_tui.engine.checkpoint import CheckpointError, resolve_checkpoint
    from puffer_tui.engine.run_dir import find_run

    path = Path(target)
    if path.exists():
        return resolve_checkpoint(path)
    try:
        return resolve_checkpoint(find_run(target, runs_dir))
    except ValueError as e:
        raise CheckpointError(str(e)) from None


def run(args) -> int:
    from puffer_tui.engine.checkpoint import CheckpointError, load_checkpoint

    if args.episodes < 1:
        return _fail(f"--episodes must be >= 1, got {args.episodes}")
    if args.num_envs is not None and args.num_envs < 1:
        return _fail(f"--num-envs must be >= 1, got {args.num_envs}")
    if not 0 < args.fps <= 1000:
        return _fail(f"--fps must be in (0, 1000], got {args.fps}")
    if args.screenshot is not None and args.render != "window":
        return _fail("--screenshot needs --render window")
    if args.screenshot_after < 1:
        return _fail(f"--screenshot-after must be >= 1, got {args.screenshot_after}")
    try:
        path = resolve_target(args.target, args.runs_dir)
        load_checkpoint(path)  # a clear error naming the file if it is corrupt
        from puffer_tui.engine.policy import load_policy

        policy, config = load_policy(path)
    except (CheckpointError, ValueError) as e:
        return _fail(str(e))
    num_envs = args.num_envs or (1 if args.render else 64)
    player = Player(policy, config, num_envs, args.seed, args.deterministic)
    try:
        if args.render == "window":
            from puffer_tui.app.render_window import WindowUnavailableError

            try:
                play_in_window(player, args.episodes, args.fps, args.screenshot,
                               args.screenshot_after)
            except (WindowUnavailableError, ValueError) as e:
                return _fail(str(e))
        else:
            play(player, args.episodes, args.render, args.fps)
        result = player.result()
    finally:
        player.close()
    result["checkpoint"] = str(path)
    if args.json:
        import json

        print(json.dumps(result, indent=2))
    else:
        def shown(key, fmt):
            return "-" if result[key] is None else format(result[key], fmt)

        print(f"{config.env_name}: {result['episodes']} episodes from {path.name}: "
              f"score {shown('score', '.3f')}, return {shown('episode_return', '.3f')}, "
              f"length {shown('episode_length', '.1f')}")
        if args.screenshot is not None:
            print(f"screenshot saved to {args.screenshot}")
    return 0


class Player:
    """A policy playing a fresh env, tallying finished episodes (mean score from the env log)."""

    def __init__(self, policy, config, num_envs: int, seed: int, deterministic: bool):
        import numpy as np

        from puffer_tui.envs import make

        self.policy, self.config, self.deterministic = policy, config, deterministic
        self.env = make(config.env_name, num_envs=num_envs, seed=seed, **config.env)
        self.obs, _ = self.env.reset(seed)
        rows = self.env.num_agents
        self.returns, self.lengths = np.zeros(rows), np.zeros(rows, dtype=np.int64)
        self.starts = np.ones(rows, dtype=bool)
        self.done_returns: list[float] = []
        self.done_lengths: list[int] = []
        self.score_sum = self.score_n = 0.0
        self.state = None

    @property
    def episodes(self) -> int:
        return len(self.done_returns)

    def step(self) -> None:
        import numpy as np

        actions, self.state = self.policy.act(
            self.obs, self.state, deterministic=self.deterministic, starts=self.starts
        )
        self.obs, rewards, terminals, truncations, infos = self.env.step(actions)
        self.returns += rewards
        self.lengths += 1
        self.starts = np.logical_or(terminals, truncations)
        for i in np.flatnonzero(self.starts):
            self.done_returns.append(float(self.returns[i]))
            self.done_lengths.append(int(self.lengths[i]))
            self.returns[i], self.lengths[i] = 0.0, 0
        for info in infos:
            self.score_sum, self.score_n = _add_score(info, self.score_sum, self.score_n)

    def result(self) -> dict:
        import numpy as np

        self.score_sum, self.score_n = _add_score(self.env.log(), self.score_sum, self.score_n)
        ended = bool(self.done_returns)
        return {
            "env": self.config.env_name,
            "episodes": self.episodes,
            "score": self.score_sum / self.score_n if self.score_n else None,
            "episode_return": float(np.mean(self.done_returns)) if ended else None,
            "episode_length": float(np.mean(self.done_lengths)) if ended else None,
        }

    def close(self) -> None:
        self.env.close()


def play(player: Player, episodes: int, render: str | None = None, fps: float = 10.0) -> None:
    """Step until `episodes` episodes end, animating env 0 in the terminal with --render ascii."""
    live = _Renderer(player.env, fps) if render == "ascii" else None
    try:
        while player.episodes < episodes:
            player.step()
            if live is not None:
                live.show(player.episodes, episodes, player.done_returns)
    finally:
        if live is not None:
            live.close()


def play_in_window(player: Player, episodes: int, fps: float, screenshot: Path | None,
                   screenshot_after: int) -> None:
    """Step one frame per window frame; the window closes when `episodes` episodes end, or
    after the screenshot."""
    from puffer_tui.app.render_window import run_window

    if player.env.frame_shape is None:
        raise ValueError(f"{player.config.env_name} has no frame to render")

    def next_frame():
        if player.episodes >= episodes:
            return None
        frame = player.env.frame(0)
        player.step()
        return frame

    run_window(next_frame, player.env.palette, title=f"puffer-tui eval: {player.config.env_name}",
               fps=max(1, round(fps)), screenshot=screenshot, screenshot_after=screenshot_after)


def _add_score(info: dict, total: float, count: float) -> tuple[float, float]:
    if info and "score" in info:
        n = float(info.get("n", 1.0))
        return total + float(info["score"]) * n, count + n
    return total, count


class _Renderer:
    """Env 0's tile grid drawn with its palette in a rich Live display, at most `fps` a second."""

    def __init__(self, env, fps: float):
        from rich.live import Live

        self.env = env
        self.interval = 1.0 / fps
        self.next_frame = time.monotonic()
        self.live = Live(refresh_per_second=min(fps, 30), transient=False)
        self.live.start()

    def show(self, episodes: int, target: int, returns: list) -> None:
        from rich.console import Group
        from rich.text import Text

        tiles = self.env.frame(0)
        if tiles is None:
            return
        grid = Text()
        palette = self.env.palette
        for row in tiles:
            for tile in row:
                glyph, colour = palette.get(int(tile), ("?", "red"))
                grid.append(glyph, style=colour)
            grid.append("\n")
        last = f"{returns[-1]:.2f}" if returns else "-"
        self.live.update(Group(grid, Text(f"episode {episodes}/{target}  last return {last}")))
        delay = self.next_frame - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        self.next_frame = max(self.next_frame, time.monotonic()) + self.interval

    def close(self) -> None:
        self.live.stop()
