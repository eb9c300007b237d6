"""Before an engine starts: the checks a new or resumed run must pass, run in the CLI's process.

preflight.py (device, env, batch, budget, policy), memory_estimate.py (bytes from the spaces),
branch.py (a run from another run's checkpoint). The app may import this room: a bad run fails
here, in one line, before its run dir exists.
"""
