"""Calibration fitting, below the API: a measured run of a configuration request fits the base
compute efficiency of its GPU type (run.py), its fabric's communication multiplier (comm.py, a
golden-section search) and its model's activation memory (memory.py); points.py says what the
stored runs change; profile.py stores the runs of per-sample models."""
