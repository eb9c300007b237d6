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
    p.add_argument("--render", choices=("ascii",), default=None,
                   help="animate env 0 in the terminal with the env's palette")
    p.add_argument("--fps", type=float, default=10.0, help="frames per second with --render")
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
    try:
        path = resolve_target(args.target, args.runs_dir)
        load_checkpoint(path)  # a clear error naming the file if it is corrupt
        from puffer_tui.engine.policy import load_policy

        policy, config = load_policy(path)
    except (CheckpointError, ValueError) as e:
        return _fail(str(e))
    num_envs = args.num_envs or (1 if args.render else 64)
    result = play(policy, config, args.episodes, num_envs, args.seed, args.deterministic,
                  args.render, args.fps)
    result["checkpoint"] = str(path)
    if args.json:
        import json

        print(json.dumps(result, indent=2))
    else:
        score = "-" if result["score"] is None else f"{result['score']:.3f}"
        print(f"{config.env_name}: {result['episodes']} episodes from {path.name}: "
              f"score {score}, return {result['episode_return']:.3f}, "
              f"length {result['episode_length']:.1f}")
    return 0


def play(policy, config, episodes: int, num_envs: int, seed: int, deterministic: bool,
         render: str | None = None, fps: float = 10.0) -> dict:
    """Play until `episodes` episodes end; mean score (from the env's log), return, length."""
    import numpy as np

    from puffer_tui.envs import make

    env = make(config.env_name, num_envs=num_envs, seed=seed, **config.env)
    obs, _ = env.reset(seed)
    rows = env.num_agents
    returns, lengths = np.zeros(rows), np.zeros(rows, dtype=np.int64)
    starts = np.ones(rows, dtype=bool)
    done_returns, done_lengths, score_sum, score_n = [], [], 0.0, 0.0
    state = None
    live = _Renderer(env, fps) if render else None
    try:
        while len(done_returns) < episodes:
            actions, state = policy.act(obs, state, deterministic=deterministic, starts=starts)
            obs, rewards, terminals, truncations, infos = env.step(actions)
            returns += rewards
            lengths += 1
            starts = np.logical_or(terminals, truncations)
            for i in np.flatnonzero(starts):
                done_returns.append(float(returns[i]))
                done_lengths.append(int(lengths[i]))
                returns[i], lengths[i] = 0.0, 0
            for info in infos:
                score_sum, score_n = _add_score(info, score_sum, score_n)
            if live is not None:
                live.show(len(done_returns), episodes, done_returns)
        score_sum, score_n = _add_score(env.log(), score_sum, score_n)
    finally:
        if live is not None:
            live.close()
        env.close()
    return {
        "env": config.env_name,
        "episodes": len(done_returns),
        "score": score_sum / score_n if score_n else None,
        "episode_return": float(np.mean(done_returns)),
        "episode_length": float(np.mean(done_lengths)),
    }


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
