"""Evaluation: a trained policy playing fresh envs, counting exactly the episodes asked for.

`puffer-tui eval` (app/commands/eval.py) parses its flags, calls `load_evaluator`, and renders
what `Evaluator.frames()` yields: env 0's frames as the protocol's `frame` messages, with the
palette in its wire form, the same inputs the dashboard's env panel draws from; with
`--record`, it encodes `Evaluator.recording_frames()` (the env's own frames) through
engine/evaluation/recording.py.

Each env is its own one-env object (seeded from one SeedSequence), so its log, and thus the
score of the episodes it finished, can be read on its own. The target is shared out between
the agent rows before anything plays (row i counts its first `quota[i]` episodes, the quotas
differing by at most one), so the episodes counted do not depend on how long they last:
counting whichever ended first would favour short episodes (a Hopper policy read 757 that
way over 10 of 64 envs, 2,603 over one episode of each of 10). The policy's sampling is seeded too, so a seed reproduces
the whole evaluation: the Evaluator keeps its own torch random stream and swaps it in only
around each action, so the process's generators (a training run's) are left as they were.
`restart(seed)` plays afresh on the same envs (the engine's evaluation during training builds
them once; engine/evaluation/periodic_eval.py).

Tested in: tests/engine/evaluation/test_eval_quota.py,
tests/engine/evaluation/test_periodic_eval.py, tests/engine/evaluation/test_recording.py,
tests/app/test_cli_eval.py
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from puffer_tui.engine.native.frames import RGB, TEXT, TILES, frame_kind, observation_frame
from puffer_tui.engine.shared.checkpoint import CheckpointError, load_checkpoint, resolve_checkpoint
from puffer_tui.engine.shared.protocol import VIEW_ENV, VIEW_OBS, frame_message, palette_to_wire
from puffer_tui.engine.shared.run_dir import find_run
from puffer_tui.envs import make

# An episode this long has not ended is taken never to end: the env has no time limit and the
# policy never reaches what ends an episode (gym:CliffWalking-v1 walking in a loop), so the
# evaluation stops there and says so instead of playing forever. 100,000 steps with one env;
# with many, fewer (the time is the envs' steps), never under EPISODE_STEPS_FLOOR, above any
# benchmark's limit (Atari's 108k frames are 27k agent steps).
EPISODE_STEPS_CAP = 100_000
EPISODE_STEPS_FLOOR = 30_000


def episode_steps_cap(rows: int) -> int:
    """How long an episode may run in an evaluation of `rows` agent rows before it stops."""
    return max(EPISODE_STEPS_FLOOR, EPISODE_STEPS_CAP // max(rows, 1))


class EvaluationError(ValueError):
    """A target that names no loadable checkpoint; the message names the file or run."""


def resolve_target(target: str, runs_dir: str | None) -> Path:
    """The checkpoint file meant by a file path, a run directory, or a run name."""
    path = Path(target)
    try:
        if path.exists():
            return resolve_checkpoint(path)
        return resolve_checkpoint(find_run(target, runs_dir))
    except (CheckpointError, ValueError) as e:
        raise EvaluationError(str(e)) from None


def load_evaluator(target: str, runs_dir: str | None, num_envs: int, seed: int,
                   deterministic: bool, episodes: int) -> Evaluator:
    """The policy of a run's latest checkpoint (or a checkpoint file) ready to play."""
    # lazy: pulls torch, the policy, which this module does not load
    from puffer_tui.engine.algo.policy import load_policy

    path = resolve_target(target, runs_dir)
    try:
        load_checkpoint(path)  # a clear error naming the file if it is corrupt
        policy, config = load_policy(path)
    except (CheckpointError, ValueError) as e:
        raise EvaluationError(str(e)) from None
    use_threads(config)
    return Evaluator(policy, config, path, num_envs, seed, deterministic, episodes)


def use_threads(config) -> int:
    """Torch's and BLAS's threads as training sets them (train.torch_threads, else the cores
    free of other load): torch's default, one per core, waits on descheduled threads on a
    busy box, and then plays slower than one thread does."""
    # lazy: pulls torch, which this module does not load
    from puffer_tui.engine.algo.trainer_setup import auto_threads, set_compute_threads

    # the envs play in this process: no worker holds a core, as in the learn phase
    threads = config.train.torch_threads or auto_threads(config, phase="learn")
    set_compute_threads(threads)
    return threads


class Evaluator:
    def __init__(self, policy, config, checkpoint: Path | None, num_envs: int, seed: int,
                 deterministic: bool, episodes: int):
        self.policy, self.config, self.deterministic = policy, config, deterministic
        self.checkpoint = checkpoint
        self.target = episodes
        self.envs = []
        try:
            for s in env_seeds(seed, num_envs):
                self.envs.append(make(config.env_name, num_envs=1, seed=s, evaluation=True,
                                      **config.env))
        except BaseException:
            self.close()
            raise
        bounds = np.cumsum([0] + [env.num_agents for env in self.envs])
        self.rows = list(zip(bounds[:-1], bounds[1:]))
        self.view = VIEW_ENV  # what frames show; VIEW_OBS: the observation as an image
        self.restart(seed)

    def restart(self, seed: int, episodes: int | None = None,
                deterministic: bool | None = None) -> None:
        """Play afresh: every env reset with the seeds of `seed`, the tally emptied, the
        policy's random stream seeded from `seed` (and the target or action choice changed)."""
        if episodes is not None:
            self.target = episodes
        if deterministic is not None:
            self.deterministic = deterministic
        seeds = env_seeds(seed, len(self.envs))
        self.obs = np.concatenate([env.reset(s)[0] for env, s in zip(self.envs, seeds)])
        agents = int(self.rows[-1][1])
        self.returns = np.zeros(agents)
        self.lengths = np.zeros(agents, dtype=np.int64)
        self.starts = np.ones(agents, dtype=bool)
        self.done_returns: list[float] = []
        self.done_lengths: list[int] = []
        self.quota = np.full(agents, self.target // agents, dtype=np.int64)
        self.quota[: self.target % agents] += 1
        self.counted = np.zeros(agents, dtype=np.int64)
        self.score_sum = self.score_n = 0.0
        self.state = None
        self.steps = 0
        self.endless = 0  # the length of an episode past episode_steps_cap() (0: none)
        self._seed = seed
        self._rng = None  # the policy's torch stream(s), seeded from `seed` on the first act

    @contextmanager
    def _own_rng(self):
        """torch's generators (CPU, and the policy's CUDA device) set to this evaluator's
        stream for the block, and put back as they were after it."""
        import torch

        device = next(self.policy.parameters()).device
        cuda = [device.index if device.index is not None else torch.cuda.current_device()] \
            if device.type == "cuda" else []
        with torch.random.fork_rng(devices=cuda):
            if self._rng is None:
                torch.default_generator.manual_seed(self._seed)
                for index in cuda:
                    torch.cuda.default_generators[index].manual_seed(self._seed)
            else:
                torch.set_rng_state(self._rng[0])
                for index, state in zip(cuda, self._rng[1]):
                    torch.cuda.set_rng_state(state, index)
            yield
            self._rng = (torch.get_rng_state(), [torch.cuda.get_rng_state(i) for i in cuda])

    @property
    def env_name(self) -> str:
        return self.config.env_name

    @property
    def has_frames(self) -> bool:
        """Whether env 0 draws frames (tiles, an image or text: what --render shows)."""
        return self._frame() is not None

    def frame(self):
        """Env 0's frame in `self.view`: "env" (its own drawing) or "obs" (its observation)."""
        return self._frame()

    def _frame(self):
        if self.view == VIEW_OBS:
            return observation_frame(self.envs[0], 0)
        return self.envs[0].frame(0)

    @property
    def palette(self) -> dict:
        """Env 0's palette in the wire form of the engine's hello."""
        return palette_to_wire(self.envs[0].palette)

    def frame_message(self) -> dict | None:
        """Env 0's current frame as a protocol `frame` message (None: the env draws none)."""
        frame = self._frame()
        return None if frame is None else frame_message(0, frame, self.view)

    @property
    def episodes(self) -> int:
        return len(self.done_returns)

    @property
    def finished(self) -> bool:
        """The target episodes ended, or one episode ran past episode_steps_cap()."""
        return self.episodes >= self.target or self.endless > 0

    def frames(self, render: bool = True) -> Iterator[dict | None]:
        """Play until the target episodes end, yielding env 0's frame (None when not
        `render`) at the start and after every step; Ctrl-C leaves the tally so far."""
        yield self.frame_message() if render else None
        while not self.finished:
            self.step()
            yield self.frame_message() if render else None

    def recording_frames(self) -> Iterator:
        """Play until the target episodes end, yielding env 0's frame in `self.view` as the
        env returns it (a tile grid, an image or text; copied) at the start and after every
        step: what engine/evaluation/recording.py encodes. Play one env to record every episode."""
        yield copied_frame(self._frame())
        while not self.finished:
            self.step()
            yield copied_frame(self._frame())

    @property
    def frame_description(self) -> str:
        """What env 0 draws, for messages: "tiles", "rgb images", or text with its mode."""
        kind = frame_kind(self._frame())
        if kind == TEXT:
            mode = getattr(self.envs[0], "render_mode", None)
            return "text frames" + (f" (render_mode {mode!r})" if mode else "")
        return {TILES: "tile frames", RGB: "rgb frames"}.get(kind, "no frames")

    def step(self) -> None:
        with self._own_rng():
            actions, self.state = self.policy.act(
                self.obs, self.state, deterministic=self.deterministic, starts=self.starts)
        self.steps += 1
        observations, stepped = [], []
        for env, (a, b) in zip(self.envs, self.rows):
            obs, rewards, terminals, truncations, infos = env.step(actions[a:b])
            observations.append(obs)
            stepped.append((rewards, terminals, truncations))
            self.returns[a:b] += rewards
            self.lengths[a:b] += 1
            ended = np.logical_or(terminals, truncations)
            self.starts[a:b] = ended
            logs = list(infos) + ([env.log()] if ended.any() else [])
            self._count(a + np.flatnonzero(ended), logs)
        self.obs = np.concatenate(observations)
        longest = int(self.lengths.max())
        if longest >= episode_steps_cap(len(self.lengths)):
            self.endless = longest
        # the step's actions and outcomes, for a watcher of the policy (policy_view.py)
        self.last_step = (actions, *(np.concatenate(parts) for parts in zip(*stepped)))

    def _count(self, rows: np.ndarray, logs: list[dict]) -> None:
        """Tally the episodes that just ended in one env, each row up to its quota."""
        counted = rows[self.counted[rows] < self.quota[rows]]
        wanted = len(counted)
        for i in counted:
            self.done_returns.append(float(self.returns[i]))
            self.done_lengths.append(int(self.lengths[i]))
        self.counted[counted] += 1
        self.returns[rows], self.lengths[rows] = 0.0, 0
        total = sum(float(log["score"]) * float(log.get("n", 1)) for log in logs if "score" in log)
        n = sum(float(log.get("n", 1)) for log in logs if "score" in log)
        if wanted and n:
            counted = min(float(wanted), n)  # an env with several agents: their mean score
            self.score_sum += total / n * counted
            self.score_n += counted

    def result(self) -> dict:
        """The score so far: plain data, as `eval --json` prints it."""
        ended = bool(self.done_returns)
        return {
            "env": self.config.env_name,
            "episodes": self.episodes,
            "score": self.score_sum / self.score_n if self.score_n else None,
            "episode_return": float(np.mean(self.done_returns)) if ended else None,
            "episode_length": float(np.mean(self.done_lengths)) if ended else None,
            "checkpoint": str(self.checkpoint) if self.checkpoint is not None else None,
            "endless": self.endless_message(),
        }

    def endless_message(self) -> str | None:
        """Why the evaluation stopped short of its episodes, or None."""
        if not self.endless:
            return None
        fix = ("train with one, e.g. --env.max-episode-steps 1000"
               if self.config.env_name.startswith("gym:") else "give the env one")
        return (f"an episode ran {self.endless:,} steps without ending, so the evaluation "
                f"stopped: the env has no time limit and the policy never reaches an end; "
                f"{fix}")

    def close(self) -> None:
        for env in self.envs:
            env.close()


def env_seeds(seed: int, num_envs: int) -> list[int]:
    """One seed per env, all drawn from `seed`."""
    return [int(s) for s in np.random.SeedSequence(seed).generate_state(num_envs)]


def copied_frame(frame):
    """A frame the env cannot overwrite later (text is immutable already)."""
    return frame if frame is None or isinstance(frame, str) else np.array(frame)
