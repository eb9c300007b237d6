"""Hyperparameter sweeps: an Optuna study whose trials are ordinary engine runs.

space.py (what is searched), settings.py (the sweep directory), study.py (storage, pruner,
orphaned trials), trial_run.py (one trial's engine), driver.py (the driver process),
server.py (its control socket), snapshot.py (its state as data), objective.py (a trial's
worth). No Textual, no app: the app's sweep screen will be a client of the driver's socket.
"""
