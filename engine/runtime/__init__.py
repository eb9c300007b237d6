"""The engine process: the trainer's main loop, its control server and what it reports.

  process.py            `python -m puffer_tui.engine RUN_DIR`: the Engine (start here)
  recovery.py           faults that need a person: pause with a checkpoint, never train on
  commands.py           the queue from the server's thread to the trainer's safe points
  control_server.py     the engine's socket server (a LineServer: engine/shared/line_server.py)
  run_control.py        the run state and the pause/stop flags, changed through its methods
  telemetry.py, frame_source.py  what the server pushes: numbers and frames
  metrics.py, wandb_tracker.py  one row per epoch to metrics.jsonl, TensorBoard and W&B
"""
