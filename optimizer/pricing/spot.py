"""Spot interruption rates per provider and GPU (pricing_data/spot_interruptions.csv): the
published band where there is one, else the table's stated guess; a job may override it."""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass

from optimizer.errors import CatalogError
from optimizer.inputs.gpus import data_path

__all__ = ["SpotRate", "spot_rate"]


@dataclass(frozen=True)
class SpotRate:
    """Interruptions per instance-day of a spot offering and where the figure comes from."""

    per_instance_day: float
    source: str  # the row's source, "GUESS", or "job" (constraints override)
    guess: bool


@functools.lru_cache(maxsize=1)
def _table() -> dict[tuple[str, str], SpotRate]:
    path = data_path("spot_interruptions.csv")
    out: dict[tuple[str, str], SpotRate] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            try:
                rate = float(row["interruptions_per_instance_day"])
            except (KeyError, ValueError):
                raise CatalogError(
                    f"{path}: row {line}, column 'interruptions_per_instance_day': not a number"
                ) from None
            if rate < 0:
                raise CatalogError(
                    f"{path}: row {line}, column 'interruptions_per_instance_day': must be ≥ 0"
                )
            source = row.get("source", "").strip()
            out[(row["provider"].strip(), row["gpu_id"].strip())] = SpotRate(
                rate, source, source.upper().startswith("GUESS")
            )
    if ("*", "*") not in out:
        raise CatalogError(f"{path}: needs a default row with provider and gpu_id '*'")
    return out


def spot_rate(provider: str, gpu_id: str, override: float | None = None) -> SpotRate:
    """The rate for a spot offering: the job's override, the (provider, GPU) row, the
    provider's '*' row, else the table's default ('*', '*')."""
    if override is not None:
        return SpotRate(override, "job (constraints.spot_interruptions_per_instance_day)", False)
    t = _table()
    return t.get((provider, gpu_id)) or t.get((provider, "*")) or t[("*", "*")]
