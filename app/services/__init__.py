"""What the app's screens and CLI verbs share beneath them: data and plans, no widgets.

env_catalogue.py (the envs as plain data for the launcher), recent_specs.py (env specs typed
lately).
"""
