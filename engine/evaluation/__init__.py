"""Evaluation and recording: a trained policy playing fresh envs, in the engine's rooms.

evaluate.py (exact episode counts), periodic_eval.py (during training), recording.py (frames to
GIF/MP4). The app only reads recordings (puffer_tui.engine.shared.recordings).
"""
