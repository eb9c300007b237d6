"""Evaluation and recording: a trained policy playing fresh envs, in the engine's rooms.

evaluate.py (exact episode counts), periodic_eval.py (during training), recording.py (frames to
GIF/MP4), policy_export.py (a trained policy as one ONNX or TorchScript file). The app only reads
recordings (puffer_tui.engine.shared.recordings).
"""
