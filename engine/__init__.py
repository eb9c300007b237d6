"""The engine: PPO trainer, vectorization, native kernels, config, checkpoints, control server.

Importable without Textual; nothing here imports puffer_tui.app or puffer_tui.screens.
"""
