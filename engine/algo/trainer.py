"""The PPO trainer: collect a batch from the vec env, then one PPO update; repeat.

    trainer = Trainer(load_config("squared"))
    while not trainer.done:
        row = trainer.run_epoch()          # epoch, SPS...; losses, timing, env groups

The engine process passes `safe_point` (applies queued commands: pause, set, stop...) to run
between env steps and between minibatches; time blocked there is not training time.

Data flow of one step: recv() -> policy forward (inference mode) -> store in the
[segments, horizon] buffer (engine/algo/rollout.py) -> send(). Then engine/algo/ppo.py runs PPO.

- Truncation is not termination. With same-step autoreset the observation that ended a
  truncated episode would be gone, so envs keep it in the vec env's `final_observations`;
  the trainer evaluates it (one batched forward over the truncated rows, from each agent's
  LSTM state before its reset) and the advantage kernel bootstraps the truncated step with
  that value and cuts the GAE trace there (a terminal bootstraps 0); see
  engine/native/advantage.h.
- Rows whose mask is false (dead or waiting agents) are stored with weight 0 and add nothing
  to any loss term or to the advantage normalisation.
- The LSTM state is per agent row, zeroed where an episode starts; the state at the start of
  each segment is stored so training replays the sequences from the state they had.
- A checkpoint (state_dict) holds the policy, optimizer state, counters, schedule, RNG streams,
  config, the envs' state with the step result in flight, and the per-agent LSTM state
  (engine/algo/checkpoint_state.py), and the running statistics of observation normalization and
  reward scaling (engine/algo/normalization.py): a serial CPU run of native envs resumes bit for bit.
  What cannot be exact (Gymnasium envs, pools, CUDA) is listed in docs/exact-resume.md.
- Normalization (train.normalize_observations / normalize_rewards) happens here, in the engine
  process, on every env's rows as they arrive: the buffer stores what the policy saw. Each
  rank updates its statistics with its own rows as it steps; at the end of each collection the
  ranks merge theirs (engine/algo/normalization.py: sync), so an epoch ends with the same
  statistics on every rank. The policy's frozen copy (policy.obs_norm, applied by act() in
  evaluation and recordings) is refreshed then too.
"""

from __future__ import annotations

import contextlib
import copy
import time
import warnings
from collections.abc import Callable

import numpy as np
import torch

from puffer_tui.engine.algo import checkpoint_state, cpu_load
from puffer_tui.engine.algo.adaptive_lr import AdaptiveRate
from puffer_tui.engine.algo.allocator import keep_freed_memory
from puffer_tui.engine.algo.distributed import World, check_together, reduce_epoch
from puffer_tui.engine.algo.episode_log import EpisodeLog
from puffer_tui.engine.algo.epoch_cut import EpochCut
from puffer_tui.engine.algo.minibatch_loss import NumpyLoss, minibatch_gradients
from puffer_tui.engine.algo.normalization import Normalization
from puffer_tui.engine.algo.optimizers import make_optimizer
from puffer_tui.engine.algo.policy import make_policy
from puffer_tui.engine.algo.ppo import PPO
from puffer_tui.engine.algo.precision import CollectionCasts, autocast
from puffer_tui.engine.algo.rollout import RolloutBuffer, is_identity
from puffer_tui.engine.algo.schedule import START, budget_moved, learning_rate, resumed_anchor
from puffer_tui.engine.algo.score_window import ScoreWindow
from puffer_tui.engine.algo.time_limit_horizon import choose_discount
from puffer_tui.engine.algo.timing import Timing
from puffer_tui.engine.algo.trainer_setup import (
    auto_threads,
    make_vecenv,
    resolve_device,
    resolve_precision,
    set_compute_threads,
)
from puffer_tui.engine.shared import health
from puffer_tui.engine.shared.config import (
    Config,
    ConfigError,
    apply,
    from_dict,
)
from puffer_tui.engine.shared.protocol import (
    ENV,
    LOSS_KEYS,
    LOSSES,
    WORKERS,
    LiveChange,
    check_live,
)
from puffer_tui.envs import creator, env_class
from puffer_tui.envs.registry import preset_label, stepping_note

__all__ = ["Trainer", "auto_threads", "make_vecenv", "resolve_device"]

# When a live field's new value takes effect.
_APPLIES = {"update_epochs": "from the next update",
            "total_timesteps": "now: the run's end and its lr schedule move together"}
_APPLIES_DEFAULT = "from the next minibatch"
_PROGRESS_INTERVAL = 0.25  # seconds between progress snapshots while collecting
RECHOOSE_SECONDS = 5.0  # automatic torch threads: the load averaged over at least this long


class Trainer:
    def __init__(self, config: Config, vecenv=None, safe_point=None, world: World | None = None):
        self.config = config
        # learner ranks (engine/algo/distributed.py): one process unless started by torchrun
        self.world = world or World()
        # called with each collection step's rows while a viewer watches the policy (else
        # None: nothing is copied); set by engine/runtime/frame_source.py
        self.step_watch: Callable | None = None
        # train.gamma_from_time_limit: gamma decided by a probe env, before anything is
        # built from it (engine/algo/time_limit_horizon.py); the note goes to the events
        self.horizon_note = choose_discount(config, creator(config.env_name, **config.env)) \
            if config.train.gamma_from_time_limit else ""
        # The config as built (the run's config.toml): a resume tells the user's new values
        # for live fields from the checkpoint's by comparing with this (load_state_dict).
        self._built_config = copy.deepcopy(config.as_dict())
        self.schedule = START  # anchor of the lr / beta schedules (engine/algo/schedule.py)
        self.adaptive_lr = AdaptiveRate()  # train.adaptive_lr_kl's scale on the scheduled rate
        train = config.train
        self.device = resolve_device(train.device)
        # (collection, learning): the env workers' cores are the learner's while they wait
        self._threads = (train.torch_threads or auto_threads(config),
                         train.torch_threads or auto_threads(config, phase="learn"))
        set_compute_threads(self._threads[0])
        # automatic threads are chosen again between epochs from the load seen meanwhile: a
        # run started beside another saw an idle machine and took every core. Not with Ray:
        # its actors are not our children, so their env stepping would read as others' load
        self._load_watch = (cpu_load.LoadWatch()
                            if not train.torch_threads and config.vec.backend != "ray" else None)
        keep_freed_memory()  # no page faults for each minibatch's tensors (engine/algo/allocator.py)
        self._seed = self.world.seed(train.seed)  # differs per rank
        checkpoint_state.seed_all(self._seed)

        if vecenv is None:  # make_vecenv(config) is what tests/fault_patches wraps
            vecenv = make_vecenv(config) if self._seed == train.seed else \
                make_vecenv(config, self._seed)
        self.vecenv = vecenv
        try:
            self._build(config)
        except BaseException:
            self.vecenv.close()
            raise
        self.safe_point = safe_point
        # cut_short() -> True at a safe point: end this epoch now (a stop that cannot wait)
        self.cut_short: Callable[[], bool] | None = None
        self.global_step = 0
        self.epoch = 0
        self.uptime = 0.0
        self.progress = {"global_step": 0, "epoch": 0, "sps": 0.0, "uptime": 0.0, "metrics": {}}
        self.scores = ScoreWindow()  # recent epochs' episode scores (train.stop_at_score)
        self.finish_reason = ""  # why the run ended before its budget (train.stop_at_score)
        self._closed = False
        self.vecenv.async_reset(self._seed)

    def _build(self, config: Config) -> None:
        train, vecenv = config.train, self.vecenv
        obs_space = vecenv.single_observation_space
        act_space = vecenv.single_action_space
        self.num_agents = vecenv.num_agents
        self.num_envs = getattr(vecenv, "num_envs", config.vec.num_envs)
        batch = train.batch_size or self.num_agents * train.horizon
        if batch % train.horizon:
            raise ConfigError(f"train.batch_size ({batch}) must be a multiple of train.horizon "
                              f"({train.horizon})")
        if batch < self.num_agents * train.horizon:
            raise ConfigError(
                f"train.batch_size ({batch}) is smaller than num_agents * horizon "
                f"({self.num_agents} * {train.horizon}); every agent needs a segment "
                f"(0 picks exactly that)")
        if train.minibatch_size > batch:
            raise ConfigError(f"train.minibatch_size ({train.minibatch_size}) exceeds the batch "
                              f"({batch} = num_agents * horizon unless train.batch_size is set)")
        self.batch_size = batch

        self.policy = make_policy(obs_space, act_space, train).to(self.device)
        self.optimizer = make_optimizer(self.policy, train, self.device)
        step_fn, sequence_fn = self.policy.step, self.policy.forward_sequence
        # train.compile: the whole minibatch loss is compiled, the policy's forward
        # with it; under DDP (whose wrapper the loss would have to trace) the policy alone
        compile_loss = bool(train.compile) and not self.world.enabled
        if train.compile and not compile_loss:
            step_fn = torch.compile(step_fn)
            sequence_fn = torch.compile(sequence_fn)
        sequence_fn = self.world.wrap(self.policy, sequence_fn)  # DDP averages the gradients
        self.precision = resolve_precision(train.precision, self.device)  # "auto" decided
        gradients = minibatch_gradients(self.policy, self.optimizer, sequence_fn,
                                        self.precision, compile_loss, train.numpy_math)
        self.ppo = PPO(self.optimizer, gradients)
        # a plain MLP on the CPU collects in numpy too, without Modules (numpy_mlp.py)
        self._numpy_mlp = gradients.mlp if isinstance(gradients, NumpyLoss) else None
        if self._numpy_mlp is not None:
            mlp = self._numpy_mlp
            step_fn = lambda obs, state, starts: (*mlp.step(obs), None)  # noqa: E731
        self._step_fn = step_fn

        # running statistics (engine/algo/normalization.py); None where not asked for
        self.normalization = Normalization(self.policy.obs_norm, self.num_agents, train)
        self.obs_rms = self.normalization.observations  # each None where not asked for
        self.reward_scaler = self.normalization.rewards
        obs_dtype = np.float32 if self.obs_rms is not None else obs_space.dtype

        cuda = self.device.type == "cuda"
        self.buffer = RolloutBuffer(
            batch // train.horizon, train.horizon, self.num_agents, obs_space.shape,
            obs_dtype, self.policy.actor.action_shape, self.policy.actor.action_dtype,
            state_size=self.policy.hidden_size if self.policy.recurrent else 0,
            device=self.device if cuda else None,  # on the GPU: no per-step copy back
            exploration=self.policy.actor.make_noise(self.num_agents, train.sde_sample_freq,
                                                     self.device))
        # Per-agent recurrent state, on the device; zeroed where an episode starts.
        self.lstm_state = self.policy.initial_state(self.num_agents, self.device)
        # Observations reach the GPU through a pinned staging buffer and a non-blocking copy.
        self._staging = (torch.empty((self.num_agents, *obs_space.shape),
                                     dtype=self.buffer.observations.dtype, pin_memory=True)
                         if cuda else None)
        self.timing = Timing(self.device)

        cls = env_class(config.env_name)
        self.preset = preset_label(config.env_name)  # where the defaults came from
        self.stepping = stepping_note(config.env_name, dict(config.env))  # a C port's line
        self.palette = dict(cls.palette)
        self.frame_shape = cls.layout(cls.resolve(dict(config.env))).frame_shape

    # -- properties of the API ----------------------------------------------------------------

    @property
    def torch_threads(self) -> tuple[int, int]:
        """(collection, learning): the torch threads of each phase (train.torch_threads, or
        what auto_threads chose)."""
        return self._threads

    @property
    def done(self) -> bool:
        if self.global_step >= self.config.train.total_timesteps:
            return True
        self.finish_reason = self.scores.reached(self.config.train.stop_at_score)
        return bool(self.finish_reason)

    @property
    def worker_pids(self) -> list[int]:
        return list(getattr(self.vecenv, "worker_pids", []))

    def frame(self, env_index: int, view: str = "env"):
        """Env `env_index`'s frame (tiles, an RGB image or text; engine/native/frames.py), or
        with view "obs" its observation drawn as an image."""
        if not 0 <= env_index < self.num_envs:
            raise IndexError(f"env index {env_index} is out of range [0, {self.num_envs})")
        return self.vecenv.frame(env_index) if view == "env" else self.vecenv.frame(env_index, view)

    # -- one epoch ----------------------------------------------------------------------------

    def collection_casts(self) -> CollectionCasts:
        """What a collection holds open: its forward passes in the update's precision."""
        return CollectionCasts(list(self.policy.parameters()), self.device,
                               self.precision == "bfloat16",
                               lambda: autocast(self.precision, self.device))

    @property
    def numpy_math(self) -> bool:
        """Whether the policy's arithmetic runs in numpy (engine/algo/numpy_mlp.py) rather
        than through torch (what a benchmark reports beside its figures)."""
        return self._numpy_mlp is not None

    def run_epoch(self) -> dict:
        """Collect one batch and run one PPO update; returns the epoch's metrics row."""
        if self._closed:
            raise RuntimeError("run_epoch() on a closed trainer")
        self.timing.reset()
        self._rechoose_threads()
        self._blocked = 0.0
        self._epoch_start = time.perf_counter()
        self._epoch_start_step = self.global_step
        self._uptime_start = self.uptime
        log = EpisodeLog()
        try:
            self._collect(log)
        except EpochCut:  # the partial batch is dropped; the envs' episodes go on
            dropped, self.global_step = self.global_step - self._epoch_start_step, \
                self._epoch_start_step
            self.progress = {**self.progress, "global_step": self.global_step}  # as counted
            raise EpochCut(f"the epoch's partial collection ({dropped:,} of "
                           f"{self.batch_size:,} steps) was dropped") from None
        self.normalization.sync(self.world)
        local_steps = self.global_step - self._epoch_start_step
        with self.timing.section("copy"):
            data = self.buffer.tensors(self.device)
        # NaN from the env: learn nothing from it (every rank stops when one finds it)
        check_together(self.world, health.check_batch, data, self.num_agents)
        steps = self.world.sum(local_steps)
        self.global_step = self._epoch_start_step + steps  # the steps of all ranks
        try:
            with self.timing.section("learn"), self._learning_threads():
                stats = self.ppo.update(data, lambda: self.config.train, self.global_step,
                                        self._safe_point, self.schedule, self.adaptive_lr)
        except EpochCut:  # learnt from part of the batch: the epoch counts, cut short
            self.epoch += 1
            self.uptime = (self._uptime_start + time.perf_counter() - self._epoch_start
                           - self._blocked)  # paused time is not training time
            # what telemetry shows: the epoch and steps the checkpoint then written holds
            self.progress = {**self.progress, "global_step": self.global_step,
                             "epoch": self.epoch, "uptime": self.uptime}
            raise EpochCut("the epoch's update was cut short (the policy learnt from part "
                           "of its minibatches)") from None
        check_together(self.world, health.check_update, stats, self.policy)
        elapsed = time.perf_counter() - self._epoch_start - self._blocked
        self.epoch += 1
        self.uptime = self._uptime_start + elapsed
        losses, env, workers = reduce_epoch(self.world, local_steps, elapsed,
                                            {k: stats[k] for k in LOSS_KEYS}, log.summary())
        self.scores.note(env)  # every rank: the combined episodes
        # the ranks' mean KL: every rank moves its rate alike, so their weights stay equal
        self.adaptive_lr.observe(self.config.train, losses.get("approx_kl"))
        row = {"epoch": self.epoch, "global_step": self.global_step,
               "sps": steps / max(elapsed, 1e-9), "uptime": self.uptime,
               "learning_rate": stats["learning_rate"],
               LOSSES: losses,
               **self.timing.metrics(elapsed),
               ENV: env}  # grouped: an env stat cannot overwrite a trainer number
        if workers:
            row[WORKERS] = workers
        self.progress = {"global_step": self.global_step, "epoch": self.epoch,
                         "sps": row["sps"], "uptime": self.uptime, "metrics": row}
        return row

    def _rechoose_threads(self) -> None:
        """train.torch_threads 0: both phases' threads from the other processes' load since
        the last choice (at most every RECHOOSE_SECONDS, so an average over many ticks)."""
        if self._load_watch is None or self.config.train.torch_threads:
            return
        busy = self._load_watch.others_since_last(RECHOOSE_SECONDS)
        if busy is None:
            return
        threads = (auto_threads(self.config, busy=busy),
                   auto_threads(self.config, phase="learn", busy=busy))
        if threads != self._threads:
            self._threads = threads
            set_compute_threads(threads[0])

    @contextlib.contextmanager
    def _learning_threads(self):
        collect, learn = self._threads
        if learn != collect:
            set_compute_threads(learn)
        try:
            yield
        finally:
            if learn != collect:
                set_compute_threads(collect)

    def _safe_point(self, between_steps: bool = False) -> None:
        if self.safe_point is None:
            return
        if self.progress["global_step"] != self.global_step:
            # the engine may pause here: let telemetry show the step it paused at
            self.progress = {**self.progress, "global_step": self.global_step}
        start = time.perf_counter()
        try:
            if self.world.enabled:
                # ranks step their envs a different number of times: only the minibatch and
                # epoch boundaries are common to all (engine/runtime/commands.py)
                self.safe_point(between_steps=between_steps)
            else:
                self.safe_point()
        finally:
            blocked = time.perf_counter() - start
            self._blocked += blocked
            self.timing.exclude(blocked)  # paused time is in no timing share
        if self.cut_short is not None and self.cut_short():
            raise EpochCut

    def _collect(self, log: EpisodeLog) -> None:
        buffer, timing, vecenv, policy = self.buffer, self.timing, self.vecenv, self.policy
        buffer.start_batch()
        cuda = self._staging is not None
        numpy_mlp = self._numpy_mlp
        # Sections timed by hand, not by Timing.section: at a few environments a step is
        # short, and four context managers a step cost a noticeable share of it. Nothing blocks
        # inside these sections (the safe point is outside), so nothing is to be excluded.
        clock, seconds = timing.clock, timing.seconds
        last_report = clock()
        with self.collection_casts() as casts:
            while not buffer.ready:
                self._safe_point(between_steps=True)
                casts.refresh()
                began = time.perf_counter()  # nothing queued on a device yet: no synchronize
                obs, rewards, terminals, truncations, infos, env_ids, masks = vecenv.recv()
                received = clock()
                seconds["env"] += received - began
                log.add(infos)
                train = self.config.train
                obs = self.normalization.observe(obs, masks, train.observation_clip)
                rewards = self.normalization.scale(env_ids, rewards, terminals | truncations, masks,
                                                   train.gamma)
                normalized = clock()  # the episode log and normalization: misc, as before
                state = self.lstm_state
                rows = None  # the rows stepped, as a device index (None: every row, in order)
                if cuda:
                    staging = self._staging[: len(env_ids)]
                    staging.copy_(torch.from_numpy(obs))
                    obs_t = staging.to(self.device, non_blocking=True)
                else:  # the numpy MLP reads numpy (no tensor to make)
                    obs_t = obs if numpy_mlp is not None else torch.from_numpy(obs)
                if state is not None:
                    every_row = len(env_ids) == self.num_agents and is_identity(env_ids)
                    rows = None if every_row else torch.as_tensor(env_ids, device=self.device)
                    starts = torch.from_numpy(terminals | truncations).to(self.device,
                                                                          non_blocking=True)
                copied = clock()
                with casts.step():
                    if state is not None and rows is not None:
                        state = (state[0][rows], state[1][rows])
                    final_values = self._final_values(env_ids, terminals, truncations, state)
                    if state is not None:
                        state = policy.reset_state(state, starts)
                    if numpy_mlp is not None:  # the same draws, in numpy
                        actions, logprobs, values, env_actions = numpy_mlp.collect(
                            obs_t, buffer.exploration, env_ids)
                        params, new_state = numpy_mlp.last_params, None
                    else:
                        params, values, new_state = self._step_fn(obs_t, state, None)
                        params, values = params.float(), values.float()  # no-ops in float32
                        if new_state is not None:
                            new_state = (new_state[0].float(), new_state[1].float())
                        actions, logprobs = policy.actor.sample(params, noise=buffer.exploration,
                                                                rows=env_ids)
                        env_actions = policy.actor.to_env(actions).cpu().numpy()
                forwarded = clock()
                if new_state is not None:
                    if rows is None:
                        self.lstm_state = new_state
                    else:
                        self.lstm_state[0][rows] = new_state[0]
                        self.lstm_state[1][rows] = new_state[1]
                # a device buffer takes the policy's outputs where they are
                on_device = buffer.device is not None
                host = (lambda t: t.cpu()) if cuda and not on_device else (  # noqa: E731
                    lambda t: t)
                buffer.store(env_ids, obs_t if on_device else obs, rewards, terminals,
                             truncations, masks, host(actions), host(logprobs), host(values),
                             None if state is None else (host(state[0]), host(state[1])),
                             final_values)
                stored = clock()
                watch = self.step_watch  # a viewer's (engine/evaluation/policy_view.py)
                if watch is not None:
                    watch(obs_t, env_ids, actions, values, rewards, terminals, truncations,
                          masks, state, final_values, params)
                # Count now: recv() may return the backend's live buffers, which send() overwrites
                # with the next step's masks.
                stepped = int(np.count_nonzero(masks))
                sending = time.perf_counter()
                vecenv.send(env_actions)
                now = clock()
                seconds["copy"] += (copied - normalized) + (stored - forwarded)
                seconds["forward"] += forwarded - copied
                seconds["env"] += now - sending
                self.global_step += stepped
                if now - last_report > _PROGRESS_INTERVAL:
                    last_report = now
                    self._report_progress(now)

    def _final_values(self, env_ids, terminals, truncations, state) -> np.ndarray | None:
        """V(final observation) of the rows whose episode was truncated on this step (0 in the
        others), from each agent's recurrent state before its reset; None when none was.
        Called inside inference mode; one batched forward over the truncated rows only."""
        truncations = np.asarray(truncations)
        if not truncations.any():  # most steps: no episode was cut
            return None
        truncated = np.flatnonzero(truncations & ~np.asarray(terminals))
        if len(truncated) == 0:
            return None
        final = self.vecenv.final_observations[np.asarray(env_ids)[truncated]]
        final = self.normalization.final(final, self.config.train.observation_clip)
        obs = torch.from_numpy(final).to(self.device)
        if state is not None:
            pick = torch.as_tensor(truncated, device=self.device)
            state = (state[0][pick], state[1][pick])
        _, values, _ = self._step_fn(obs, state, None)
        out = np.zeros(len(env_ids), np.float32)
        out[truncated] = values.float().cpu().numpy().reshape(-1)
        return out

    def _report_progress(self, now: float) -> None:
        elapsed = now - self._epoch_start - self._blocked
        # ranks step alike: this rank's count times the ranks until the epoch's sum
        steps = (self.global_step - self._epoch_start_step) * self.world.size
        self.progress = {**self.progress, "global_step": self._epoch_start_step + steps,
                         "sps": steps / max(elapsed, 1e-9),
                         "uptime": self._uptime_start + elapsed}

    # -- hyperparameters ----------------------------------------------------------------------

    def set_hyperparameter(self, key: str, value) -> tuple[object, str]:
        """Change a live field from raw input (e.g. "train.learning_rate", "0.003")."""
        return self.apply_live(check_live(key, value, self.config.env_name))

    def apply_live(self, change: LiveChange) -> tuple[object, str]:
        """(value, when it applies) of a change the schema checked once (protocol.check_live);
        what is left is this run's: the whole config still consistent, the steps done."""
        spec, new_value = change, change.value
        apply(self.config, {change.key: new_value})  # the whole config (e.g. prio_alpha)
        if spec.key == "train.total_timesteps":  # the end moves: the schedules move with it
            if new_value <= self.global_step:
                raise ConfigError(f"train.total_timesteps {new_value:,} is not above the "
                                  f"{self.global_step:,} steps done; to end the run now, stop it")
            self.schedule = budget_moved(self.schedule, self.config.train.total_timesteps,
                                         new_value, self.global_step)
        setattr(getattr(self.config, spec.section), spec.name, new_value)
        if spec.key == "train.gamma":  # chosen: a resume's time-limit probe leaves it alone
            self.config.train.gamma_from_time_limit = False
        if spec.section == "eval":  # engine/evaluation/periodic_eval.py reads them as one starts
            return new_value, "from the next evaluation"
        return new_value, _APPLIES.get(spec.name, _APPLIES_DEFAULT)

    # -- checkpoints --------------------------------------------------------------------------

    def state_dict(self, episodes_afresh: str | None = None) -> dict:
        """`episodes_afresh`: why the envs' state is not saved (a dead env worker cannot be
        asked for it); a resume then starts episodes afresh and says why."""
        train = self.config.train
        return {
            "policy": self.policy.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "lr_schedule": {"kind": "cosine" if train.anneal_lr else "constant",
                            "base_learning_rate": train.learning_rate,
                            "total_timesteps": train.total_timesteps,
                            "learning_rate": learning_rate(train, self.global_step,
                                                           self.schedule),
                            **self.schedule.as_dict()},
            "adaptive_lr": self.adaptive_lr.state_dict(),
            "global_step": self.global_step,
            "epoch": self.epoch,
            "uptime": self.uptime,
            "rng": checkpoint_state.capture_rng(self.device),
            "config": self.config.as_dict(),
            # env state, the step result in flight and per-agent LSTM state: episodes go on
            **(checkpoint_state.save_episodes(self.vecenv, self.lstm_state)
               if episodes_afresh is None else {"vecenv": None, "lstm_state": None, "episodes_afresh": episodes_afresh}),
            "built_config": self._built_config,
            "normalization": self.normalization.state_dict(),
            "recent_scores": self.scores.as_list(),
        }

    def load_state_dict(self, state: dict) -> None:
        """Resume exactly: weights, optimizer moments, counters, schedule, RNG streams and the
        live hyperparameters the run had (the rest of the config must match this trainer's).

        A live field keeps the value this trainer was built with when that differs from the
        value the checkpoint's run was built with: the user changed it for this resume (e.g.
        `train --resume RUN --train.learning-rate 0.001`). Otherwise the checkpoint's value is
        restored, so that changes made live while the run trained survive the restart."""
        missing = {"policy", "optimizer", "global_step", "epoch", "config"} - set(state)
        if missing:
            raise ValueError(f"not a trainer state: missing {', '.join(sorted(missing))}")
        saved = from_dict(state["config"])
        checkpoint_state.check_compatible(self.config, saved)
        self.normalization.load_state_dict(state.get("normalization"), self.world.is_main)
        self.policy.load_state_dict(state["policy"])
        optimizer_state = state["optimizer"]
        self.fresh_moments = None
        migration = _checkpoint_migration(self.policy)
        if optimizer_state is not None and migration:
            # the same function in wider tensors (engine/algo/encoders.py): no moments fit it
            self.fresh_moments = (
                f"resume is not exact: the checkpoint's policy {migration}; its weights carry "
                "over as the same function, the optimizer's moments start afresh")
            warnings.warn(self.fresh_moments, stacklevel=2)
            optimizer_state = None
        # Adam adopts the given tensors and updates them in place: keep the caller's intact.
        # None: a branch that changed train.optimizer starts with a fresh one (engine/startup/branch.py)
        if optimizer_state is not None:
            self.optimizer.load_state_dict(copy.deepcopy(optimizer_state))
        checkpoint_state.restore_live_fields(self.config, self._built_config, saved,
                                             state.get("built_config"))
        self.global_step = int(state["global_step"])
        self.schedule = resumed_anchor(state.get("lr_schedule"), self.config.train,
                                       self.global_step)
        self.adaptive_lr.load_state_dict(state.get("adaptive_lr"))
        self.epoch = int(state["epoch"])
        self.uptime = float(state.get("uptime", 0.0))
        self.scores = ScoreWindow.from_list(state.get("recent_scores", []))
        if not self.world.is_main:
            # the checkpoint holds rank 0's envs and RNG streams (engine/algo/distributed.py): this
            # rank's episodes go on from its own reset, its streams reseeded from the step
            checkpoint_state.seed_all(self._seed + self.global_step)
            self.inexact_resume = None
        else:
            checkpoint_state.restore_rng(state.get("rng", {}), self.device)
            # Episodes continue where they were (or, when that cannot be, start afresh).
            self.lstm_state, self.inexact_resume = checkpoint_state.restore_episodes(
                self.vecenv, self.lstm_state, state, self.device)
        if self.inexact_resume:
            warnings.warn(f"resume is not exact: {self.inexact_resume}; episodes start afresh",
                          stacklevel=2)
        self.progress = {"global_step": self.global_step, "epoch": self.epoch, "sps": 0.0,
                         "uptime": self.uptime, "metrics": {}}

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.vecenv.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _checkpoint_migration(policy) -> str:
    """What a loaded checkpoint's policy lacked that this one has (engine/algo/encoders.py
    turned it into the same function), as the end of a sentence; "" when it lacked nothing."""
    for module in policy.modules():
        if getattr(module, "loaded_from_numbers", False):
            return ("read its integer observation cells as numbers (MiniGrid's image before "
                    "its codes were one-hot: envs/minigrid_codes.py)")
        missing = getattr(module, "loaded_without_text", ())
        if missing:
            return (f"did not read {', '.join(missing)} (MiniGrid's mission before it was "
                    "read as choices: envs/minigrid_mission.py)")
    return ""
