"""Old spellings of job-file fields: still accepted, renamed to the one current name, with a
warning once per process (one vocabulary across CLI flags, job files and JSON)."""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["DeprecatedName", "JOB_FIELD_ALIASES", "rename_old_fields", "warn_renamed"]


class DeprecatedName(UserWarning):
    """An old field or flag name was used; it still works (the CLI shows it as one line)."""


#: table -> {old name: current name}. A count is num_*, a list of GPU types is gpu_types.
JOB_FIELD_ALIASES: dict[str, dict[str, str]] = {
    "constraints": {"gpus": "gpu_types", "checkpointing": "activation_checkpointing"},
    "calibration": {"gpus": "num_gpus", "checkpointing": "activation_checkpointing",
                    "zero": "zero_stage"},
    "workload": {"quantization": "precision"},
}

_warned: set[str] = set()


def warn_renamed(old: str, new: str) -> None:
    """Warn once per process that `old` is now called `new`."""
    if old in _warned:
        return
    _warned.add(old)
    warnings.warn(f"{old} is now called {new}; the old name still works but will be removed "
                  "in the next schema version", DeprecatedName, stacklevel=3)


def rename_old_fields(data: Any, table: str) -> Any:
    """`data` (a decoded TOML table) with old field names of `table` renamed to current ones.

    Raises:
        ValueError: both the old and the new name are given.
    """
    if not isinstance(data, dict):
        return data
    out = dict(data)
    for old, new in JOB_FIELD_ALIASES.get(table, {}).items():
        if old not in out:
            continue
        if new in out:
            raise ValueError(f"give {new} or its old name {old}, not both")
        warn_renamed(f"{table}.{old}", f"{table}.{new}")
        out[new] = out.pop(old)
    return out
