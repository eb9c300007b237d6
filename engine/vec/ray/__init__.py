"""The Ray backend: one block of envs per Ray actor, on one machine or across a cluster.

  ray_backend.py   `RayVec`, the pool the caller holds (start here)
  actor.py         the actor: one block of envs stepped per remote call
  session.py       connecting to Ray (a private local one, or a cluster) and letting go
  actor_exit.py    ending the actors; Ray's errors as WorkerErrors
  worker_rates.py  each actor's steps per second, for telemetry
"""
