"""What the event log says about the engine's replies (app/reply_text.py)."""

from puffer_tui.app.reply_text import reply_text


def test_a_checkpoint_asked_while_paused_reads_as_pending_not_as_written():
    # the engine's reply while paused mid-epoch (engine/runtime/commands.py)
    reply = {"ok": True, "path": None, "pending": True,
             "applies": "at the end of the current epoch (training is paused mid-epoch)"}
    text = reply_text("checkpoint", reply)
    assert text == ("checkpoint pending: written at the end of the current epoch (training is "
                    "paused mid-epoch)")
    assert "None" not in text


def test_a_written_checkpoint_names_its_file_and_the_round_trip():
    reply = {"ok": True, "path": "/runs/x/checkpoints/step-1.pt", "_round_trip_ms": 3.2}
    assert reply_text("checkpoint", reply) == \
        "checkpoint written: /runs/x/checkpoints/step-1.pt [3 ms]"
