"""Measured runs of per-sample models kept in the calibration store (`ccopt calibrate` on a
profile, or `ccopt calibrate --from` a `ccopt measure` file): "profiles" → model name → runs.

Every later estimate and plan of that model adds the stored runs to its measured points (the
job's own `[model.measured]` first, the preset's last), so a run on GPU type G sets the speed
and memory on G and narrows the band there (optimizer.model.profile_time.profile_interval).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from optimizer.errors import ConfigError
from optimizer.inputs.calibration_file import calibration_path, check_calibration_store
from optimizer.inputs.calibration_store import checked_store, update_store
from optimizer.model.profile import MeasuredPoint
from optimizer.model.setup import CHECKPOINTING, OPTIMIZERS, TRAIN_PRECISIONS

__all__ = ["load_profile_points", "save_profile_point", "point_record", "MEMORY_METRICS"]

MEMORY_METRICS = ("allocated", "reserved", "device")
_NUMBERS = {"micro_batch": (1, 2**20), "samples_per_s": (1e-9, 1e12), "num_gpus": (1, 10**6)}
_CHOICES = {
    "precision": TRAIN_PRECISIONS,
    "optimizer": OPTIMIZERS,
    "activation_checkpointing": CHECKPOINTING,
    "memory_metric": MEMORY_METRICS,
}
#: a record's old key (stores written before the one vocabulary) -> its current key
_OLD_KEYS = {"checkpointing": "activation_checkpointing"}


def point_record(point: MeasuredPoint) -> dict[str, Any]:
    """A measured point as the store keeps it (no resolved GpuSpec)."""
    return {
        "gpu": point.gpu_id,
        "precision": point.precision,
        "micro_batch": point.micro_batch,
        "samples_per_s": point.samples_per_s,
        "num_gpus": point.num_gpus,
        "peak_memory_gib": point.peak_memory_gib,
        "memory_metric": point.memory_metric,
        "activation_checkpointing": point.checkpointing,
        "optimizer": point.optimizer,
        "source": point.source,
    }


def _current_keys(record: dict[str, Any]) -> dict[str, Any]:
    """A stored run with old key names read as the current ones (a store written before the
    rename keeps loading; it is rewritten with the current names on the next save)."""
    return {_OLD_KEYS.get(k, k) if _OLD_KEYS.get(k, k) not in record else k: v for k, v in record.items()}


def _point(record: Any, where: str) -> MeasuredPoint:
    """One stored run, checked: a one-line ConfigError names the field and the allowed values."""
    if not isinstance(record, dict) or not isinstance(record.get("gpu"), str):
        raise ConfigError(
            f"{where}: must be a table with gpu, precision, micro_batch, samples_per_s; delete or fix it"
        )
    record = _current_keys(record)
    for key, (lo, hi) in _NUMBERS.items():
        value = record.get(key, 1)
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or not lo <= value <= hi
        ):
            raise ConfigError(
                f"{where}.{key}: {value!r} is not allowed; allowed: a number in [{lo:g}, {hi:g}]"
            )
    peak = record.get("peak_memory_gib")
    if peak is not None and (
        isinstance(peak, bool) or not isinstance(peak, (int, float)) or not math.isfinite(peak) or peak <= 0
    ):
        raise ConfigError(f"{where}.peak_memory_gib: {peak!r} is not allowed; allowed: a number > 0 or null")
    defaults = {
        "precision": "bf16",
        "optimizer": "adamw",
        "activation_checkpointing": "none",
        "memory_metric": "device",
    }
    for key, allowed in _CHOICES.items():
        if record.get(key, defaults[key]) not in allowed:
            raise ConfigError(
                f"{where}.{key}: {record.get(key)!r} is not allowed; allowed: {', '.join(allowed)}"
            )
    return MeasuredPoint(
        gpu_id=record["gpu"],
        precision=record.get("precision", "bf16"),
        micro_batch=int(record["micro_batch"]),
        samples_per_s=float(record["samples_per_s"]),
        num_gpus=int(record.get("num_gpus", 1)),
        peak_memory_gib=None if peak is None else float(peak),
        memory_metric=record.get("memory_metric", "device"),
        checkpointing=record.get("activation_checkpointing", "none"),
        optimizer=record.get("optimizer", "adamw"),
        source=str(record.get("source", "")),
    )


def load_profile_points(name: str, path: Path | None = None) -> tuple[MeasuredPoint, ...]:
    """The stored runs of model `name` (newest first); empty when none or no store."""
    file, store = checked_store(path)
    profiles = store.get("profiles", {})
    if not isinstance(profiles, dict):
        raise ConfigError(
            f"calibration store {file}: profiles: must be a table of model name → runs; delete or fix it"
        )
    runs = profiles.get(name, [])
    if not isinstance(runs, list):
        raise ConfigError(f"calibration store {file}: profiles.{name}: must be a list of runs")
    return tuple(_point(r, f"calibration store {file}: profiles.{name}[{i}]") for i, r in enumerate(runs))


def save_profile_point(name: str, point: MeasuredPoint, path: Path | None = None) -> Path:
    """Store a run of model `name` (replacing one on the same GPU type, precision, micro-batch
    and checkpointing); under the store's lock, atomic write."""
    file = path or calibration_path()
    check_calibration_store(file)
    record = point_record(point)
    _point(record, f"calibrate {name}")
    update_store(lambda data: _add_run(data, name, point, record), file)
    return file


def _add_run(data: dict[str, Any], name: str, point: MeasuredPoint, record: dict[str, Any]) -> None:
    """Put `record` first in the store document's runs of `name` (see save_profile_point)."""
    runs = [
        r
        for r in data.setdefault("profiles", {}).get(name, [])
        if not isinstance(r, dict)
        or (
            r.get("gpu"),
            r.get("precision"),
            r.get("micro_batch"),
            _current_keys(r).get("activation_checkpointing", "none"),
        )
        != (point.gpu_id, point.precision, point.micro_batch, point.checkpointing)
    ]
    data["profiles"][name] = [record, *(_current_keys(r) if isinstance(r, dict) else r for r in runs)]
