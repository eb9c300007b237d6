"""`puffer-tui export RUN -o FILE`: a trained policy as one ONNX or TorchScript file.

    puffer-tui export runs/gym-CartPole-v1-20261201-101500 -o cartpole.onnx
    puffer-tui export squared-20261201-101500 --checkpoint best --format torchscript -o sq.pt

The file maps observations (as the env gives them, batched) to the env's actions, with the
run's observation normalization and the deterministic action choice inside it; an LSTM
policy takes and returns its state (engine/evaluation/policy_export.py says the inputs and outputs).
It calls the Python API (`puffer_tui.load(...).export(...)`), as a script would.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from puffer_tui.engine.shared import exit_codes as ec

FORMATS = ("onnx", "torchscript")


def add_parser(sub, name, help_text):
    p = sub.add_parser(name, help=help_text, description=help_text,
                       epilog=ec.help_epilog((ec.FINISHED, ec.ERROR, ec.USAGE)),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", metavar="RUN|CHECKPOINT",
                   help="a run directory or name, or a checkpoint file")
    p.add_argument("--checkpoint", default="latest", metavar="latest|best|PATH",
                   help="which of the run's checkpoints (default latest; best: evaluation's "
                        "best.pt; or a file name in its checkpoints/)")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="onnx or torchscript (default: from the file's suffix, .onnx or .pt)")
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="the file to write (written whole or not at all)")
    p.add_argument("--runs-dir", metavar="D", help="where run names are looked up")
    p.set_defaults(run=run)


def _fail(message: str) -> int:
    print(f"puffer-tui export: error: {message}", file=sys.stderr)
    return ec.USAGE


def run(args) -> int:
    # lazy: the API pulls torch and the exporter, kept off the CLI's fast path
    from puffer_tui import api

    ExportError = api.ExportError
    output = Path(args.output)
    try:
        format = api.export_format(output, args.format)
    except ExportError as e:
        return _fail(str(e))
    if not output.parent.is_dir():
        return _fail(f"{output.parent} is not a folder; create it or write elsewhere")
    try:
        policy = api.load(args.target, args.checkpoint, runs_dir=args.runs_dir)
    except (api.CheckpointError, api.RunDirError, ValueError) as e:
        return _fail(str(e))
    try:
        path = policy.export(output, format)
    except ExportError as e:
        return _fail(str(e))
    except Exception as e:  # the tracer's own refusal: say which policy and why, in one line
        print(f"puffer-tui export: the {policy.env_name} policy could not be exported as "
              f"{format}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
              file=sys.stderr)
        return ec.ERROR
    inputs = "obs, h, c" if policy.recurrent else "obs"
    outputs = "action, value, h_out, c_out" if policy.recurrent else "action, value"
    print(f"wrote {path} ({format}, {path.stat().st_size:,} bytes) from {policy.checkpoint}: "
          f"inputs {inputs} {_shape(policy)}, outputs {outputs}")
    return ec.FINISHED


def _shape(policy) -> str:
    space = policy.observation_space
    return f"[N, {', '.join(map(str, space.shape))}] {space.dtype}"
