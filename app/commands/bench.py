"""`puffer-tui bench KIND`: benchmarks, each a module in puffer_tui.benchmarks.

Tested in: tests/benchmarks/test_env_speed.py (a kind mapped to its module, a refusal's exit 2),
tests/benchmarks/test_vec_bench.py, tests/benchmarks/test_bench_learn.py,
tests/benchmarks/test_bench_peer.py"""

from __future__ import annotations

import functools
import importlib
import sys

# bench kind -> its help; each kind is the module puffer_tui.benchmarks.<kind>, or the one
# MODULES names
KINDS = {
    "envs": "single-core agent-steps/second of every env, with pre-generated random actions",
    "train": "training agent-steps/second of the real Trainer, with its timing breakdown",
    "control": "pause/resume latency and CPU while paused, on a real engine process",
    "vec": "agent-steps/second of our vectorizers against Gymnasium's (and EnvPool's)",
    "learn": "returns, wall time and CPU of ours (family defaults) against SB3 with rl-zoo's "
             "tuned settings, env by env",
}

# kinds whose module is named for what it measures: no two modules of the package share a name
# (tests/test_module_names.py), and `envs` and `train` are also commands (app/commands/)
MODULES = {"envs": "env_speed", "train": "train_speed"}


def add_parser(sub, name, help_text):
    p = sub.add_parser(name, help=help_text, description=help_text)
    kinds = p.add_subparsers(dest="kind", metavar="KIND", required=True)
    for kind, kind_help in KINDS.items():
        module = importlib.import_module(f"puffer_tui.benchmarks.{MODULES.get(kind, kind)}")
        kp = kinds.add_parser(kind, help=kind_help, description=kind_help)
        module.add_arguments(kp)
        kp.set_defaults(run=functools.partial(_bad_input_exits_2, module.run))


def _bad_input_exits_2(run, args) -> int:
    """A benchmark refuses bad input with SystemExit(message); the CLI's code for that is 2."""
    try:
        return run(args)
    except SystemExit as e:
        if not isinstance(e.code, str):
            raise
        print(e.code, file=sys.stderr)
        return 2
