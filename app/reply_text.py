"""What the event log says about an engine's reply to a request."""

from __future__ import annotations


def reply_text(cmd: str, reply: dict) -> str:
    """What the event log says about a reply, with how long the engine took to answer."""
    took = reply.get("_round_trip_ms")
    return reply_body(cmd, reply) + (f" [{took:.0f} ms]" if took is not None else "")


def reply_body(cmd: str, reply: dict) -> str:
    if not reply.get("ok"):
        return f"{cmd} refused: {reply.get('error')}"
    if cmd == "set":
        return f"set {reply.get('key')} = {reply.get('value')} ({reply.get('applies', 'applied')})"
    if cmd == "checkpoint":
        if reply.get("pending"):  # paused mid-epoch: the engine writes it when the epoch ends
            return f"checkpoint pending: written {reply.get('applies', 'when the epoch ends')}"
        return f"checkpoint written: {reply.get('path')}"
    if "state" in reply:
        return f"{cmd}: engine is {reply['state']}"
    return f"{cmd}: ok"
