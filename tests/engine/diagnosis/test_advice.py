"""A suggestion is checked before it is shown or applied: against the config's own rules,
and a worker count against the cores other programs leave free."""

from __future__ import annotations

from puffer_tui.engine.diagnosis.advice import fitted, free_cores
from puffer_tui.engine.shared.config import load_config


def workers_suggestion(to: int) -> dict:  # env_bound's
    return {"key": "vec.num_workers", "to": to, "live": False,
            "restart": f"--vec.num-workers {to}"}


def mp_config(workers: int, envs: int):
    return load_config("squared", {"vec.backend": "multiprocessing",
                                   "vec.num_workers": workers, "vec.num_envs": envs})


def test_free_cores_are_the_cores_less_the_load_of_other_programs():
    assert free_cores(2, load=3.0, own=2.0) == 1  # another program keeps one core busy
    assert free_cores(2, load=0.5, own=2.0) == 2  # never more than the cores
    assert free_cores(2, load=9.0, own=1.0) == 1  # at least one


def test_a_loaded_two_core_machine_never_gets_four_workers():
    config = mp_config(2, 16)
    free = free_cores(2, load=3.0, own=3.0)
    assert fitted(workers_suggestion(4), config, free=free) is None


def test_more_workers_are_lowered_to_the_free_cores():
    config = mp_config(2, 24)
    got = fitted(workers_suggestion(4), config, free=3)
    assert (got["to"], got["restart"]) == (3, "--vec.num-workers 3")


def test_a_change_the_config_would_refuse_is_never_shown():
    config = mp_config(2, 16)
    # 16 envs do not split over 3 workers: the run would refuse it
    assert fitted(workers_suggestion(3), config, free=8) is None
    # out of the field's bounds
    assert fitted({"key": "train.ent_coef", "from": 0.5, "to": 5.0, "live": True},
                  config) is None


def test_a_change_the_run_takes_is_kept_as_it_is():
    config = mp_config(2, 16)
    suggestion = {"key": "train.learning_rate", "from": 0.1, "to": 0.01, "live": True}
    assert fitted(suggestion, config) is suggestion
