"""The algorithm: PPO over a vectorized env, with no process, socket or file of its own.

Reading order, as a loop reads:
  trainer.py        one epoch: collect a batch from the vec env, then one update (start here)
  trainer_setup.py  the device, torch threads and vec env a trainer is built from
  rollout.py        the [segments, horizon] buffer the collection fills
  normalization.py  running observation statistics and return-based reward scaling
  policy.py         encoder -> MLP/LSTM core -> action head + value head
    encoders.py, distributions.py, one_hot_sum.py
  ppo.py            PPO.update: the update on one page (CleanRL's loop), and its parts:
    advantage.py    GAE with V-trace clipping (the native kernel or torch)
    minibatch_plan.py  shuffled steps, or whole segments drawn by priority (sampling.py)
    minibatch_loss.py  one minibatch's loss and gradients: autograd over ppo_loss.py (the
                    reference), or numpy_mlp.py's for a plain MLP on the CPU
    ppo_loss.py     clipped surrogate, clipped value loss, entropy bonus
    precision.py    float32 or bfloat16 autocast, for the update and the collection alike
  optimizers.py, schedule.py  Adam or Muon; the learning-rate and coefficient schedules
  distributed.py    several learners under torchrun (DDP)
  checkpoint_state.py  a checkpoint beyond the weights: whether it fits, the live fields a
                    resume keeps, the RNG streams, the envs' and LSTM's state
  cpu_load.py, timing.py, episode_log.py, allocator.py: the time shares, env logs, memory reuse

Imports only puffer_tui.engine.shared, .native, .vec and the env registry; never the engine
process (puffer_tui.engine.runtime), the app or Textual.
"""
