"""Pendulum-v1 as a module env: it gets the continuous-control family's base, as an env
nobody wrote a preset for would."""
import gymnasium as gym


def make(**kwargs):
    return gym.make("Pendulum-v1", **kwargs)
