"""Old spellings of job-file fields: still accepted, renamed to the one current name, with a
warning once per process (one vocabulary across CLI flags, job files and JSON)."""

from __future__ import annotations

from typing import Any

from optimizer import notices

__all__ = [
    "DeprecatedName",
    "JOB_FIELD_ALIASES",
    "HARDWARE_TABLES",
    "rename_old_fields",
    "warn_renamed",
    "shown_table",
]


class DeprecatedName(UserWarning):
    """An old field or flag name was used; it still works (the CLI shows it as one line)."""


#: old -> current name of an entry of `[[hardware.owned]]`, `[[hardware.buy]]` and
#: `[[capacity.owned]]` (a count is num_*, a bound says max_ and means the GPUs bought)
_HARDWARE_ENTRY = {"boxes": "num_boxes", "max_count": "max_gpus"}

#: the tables whose entries are hardware boxes (they share _HARDWARE_ENTRY)
HARDWARE_TABLES = ("hardware", "hardware.owned", "hardware.buy", "capacity.owned")

#: table -> {old name: current name}. A count is num_*, a list of GPU types is gpu_types,
#: bounds say min_/max_ and mean it. A training job's tables are named as in the file
#: ("workload", "constraints"); a serving job's are prefixed "serve." (its old names differ:
#: `quantization` is a serving name only, so a training job with it is rejected as unknown).
JOB_FIELD_ALIASES: dict[str, dict[str, str]] = {
    "constraints": {
        "gpus": "gpu_types",
        "checkpointing": "activation_checkpointing",
        "memory_headroom_gib": "min_memory_headroom_gib",
        "memory_headroom_fraction": "min_memory_headroom_fraction",
    },
    "calibration": {
        "gpus": "num_gpus",
        "checkpointing": "activation_checkpointing",
        "zero": "zero_stage",
        "gpus_per_node": "gpus_per_instance",
    },
    "workload": {"images": "samples"},
    "serve.workload": {"quantization": "precision", "kv_precision": "kv_cache_precision"},
    "serve.constraints": {
        "gpus": "gpu_types",
        "headroom": "min_capacity_headroom_fraction",
        "tp": "tp_degrees",
    },
    **{table: _HARDWARE_ENTRY for table in HARDWARE_TABLES},
}

_warned: set[str] = set()


def warn_renamed(old: str, new: str) -> None:
    """Warn once per process that `old` is now called `new`."""
    if old in _warned:
        return
    _warned.add(old)
    notices.warn(
        f"{old} is now called {new}; the old name still works but will be removed in the next schema version",
        DeprecatedName,
    )


def shown_table(table: str) -> str:
    """The table as a job file spells it ("serve.workload" -> "workload")."""
    return table.removeprefix("serve.")


def rename_old_fields(data: object, table: str) -> Any:
    """`data` (a decoded TOML table) with old field names of `table` renamed to current ones.

    Raises:
        ValueError: both the old and the new name are given.
    """
    if not isinstance(data, dict):
        return data
    out = dict(data)
    shown = shown_table(table)
    for old, new in JOB_FIELD_ALIASES.get(table, {}).items():
        if old not in out:
            continue
        if new in out:
            raise ValueError(f"give {new} or its old name {old}, not both")
        warn_renamed(f"{shown}.{old}", f"{shown}.{new}")
        out[new] = out.pop(old)
    return out
