"""What the tool knows, as plain rows: model presets (`ccopt models`), the GPU catalog
(`ccopt gpus`), stack profiles (`ccopt stacks`), cloud offerings with their price-sanity flags
(`ccopt prices`) and the price-table refresh (`ccopt prices refresh`)."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from optimizer.inputs.gpus import load_gpus
from optimizer.model.presets import PRESETS, PROFILE_PRESETS
from optimizer.model.stacks import get_stack, stack_names
from optimizer.pricing.catalog import filter_rows, load_catalog_rows
from optimizer.pricing.refresh import MAX_DEADLINE_S, MAX_TIMEOUT_S, RefreshResult, refresh_prices
from optimizer.pricing.sanity import (
    KeyedRow,
    PriceFlag,
    RowKey,
    catalog_flags,
    price_max_age_days,
    record_key,
    row_key,
)
from optimizer.pricing.schema import rows_to_frame
from optimizer.report.contract.catalogs import GpusOutput, ModelsOutput, PricesOutput, StacksOutput
from optimizer.report.contract.common import emit_list

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "model_rows",
    "models_json",
    "gpu_rows",
    "gpus_json",
    "stack_rows",
    "stacks_json",
    "Flags",
    "PriceListing",
    "price_listing",
    "offerings_to_records",
    "refresh_prices",
    "RefreshResult",
    "MAX_DEADLINE_S",
    "MAX_TIMEOUT_S",
]

#: the price-sanity flags of the catalog rows, by (provider, instance_type, region, pricing_model)
Flags = Mapping[RowKey, tuple[PriceFlag, ...]]
#: the `price` block (source, as_of, age_days, stale, note, catalog price) of each row, same keys
Origins = Mapping[RowKey, dict[str, Any]]

_SORT = ["usd_per_gpu_hour", "provider", "instance_type", "region", "pricing_model"]
#: JSON names aligned with plan output (issue 19 item 2), written beside the catalog columns
_ALIASES = {"gpu": "gpu_id", "instance": "instance_type", "pricing": "pricing_model"}
_NO_SHAPE = (
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "ffn",
    "ffn_kind",
    "vocab",
    "moe_experts",
    "max_seq_len",
)


def model_rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(model-shape presets, per-sample profile presets), each a row of `ccopt models`."""
    shapes: list[dict[str, Any]] = [
        {
            "name": s.name,
            "params": s.params(),
            "active_params": s.active_params(),
            "layers": s.layers,
            "hidden": s.hidden,
            "heads": s.heads,
            "kv_heads": s.n_kv_heads,
            "ffn": s.ffn,
            "ffn_kind": s.ffn_kind,
            "vocab": s.vocab,
            "moe_experts": s.moe_experts,
            "max_seq_len": s.max_seq_len,
            "sample_tokens": s.sample_tokens,
        }
        for s in PRESETS.values()
    ]
    profiles: list[dict[str, Any]] = [
        {
            "name": p.name,
            "kind": "profile",
            "params": p.params(),
            "active_params": p.params(),
            **dict.fromkeys(_NO_SHAPE),
            "sample_unit": p.sample_unit,
            "forward_gflops_per_sample": p.forward_gflops_per_sample,
            "measured_points": len(p.measured),
            "notes": p.notes,
        }
        for p in PROFILE_PRESETS.values()
    ]
    return shapes, profiles


def models_json() -> list[dict[str, Any]]:
    """`ccopt models --json`: every preset, shapes then profiles."""
    shapes, profiles = model_rows()
    return emit_list(ModelsOutput, shapes + profiles)


def gpu_rows() -> list[dict[str, Any]]:
    """Every GPU of the catalog: its spec fields (GpuSpec) plus `gpu` and `gpu_memory_gib`, the
    names plans use.

    Raises:
        CatalogError: the GPU tables fail validation.
    """
    return [dict(asdict(s), gpu=s.gpu_id, gpu_memory_gib=s.memory_gib) for s in load_gpus().values()]


def gpus_json() -> list[dict[str, Any]]:
    """`ccopt gpus --json`."""
    return emit_list(GpusOutput, gpu_rows())


def stack_rows() -> list[dict[str, Any]]:
    """Every software-stack profile with its own values, each with its source or marked a guess."""
    rows = []
    for name in stack_names():
        prof = get_stack(name)
        rows.append(
            {
                "name": prof.name,
                "kind": prof.kind,
                "description": prof.description,
                "values": {
                    k: {
                        "value": list(v.value) if isinstance(v.value, tuple) else v.value,
                        "guess": v.guess,
                        "source": v.source,
                    }
                    for k, v in sorted(prof.provenance.items())
                },
            }
        )
    return rows


def stacks_json() -> list[dict[str, Any]]:
    """`ccopt stacks --json`."""
    return emit_list(StacksOutput, stack_rows())


def offerings_to_records(
    frame: pd.DataFrame, flags: Flags | None = None, origins: Origins | None = None
) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts: the catalog columns (NaN -> None; max_instances as int), then
    `gpu`, `instance`, `pricing` (the plan's names for gpu_id, instance_type, pricing_model),
    `flags` ([{"rule", "reason"}], empty when none) and, with `origins`, `price_source` and
    `price` (source, as_of, age_days, stale, note, catalog price: as on plan lines)."""
    records = frame.to_dict(orient="records")
    for record in records:
        for key, value in record.items():
            if isinstance(value, float) and math.isnan(value):
                record[key] = None
        if record.get("max_instances") is not None:
            record["max_instances"] = int(record["max_instances"])
        for alias, column in _ALIASES.items():
            record[alias] = record[column]
        record["flags"] = [f.as_dict() for f in (flags or {}).get(record_key(record), ())]
        if origins is not None and record_key(record) in origins:
            record["price"] = origins[record_key(record)]
            record["price_source"] = record["price"]["source"]
    return records


def _origins(rows: Sequence[Any], today: dt.date | None = None) -> Origins:
    """The `price` block of each row (source, date, age, stale, what your prices changed)."""
    limit = price_max_age_days()
    day = today or dt.date.today()
    return {
        row_key(r): {
            "source": r.origin,
            "as_of": r.as_of.isoformat(),
            "age_days": (day - r.as_of).days,
            "stale": (day - r.as_of).days > limit,
            "max_age_days": limit,
            "note": r.overlay_note,
            "catalog_usd_per_hour": r.catalog_usd_per_hour,
        }
        for r in rows
    }


@dataclass(frozen=True)
class PriceListing:
    """Offerings matching the filters, cheapest GPU-hour first, and where the prices come from."""

    frame: pd.DataFrame  # the catalog columns (a valid offerings file as CSV)
    flags: Flags  # judged against the whole catalog, before the filters
    description: str  # the tables read: source, as-of date
    age_days: int
    origins: Origins = field(default_factory=dict)  # per row: source, date, age, stale, note

    def flags_of(self, row: KeyedRow) -> tuple[PriceFlag, ...]:
        """The flags of one row of `frame` (itertuples)."""
        return self.flags.get(row_key(row), ())

    def to_json(self) -> list[dict[str, Any]]:
        """`ccopt prices --json`: the rows with their flags, checked against the contract."""
        return emit_list(PricesOutput, offerings_to_records(self.frame, self.flags, self.origins))

    def price_of(self, row: KeyedRow) -> dict[str, Any]:
        """The `price` block of one row of `frame` (itertuples)."""
        return self.origins.get(row_key(row), {})


def price_listing(
    *,
    gpus: Sequence[str] | None = None,
    providers: Sequence[str] | None = None,
    regions: Sequence[str] | None = None,
    pricing: Sequence[str] | None = None,
    min_instances: int | None = None,
    flagged: bool = False,
    offline: bool | None = None,
) -> PriceListing:
    """The offerings of the price tables (user cache, else bundled) that pass the filters.

    Args:
        flagged: only rows flagged by a price-sanity rule.
        offline: True forces the bundled tables; None reads CCOPT_OFFLINE.

    Raises:
        OptimizerError: a filter names nothing known, or the tables fail validation.
    """
    loaded = load_catalog_rows(offline=offline)
    rows: Sequence[Any] = filter_rows(
        loaded.rows,
        gpus=gpus,
        providers=providers,
        regions=regions,
        pricing=pricing,
        min_instances=min_instances,
    )
    flags = catalog_flags(loaded.rows)
    if flagged:
        rows = [r for r in rows if row_key(r) in flags]
    frame = rows_to_frame(rows).sort_values(_SORT, kind="mergesort").reset_index(drop=True)
    return PriceListing(frame, flags, loaded.description, loaded.age.age_days, _origins(rows))
