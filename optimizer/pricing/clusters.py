"""Our own table of multi-node clusters and capacity blocks (pricing_data/clusters.csv).

Specialist clouds (Nebius, Lambda 1-Click Clusters, Crusoe, CoreWeave, Voltage Park) and AWS EC2
Capacity Blocks sell clusters with a fabric, a node range, a minimum term and a billing increment
that the SkyPilot catalog does not carry. Each row cites the page its price, fabric and terms
were read from. Priced rows become offering rows (`cluster_offering_rows`, appended by
build_bundled and kept by `prices refresh`); their terms reach the cost through `terms_for`;
rows sold by quote only have no price and are named in plans instead (`quote_only_clusters`).
"""

from __future__ import annotations

import csv
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from optimizer.errors import CatalogError
from optimizer.inputs.gpus import data_path, load_gpus
from optimizer.pricing.schema import COLUMNS, csv_number, read_csv_number
from optimizer.pricing.terms import NO_TERMS, OfferingTerms
from optimizer.vocabulary import COMMITMENT_HOURS, PRICING_MODELS

__all__ = [
    "CLUSTERS_CSV",
    "CLUSTER_COLUMNS",
    "ClusterRow",
    "load_clusters",
    "cluster_offering_rows",
    "cluster_keys",
    "terms_for",
    "quote_only_clusters",
]

CLUSTERS_CSV = "clusters.csv"
#: the columns of pricing_data/clusters.csv, in file order (documented in pricing_data/README.md)
CLUSTER_COLUMNS = (
    "provider",
    "instance_type",
    "region",
    "gpu_id",
    "gpus_per_node",
    "pricing_model",
    "usd_per_gpu_hour",
    "access",
    "min_nodes",
    "max_nodes",
    "min_term_hours",
    "billing_increment_hours",
    "max_term_hours",
    "booking_horizon_days",
    "inter_node_kind",
    "inter_node_gbps",
    "inter_node_is_default",
    "vcpus",
    "ram_gib",
    "price_source",
    "price_as_of",
    "fabric_source",
    "fabric_as_of",
    "terms_source",
    "notes",
)
_ACCESS = ("self_serve", "quote")
_Key = tuple[str, str, str, str]


@dataclass(frozen=True)
class ClusterRow:
    """One cluster offering as its seller's pages state it."""

    provider: str
    instance_type: str
    region: str
    gpu_id: str
    gpus_per_node: int
    pricing_model: str
    usd_per_gpu_hour: float | None  # None: sold by quote, no published price
    terms: OfferingTerms
    inter_node_kind: str
    inter_node_gbps: float
    inter_node_is_default: bool
    vcpus: str
    ram_gib: str
    price_source: str
    price_as_of: str
    fabric_source: str

    @property
    def key(self) -> _Key:
        return (self.provider, self.instance_type, self.region, self.pricing_model)

    @property
    def label(self) -> str:
        return f"{self.provider} {self.instance_type} ({self.gpus_per_node}× {self.gpu_id})"


def _number(raw: Mapping[str, str], column: str, where: str) -> float | None:
    return read_csv_number(raw.get(column) or "", where, column)


def _terms(raw: Mapping[str, str], where: str) -> OfferingTerms:
    min_nodes = _number(raw, "min_nodes", where)
    max_nodes = _number(raw, "max_nodes", where)
    horizon = _number(raw, "booking_horizon_days", where)
    return OfferingTerms(
        min_nodes=int(min_nodes or 1),
        max_nodes=None if max_nodes is None else int(max_nodes),
        min_term_hours=_number(raw, "min_term_hours", where) or 0.0,
        billing_increment_hours=_number(raw, "billing_increment_hours", where) or 0.0,
        max_term_hours=_number(raw, "max_term_hours", where),
        booking_horizon_days=None if horizon is None else int(horizon),
        access=raw["access"],
        source=raw["terms_source"],
    )


def _row(raw: Mapping[str, str], where: str) -> ClusterRow:
    """One validated row: known GPU, pricing model and access; a price unless sold by quote."""
    if raw["gpu_id"] not in load_gpus():
        raise CatalogError(f"{where}, column 'gpu_id': unknown GPU id {raw['gpu_id']!r}")
    if raw["pricing_model"] not in PRICING_MODELS or COMMITMENT_HOURS[raw["pricing_model"]]:
        raise CatalogError(f"{where}, column 'pricing_model': allowed: on_demand, spot, capacity_block")
    if raw["access"] not in _ACCESS:
        raise CatalogError(f"{where}, column 'access': allowed: {', '.join(_ACCESS)}")
    price = _number(raw, "usd_per_gpu_hour", where)
    if price is None and raw["access"] != "quote":
        raise CatalogError(f"{where}, column 'usd_per_gpu_hour': a self-serve row needs its published price")
    if price is not None and not raw["price_as_of"].strip():
        raise CatalogError(f"{where}, column 'price_as_of': a price needs the date it was read")
    terms = _terms(raw, where)
    if terms.is_block and not terms.billing_increment_hours:
        raise CatalogError(f"{where}, column 'billing_increment_hours': a block needs its length step")
    return ClusterRow(
        provider=raw["provider"],
        instance_type=raw["instance_type"],
        region=raw["region"],
        gpu_id=raw["gpu_id"],
        gpus_per_node=int(_number(raw, "gpus_per_node", where) or 0) or 1,
        pricing_model=raw["pricing_model"],
        usd_per_gpu_hour=price or None,
        terms=terms,
        inter_node_kind=raw["inter_node_kind"],
        inter_node_gbps=_number(raw, "inter_node_gbps", where) or 0.0,
        inter_node_is_default=raw["inter_node_is_default"] == "true",
        vcpus=raw["vcpus"],
        ram_gib=raw["ram_gib"],
        price_source=raw["price_source"],
        price_as_of=raw["price_as_of"],
        fabric_source=raw["fabric_source"],
    )


@functools.lru_cache(maxsize=4)
def load_clusters(path: Path | None = None) -> tuple[ClusterRow, ...]:
    """The rows of pricing_data/clusters.csv (or `path`), validated once and cached.

    Raises:
        CatalogError: other columns than CLUSTER_COLUMNS, a bad value or a repeated key, naming
            the file and the line.
    """
    path = path or data_path(CLUSTERS_CSV)
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) != CLUSTER_COLUMNS:
            raise CatalogError(f"{path}: columns must be exactly {', '.join(CLUSTER_COLUMNS)}")
        rows: dict[_Key, ClusterRow] = {}
        for line, raw in enumerate(reader, start=2):
            row = _row(raw, f"{path}: row {line}")
            if row.key in rows:
                raise CatalogError(f"{path}: row {line}: repeats {row.key}")
            rows[row.key] = row
    return tuple(rows.values())


def cluster_offering_rows(path: Path | None = None) -> list[dict[str, str]]:
    """The priced cluster rows as offerings.csv rows (COLUMNS): price per instance = per GPU ×
    GPUs per node; `source` names the price page and the fabric page."""
    gpus = load_gpus()
    out: list[dict[str, str]] = []
    for row in load_clusters(path):
        if row.usd_per_gpu_hour is None:
            continue
        spec = gpus[row.gpu_id]
        values = {
            "provider": row.provider,
            "instance_type": row.instance_type,
            "region": row.region,
            "gpu_id": row.gpu_id,
            "gpus_per_instance": str(row.gpus_per_node),
            "vcpus": row.vcpus,
            "ram_gib": row.ram_gib,
            "intra_node_link": spec.intra_node_link,
            "intra_node_bw_gb_s": csv_number(spec.intra_node_bw_gb_s),
            "inter_node_gbps": csv_number(row.inter_node_gbps),
            "inter_node_kind": row.inter_node_kind,
            "inter_node_is_default": str(row.inter_node_is_default).lower(),
            "max_instances": "" if row.terms.max_nodes is None else str(row.terms.max_nodes),
            "pricing_model": row.pricing_model,
            "usd_per_hour": csv_number(row.usd_per_gpu_hour * row.gpus_per_node),
            "usd_per_gpu_hour": csv_number(row.usd_per_gpu_hour),
            "commitment_hours": "0",
            "derived": "false",
            "as_of": row.price_as_of,
            "source": f"clusters.csv: {row.price_source}",
        }
        out.append({c: values[c] for c in COLUMNS})
    return out


def cluster_keys() -> set[_Key]:
    """(provider, instance_type, region, pricing_model) of every row of the bundled table."""
    return {row.key for row in load_clusters()}


def terms_for(provider: str, instance: str, region: str, pricing_model: str) -> OfferingTerms:
    """The terms of a catalog row: its clusters.csv row's, else none (billed per hour used)."""
    for row in load_clusters():
        if row.key == (provider, instance, region, pricing_model):
            return row.terms
    return NO_TERMS


def quote_only_clusters(gpu_ids: set[str] | None = None) -> list[ClusterRow]:
    """Cluster rows sold by quote only (no published price), for the given GPU types."""
    return [
        r for r in load_clusters() if r.usd_per_gpu_hour is None and (gpu_ids is None or r.gpu_id in gpu_ids)
    ]
