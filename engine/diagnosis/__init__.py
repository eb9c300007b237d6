"""Diagnosis: named rules read off each epoch's numbers, with evidence and a suggested `set`.

rules.py (the rules and thresholds), state.py (fired, cleared, silenced), epoch_diagnosis.py
(the engine's per-epoch pass on rank 0, its `Doctor`). No Textual: the dashboard gets diagnoses
as protocol pushes.
"""
