"""Hyperparameter sweeps: an Optuna study whose trials are ordinary engine runs.

space.py (what is searched), study.py (storage, pruner, orphaned trials), trial_run.py (one
trial's engine), driver.py (the driver process: start here), snapshot.py (its state as data),
server.py (its control socket: the engine's LineServer with the driver's commands, pushing
each new snapshot to subscribed clients), steering.py (pause, resume, prune, add),
objective.py (a trial's worth). The settings and the sweep directory are
engine/shared/sweep_settings.py. No Textual, no app: the app's sweep screen
(screens/sweep_view.py) is a client of the driver's socket.
"""
