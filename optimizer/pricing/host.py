"""Host facts of the bundled tables: local NVMe per instance, storage and transfer prices.

`pricing_data/instance_host.csv` (local disk per provider × instance) and
`pricing_data/provider_storage.csv` (egress, ingress and object-storage prices per provider ×
region) are read once, validated, and answered through typed look-ups; an empty cell stays
None (unknown), never a guess.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass

from optimizer.inputs.gpus import data_path
from optimizer.pricing.schema import read_csv_number

__all__ = ["StorageRates", "storage_rates", "storage_providers", "local_nvme_gb", "ALL_REGIONS"]

#: provider_storage.csv region of a provider that prices every region the same
ALL_REGIONS = "all"


@dataclass(frozen=True)
class StorageRates:
    """Transfer and object-storage prices of one provider/region (None = not published / not read)."""

    provider: str
    region: str
    egress_internet_usd_per_gb: float | None
    egress_inter_region_usd_per_gb: float | None
    ingress_usd_per_gb: float | None
    object_storage_usd_per_gb_month: float | None
    service: str
    source: str


@functools.lru_cache(maxsize=2)
def _storage(path: str) -> dict[tuple[str, str], StorageRates]:
    out: dict[tuple[str, str], StorageRates] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        for line, raw in enumerate(csv.DictReader(handle), start=2):

            def num(col: str, raw: dict[str, str] = raw, line: int = line) -> float | None:
                return read_csv_number(raw.get(col) or "", f"{path}: row {line}", col)

            key = (raw["provider"].strip().lower(), raw["region"].strip())
            out[key] = StorageRates(
                key[0],
                key[1],
                num("egress_internet_usd_per_gb"),
                num("egress_inter_region_usd_per_gb"),
                num("ingress_usd_per_gb"),
                num("object_storage_usd_per_gb_month"),
                (raw.get("object_storage_service") or "").strip(),
                (raw.get("source") or "").strip(),
            )
    return out


@functools.lru_cache(maxsize=2)
def _nvme(path: str) -> dict[tuple[str, str], float | None]:
    out: dict[tuple[str, str], float | None] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        for line, raw in enumerate(csv.DictReader(handle), start=2):
            out[(raw["provider"].strip().lower(), raw["instance_type"].strip())] = read_csv_number(
                raw.get("local_nvme_gb") or "", f"{path}: row {line}", "local_nvme_gb"
            )
    return out


def storage_rates(provider: str, region: str | None) -> StorageRates | None:
    """The rates of `provider` in `region`: its own row, else the provider's `all` row, else
    (region None) the provider's only row; None when the provider has no row there."""
    table = _storage(str(data_path("provider_storage.csv")))
    p = provider.lower()
    if region is not None and (p, region) in table:
        return table[(p, region)]
    if (p, ALL_REGIONS) in table:
        return table[(p, ALL_REGIONS)]
    mine = [r for (prov, _reg), r in table.items() if prov == p]
    if region is None and len(mine) == 1:
        return mine[0]
    return None


def storage_providers() -> list[str]:
    """Providers with a row in provider_storage.csv."""
    return sorted({p for p, _ in _storage(str(data_path("provider_storage.csv")))})


def storage_regions(provider: str) -> list[str]:
    """Regions of a provider in provider_storage.csv."""
    return sorted(r for p, r in _storage(str(data_path("provider_storage.csv"))) if p == provider.lower())


def local_nvme_gb(provider: str, instance_type: str) -> float | None:
    """Local NVMe/SSD of one instance in GB (0: network disks only; None: unknown)."""
    return _nvme(str(data_path("instance_host.csv"))).get((provider.lower(), instance_type))
