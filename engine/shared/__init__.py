"""The words and files the app and the engine share: the one room of the engine the app imports.

  protocol.py       the control protocol's messages (no torch)
  config.py         the typed run configuration, its TOML and flags
  run_dir.py        run directories and status.json
  checkpoint.py     the checkpoint files (torch imported inside the functions that need it)
  lineage.py        which run a branch started from
  events.py         events.log
  presets.py        hyperparameter preset files (`--preset`, `sweep best`)
  sweep_settings.py, sweep_control.py  a sweep's directory and its socket's words
  line_server.py, connection_tracker.py  the protocol's socket server (the engine's and a
                    sweep driver's) and its connections
  resume_check.py, health.py, atomic_write.py

Nothing here imports the algorithm, the engine process, vec envs or Textual (import-linter).
"""
