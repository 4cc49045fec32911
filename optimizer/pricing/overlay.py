"""The user's prices applied to the catalog rows: discounts, fixed prices, extra rows.

Order: discounts take a fraction off the catalog price of a provider's pricing model; a fixed
price then replaces the price of the rows it names (a fixed price is final, never discounted);
extra rows are added as given. Every changed row says so (origin "overlay", overlay_note, the
catalog price before) and every name is checked against the catalog (case-insensitive, with
"did you mean"): a price that matches nothing is bad input, never silently ignored.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import ValidationError

from optimizer.errors import ConfigError, did_you_mean
from optimizer.inputs.gpus import load_gpus, resolve_gpu_id
from optimizer.inputs.jobs.pricing import ExtraRow, FixedPrice, PriceOverlay
from optimizer.pricing.names import catalog_rows_named
from optimizer.pricing.sanity import row_key
from optimizer.pricing.schema import OfferingRow
from optimizer.vocabulary import COMMITMENT_HOURS

__all__ = ["Overlay", "apply_overlays"]


@dataclass(frozen=True)
class Overlay:
    """One overlay and where it came from (a file path, or "JOB.toml [pricing]")."""

    prices: PriceOverlay
    label: str


_YOURS = " + your prices: "


def _fmt_usd(value: float) -> str:
    return f"{value:.4g}"


def _changed(row: OfferingRow, usd_per_hour: float, note: str, as_of: dt.date | None = None) -> OfferingRow:
    before = row.catalog_usd_per_hour if row.catalog_usd_per_hour is not None else row.usd_per_hour
    notes = note if as_of is not None else "; ".join(filter(None, [row.overlay_note, note]))  # fixed: final
    source = row.source.split(_YOURS)[0]  # the catalog's source, then what your prices did
    return row.model_copy(
        update={
            "usd_per_hour": usd_per_hour,
            "usd_per_gpu_hour": usd_per_hour / row.gpus_per_instance,
            "origin": "overlay",
            "overlay_note": notes,
            "source": f"{source}{_YOURS}{notes}",
            "catalog_usd_per_hour": before,
            # a fixed price dates from the overlay; a discounted one keeps its list price's date
            "as_of": as_of or row.as_of,
        }
    )


def _targets(rows: list[OfferingRow], entry: FixedPrice, field: str) -> list[OfferingRow]:
    """The rows a fixed price names; ConfigError when it names nothing."""
    pool = rows
    if entry.provider is not None:
        pool = catalog_rows_named(
            rows, entry.provider, entry.instance, f"{field}.provider", f"{field}.instance"
        )
    if entry.gpu is not None:
        gpu_id = resolve_gpu_id(entry.gpu, f"{field}.gpu")
        pool = [r for r in pool if r.gpu_id == gpu_id]
        if not pool:
            where = f" of {entry.provider.lower()}" if entry.provider else ""
            raise ConfigError(f"{field}.gpu: no offering{where} in the price catalog has GPU {gpu_id}")
    if entry.region is not None:
        regions = sorted({r.region for r in pool})
        pool = [r for r in pool if r.region.lower() == entry.region.lower()]
        if not pool:
            raise ConfigError(
                f"{field}.region: {entry.region!r} matches none of these offerings"
                f"{did_you_mean(entry.region, regions)}; allowed: {', '.join(regions)} (case-insensitive)"
            )
    if entry.pricing:
        models = sorted({r.pricing_model for r in pool})
        pool = [r for r in pool if r.pricing_model in entry.pricing]
        if not pool:
            raise ConfigError(
                f"{field}.pricing: none of {', '.join(entry.pricing)} is offered here; "
                f"allowed: {', '.join(models)}"
            )
    return pool


def _fixed(rows: list[OfferingRow], overlay: Overlay, today: dt.date) -> list[OfferingRow]:
    """The rows with the overlay's fixed prices; two entries of one overlay that price the same
    row differently are refused (neither silently wins)."""
    fixed_by: dict[tuple[str, str, str, str], tuple[int, float]] = {}
    for i, entry in enumerate(overlay.prices.prices):
        field = f"{overlay.label}: prices[{i}]"
        targets = _targets(rows, entry, field)
        for r in targets:
            _check_one_price(fixed_by, r, i, entry.instance_usd_per_hour(r.gpus_per_instance), overlay.label)
        keys = {row_key(r) for r in targets}
        unit = "$/h" if entry.usd_per_hour is not None else "$/GPU-h"
        price = entry.usd_per_hour if entry.usd_per_hour is not None else entry.usd_per_gpu_hour
        note = f"fixed {_fmt_usd(float(price or 0))} {unit} ({overlay.label})"
        rows = [
            _changed(r, entry.instance_usd_per_hour(r.gpus_per_instance), note, overlay.prices.as_of or today)
            if row_key(r) in keys
            else r
            for r in rows
        ]
    return rows


def _check_one_price(
    fixed_by: dict[tuple[str, str, str, str], tuple[int, float]],
    row: OfferingRow,
    index: int,
    usd_per_hour: float,
    label: str,
) -> None:
    """Record that entry `index` prices `row`; ConfigError if an earlier entry priced it otherwise."""
    key = row_key(row)
    earlier = fixed_by.setdefault(key, (index, usd_per_hour))
    if earlier[0] != index and not math.isclose(earlier[1], usd_per_hour, rel_tol=1e-9):
        raise ConfigError(
            f"{label}: prices[{earlier[0]}] and prices[{index}] both fix {row.provider} "
            f"{row.instance_type} {row.region} {row.pricing_model}, at ${earlier[1]:,.2f}/h and "
            f"${usd_per_hour:,.2f}/h; allowed: one price per offering (narrow one entry "
            "with instance, region or pricing)"
        )


def _extra(entry: ExtraRow, field: str, as_of: dt.date, label: str) -> OfferingRow:
    gpu_id = resolve_gpu_id(entry.gpu, f"{field}.gpu")
    spec = load_gpus()[gpu_id]
    usd = entry.instance_usd_per_hour(entry.gpus_per_instance)
    given = entry.inter_node_gbps is not None
    try:
        return OfferingRow.model_validate(
            {
                "provider": entry.provider.lower(),
                "instance_type": entry.instance,
                "region": entry.region,
                "gpu_id": gpu_id,
                "gpus_per_instance": entry.gpus_per_instance,
                "vcpus": entry.vcpus,
                "ram_gib": entry.ram_gib,
                "intra_node_link": spec.intra_node_link,
                "intra_node_bw_gb_s": spec.intra_node_bw_gb_s,
                # no figure given: the GPU's default fabric, marked as a guess
                "inter_node_gbps": entry.inter_node_gbps if given else spec.default_inter_node_gbps,
                "inter_node_kind": entry.inter_node_kind,
                "inter_node_is_default": not given,
                "max_instances": entry.max_instances,
                "pricing_model": entry.pricing,
                "usd_per_hour": usd,
                "usd_per_gpu_hour": usd / entry.gpus_per_instance,
                "commitment_hours": COMMITMENT_HOURS[entry.pricing],
                "derived": False,
                "as_of": as_of,
                "source": f"your prices ({label})",
                "origin": "overlay",
                "overlay_note": f"your row ({label})",
            }
        )
    except ValidationError as exc:  # e.g. a price above the sanity ceiling of the catalog
        err = exc.errors()[0]
        column = err["loc"][0] if err["loc"] else "?"
        raise ConfigError(f"{field}.{column}: {err['msg']} (got {err.get('input')!r})") from None


def _rows(rows: list[OfferingRow], overlay: Overlay, today: dt.date) -> list[OfferingRow]:
    seen = {row_key(r): r for r in rows}
    for i, entry in enumerate(overlay.prices.rows):
        field = f"{overlay.label}: rows[{i}]"
        row = _extra(entry, field, overlay.prices.as_of or today, overlay.label)
        if row_key(row) in seen:
            what = " ".join(row_key(row))
            raise ConfigError(
                f"{field}: {what} is already an offering; change its price with [[prices]] instead"
            )
        seen[row_key(row)] = row
        rows.append(row)
    return rows


def apply_overlays(
    rows: Sequence[OfferingRow], overlays: Sequence[Overlay], today: dt.date | None = None
) -> tuple[OfferingRow, ...]:
    """The catalog rows with the user's prices applied, overlay after overlay (a job's
    `[pricing]` after the user's file: its fixed prices win; discounts apply once per row and
    pricing model, the later overlay's fraction replacing the earlier one's).

    Raises:
        ConfigError: a provider, instance, GPU, region or pricing model that matches no
            offering, or an extra row that duplicates one (one line naming the field).
    """
    out = list(rows)
    today = today or dt.date.today()
    for overlay in overlays:
        out = _rows(out, overlay, today)
    discounted: dict[tuple[str, str], float] = {}
    for overlay in overlays:  # the last fraction given for (provider, model) wins
        for provider, discounts in overlay.prices.discounts.items():
            field = f"{overlay.label}: discounts.{provider}"
            catalog_rows_named(out, provider, None, field, field)
            for model, fraction in discounts.by_model().items():
                discounted[(provider.lower(), model)] = fraction
    labels = {
        (p.lower(), m): o.label for o in overlays for p, d in o.prices.discounts.items() for m in d.by_model()
    }
    out = [
        _changed(
            r,
            r.usd_per_hour * (1 - discounted[(r.provider, r.pricing_model)]),  # price × (1 − fraction)
            f"{r.pricing_model} {discounted[(r.provider, r.pricing_model)]:.0%} off "
            f"({labels[(r.provider, r.pricing_model)]})",
        )
        if (r.provider, r.pricing_model) in discounted and r.origin != "overlay"  # not extra rows
        else r
        for r in out
    ]
    for overlay in overlays:
        out = _fixed(out, overlay, today)
    return tuple(out)
