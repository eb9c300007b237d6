"""One request over a JSON-lines control socket (an engine's or a sweep driver's), synchronously.

    reply = request(run_dir / "control.sock", "stop", {"checkpoint": False})

Pushes (telemetry, events) that arrive before the reply are skipped.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

from puffer_tui.engine.shared.protocol import MAX_MESSAGE, encode_request, split_lines
from puffer_tui.engine.shared.run_dir import unix_address


class ControlError(OSError):
    """The socket could not be reached or did not answer in time."""


def request(path: str | os.PathLike, cmd: str, args: dict | None = None,
            timeout: float = 5.0) -> dict:
    """The reply ({"id", "ok", ...}) to one command; ControlError if there is none."""
    deadline = time.monotonic() + timeout
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    address, fd = unix_address(Path(path))
    try:
        sock.connect(address)
        sock.sendall(encode_request(1, cmd, args))
        buffer = b""
        while time.monotonic() < deadline:
            lines, buffer = split_lines(buffer)
            for line in lines:
                message = _parse(line)
                if message.get("id") == 1 and "ok" in message:
                    return message
            chunk = sock.recv(65536)
            if not chunk:
                raise ControlError(f"{path}: closed before answering {cmd}")
            buffer += chunk
            if len(buffer) > 4 * MAX_MESSAGE:
                buffer = buffer[-MAX_MESSAGE:]
        raise ControlError(f"{path}: no answer to {cmd} within {timeout:g} s")
    except TimeoutError:
        raise ControlError(f"{path}: no answer to {cmd} within {timeout:g} s") from None
    except ControlError:
        raise
    except OSError as e:
        raise ControlError(f"{path}: {e}") from None
    finally:
        sock.close()
        if fd is not None:
            os.close(fd)


def _parse(line: bytes) -> dict:
    try:
        message = json.loads(line)
    except ValueError:
        return {}
    return message if isinstance(message, dict) else {}
