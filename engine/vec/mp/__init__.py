"""The multiprocessing backend: worker processes stepping their envs in shared memory.

  mp_backend.py     `Multiprocessing`, the pool the caller holds (start here)
  worker.py         the worker process's loop
  channel.py        the socketpair between the pool and one worker
  shared_memory.py  the nameless memory file the buffers live in
  block.py          what a block of envs does on each command (in a worker, or inline)
  inline_watch.py   hang detection for the block the caller steps itself
  hang_limit.py     when a silent worker is called hung
  crash_log.py      a dead or hung worker's Python traceback
  worker_exit.py    ending workers: politely, then firmly, always reaped
  main_module.py    workers that do not import the caller's `__main__`
"""
