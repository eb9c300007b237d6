"""Read back a W&B offline run file (RUN/wandb/offline-run-*/run-ID.wandb) in tests.

wandb 0.2x+ writes these from its Go core and ships no Python reader, so this walks the
file's framing (LevelDB's log format: 32 KiB blocks of chunks, each `crc32c:u32 length:u16
type:u8` then data, after a 7-byte `:W&B` header) and decodes every record with wandb's own
protobuf definition (`wandb.proto.wandb_internal_pb2.Record`).
"""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path

BLOCK = 32 * 1024
HEADER = 7  # ":W&B", a 2-byte magic, a 1-byte version
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def record_payloads(path: Path):
    data = Path(path).read_bytes()
    if not data.startswith(b":W&B"):
        raise ValueError(f"{path} is not a W&B run file")
    pos, pieces = HEADER, []
    while pos + 7 <= len(data):
        room = BLOCK - pos % BLOCK
        if room < 7:  # a block's tail too short for a header is padding
            pos += room
            continue
        _crc, length, kind = struct.unpack_from("<IHB", data, pos)
        chunk = data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind == FULL:
            yield chunk
        elif kind == FIRST:
            pieces = [chunk]
        elif kind == MIDDLE:
            pieces.append(chunk)
        elif kind == LAST:
            yield b"".join([*pieces, chunk])
            pieces = []
        else:  # zero padding at the end of the last block
            break


def read_offline_run(path: Path) -> dict:
    """{"history": [row, ...], "config": {key: value}, "files": [path, ...], "finished": bool}
    of a .wandb file as it is now (history rows keyed as logged, values decoded from JSON;
    finished: the run's exit record is there)."""
    from wandb.proto import wandb_internal_pb2 as pb

    history, config, files, finished = [], {}, [], False
    for payload in record_payloads(path):
        record = pb.Record()
        record.ParseFromString(payload)
        kind = record.WhichOneof("record_type")
        if kind == "history":
            history.append({item.key or "/".join(item.nested_key): json.loads(item.value_json)
                            for item in record.history.item})
        elif kind == "run":
            for item in record.run.config.update:
                config[item.key] = json.loads(item.value_json)
        elif kind == "config":
            for item in record.config.update:
                config[item.key] = json.loads(item.value_json)
        elif kind == "files":
            files.extend(f.path for f in record.files.files)
        elif kind == "exit":
            finished = True
    return {"history": history, "config": config, "files": files, "finished": finished}


def read_finished_run(path: Path, timeout: float = 60.0) -> dict:
    """read_offline_run once the file holds the run's exit record: wandb's core process
    writes the file on its own, and may still be at it after `run.finish()` returned."""
    deadline = time.monotonic() + timeout
    while True:
        run = read_offline_run(path)
        if run["finished"] or time.monotonic() > deadline:
            assert run["finished"], f"{path} has no exit record after {timeout} s"
            return run
        time.sleep(0.05)


def offline_run_file(run_dir: Path) -> Path:
    """The one .wandb file of a run logged offline (fails when there are none or several)."""
    found = sorted(Path(run_dir).glob("wandb/offline-run-*/run-*.wandb"))
    if len(found) != 1:
        raise AssertionError(f"expected one offline W&B run under {run_dir}/wandb, found {found}")
    return found[0]
