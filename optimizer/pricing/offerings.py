"""The one `Offering` constructor: catalog rows and hardware entries become `Offering`s.

Every planner (train, batch, serve) builds its offerings here, so a catalog row or a box is
priced the same way everywhere; `optimizer.pricing.offering.cost_usd` then prices them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from optimizer.errors import ConfigError
from optimizer.inputs.gpus import load_gpus, resolve_gpu_id
from optimizer.inputs.jobs.train import HardwareEntry
from optimizer.model.hardware import GpuSpec
from optimizer.pricing.catalog import filter_rows
from optimizer.pricing.clusters import terms_for
from optimizer.pricing.host import local_nvme_gb
from optimizer.pricing.names import catalog_rows_named
from optimizer.pricing.offering import Offering
from optimizer.pricing.owned import (
    HOURS_PER_MONTH,
    HardwareSpec,
    capital_usd,
    hardware_from_overrides,
    power_usd_per_hour,
)
from optimizer.pricing.ownership import NO_USAGE, OwnershipTerms, Usage, charge_rates
from optimizer.pricing.sanity import PriceFlag, catalog_flags, flags_of, row_key
from optimizer.pricing.schema import OfferingRow
from optimizer.pricing.spot import spot_rate
from optimizer.pricing.terms import block_start_fits

__all__ = [
    "flag_notes",
    "cloud_offering",
    "cloud_offerings",
    "box_offering",
    "box_spec",
    "ownership_terms",
    "hardware_offerings",
    "job_offerings",
    "block_fits_window",
    "today_utc",
]

_FILTER_FIELDS = {"gpu": "gpu_types", "provider": "providers", "region": "regions"}


def cloud_offering(
    row: OfferingRow,
    *,
    key_prefix: str = "",
    kind: str = "cloud",
    spot_overhead: float | None = 0.0,
    trust_guessed_network: bool = True,
    spot_rate_override: float | None = None,
    availability: Sequence[Any] = (),
    reservation_prepaid: bool = False,
    usd_per_hour: float | None = None,
    max_instances: int | None = None,
    catalog_rows: Sequence[OfferingRow] | None = None,
    flags: tuple[PriceFlag, ...] | None = None,
) -> Offering:
    """One catalog row as an Offering.

    Spot rows get `spot_overhead` (a fixed extra wall time, the old rule) or, when it is None,
    an interruption rate (pricing/spot.py; `spot_rate_override` replaces it); `availability`
    entries (provider, instance or None for all, max_instances) replace the row's cap; with
    `trust_guessed_network` false an instance whose inter-node bandwidth is a guess is usable
    only alone; a prepaid reservation bills per hour
    used (commitment 0). `usd_per_hour` and `max_instances` override the row's (a batch-level
    reservation is billed apart and capped by its size). The Offering carries the row's
    price-sanity `flags` (pricing/sanity.py): given, or judged against `catalog_rows` (the
    whole catalog the row comes from), else none.
    """
    if flags is None:
        flags = flags_of(row, catalog_rows) if catalog_rows is not None else ()
    limit = row.max_instances if max_instances is None else max_instances
    for entry in availability:  # names match case-insensitively (check_availability)
        if entry.provider.lower() == row.provider and (
            entry.instance is None or entry.instance.lower() == row.instance_type.lower()
        ):
            limit = entry.max_instances
    spot = row.pricing_model == "spot"
    rate = spot_rate(row.provider, row.gpu_id, spot_rate_override) if spot and spot_overhead is None else None
    if not trust_guessed_network and row.inter_node_is_default:
        limit = 1
    terms = terms_for(row.provider, row.instance_type, row.region, row.pricing_model)
    return Offering(
        key=f"{key_prefix}{row.provider}/{row.instance_type}/{row.region}/{row.pricing_model}",
        kind=kind,
        provider=row.provider,
        instance=row.instance_type,
        region=row.region,
        pricing=row.pricing_model,
        gpu=_gpu_in_instance(load_gpus()[row.gpu_id], row),
        gpus_per_instance=row.gpus_per_instance,
        inter_node_gbps=row.inter_node_gbps,
        usd_per_hour=row.usd_per_hour if usd_per_hour is None else usd_per_hour,
        max_instances=limit,
        commitment_hours=0.0 if reservation_prepaid else float(row.commitment_hours),
        spot_overhead=(spot_overhead or 0.0) if spot else 0.0,
        spot_interruptions_per_day=rate.per_instance_day if rate else None,
        spot_rate_source=rate.source if rate else "",
        inter_node_kind=row.inter_node_kind,
        inter_node_is_default=row.inter_node_is_default,
        flags=flags,
        vcpus=row.vcpus,
        ram_gib=row.ram_gib,
        local_nvme_gb=local_nvme_gb(row.provider, row.instance_type),
        price_origin=row.origin,
        price_as_of=row.as_of,
        price_note=row.overlay_note,
        catalog_usd_per_hour=row.catalog_usd_per_hour,
        terms=terms,
    )


def cloud_offerings(
    rows: Sequence[OfferingRow],
    *,
    gpus: Iterable[str] | None = None,
    providers: Iterable[str] | None = None,
    regions: Iterable[str] | None = None,
    pricing: Iterable[str] | None = None,
    field_prefix: str = "constraints",
    **options: Any,
) -> list[Offering]:
    """Catalog rows allowed by the filters, as Offerings (options as in `cloud_offering`).

    Each Offering carries its row's price-sanity flags, judged against all of `rows` (pass the
    whole catalog: peers filtered out here, such as on-demand rows for a spot-only job, still
    count as reference).

    Raises:
        ConfigError: an unknown GPU, provider, region or pricing model, naming the job field
            (e.g. "constraints.gpu_types: unknown GPU …").
    """
    try:
        kept = filter_rows(
            rows,
            gpus=gpus,
            providers=providers,
            regions=regions,
            pricing=None if pricing is None else list(pricing),
        )
    except ConfigError as exc:  # name the job-file field: "gpu: …" -> "constraints.gpu_types: …"
        field, _, rest = str(exc).partition(": ")
        raise ConfigError(f"{field_prefix}.{_FILTER_FIELDS.get(field, field)}: {rest}") from None
    flags = catalog_flags(rows)
    return [cloud_offering(row, flags=flags.get(row_key(row), ()), **options) for row in kept]


def _gpu_in_instance(gpu: GpuSpec, row: OfferingRow) -> GpuSpec:
    """The GPU as this instance wires it: the row's intra-node link may differ from the part's
    default (e.g. PCIe cards in one instance, NVLink-bridged pairs in another)."""
    if row.intra_node_bw_gb_s == gpu.intra_node_bw_gb_s and row.intra_node_link == gpu.intra_node_link:
        return gpu
    return replace(gpu, intra_node_bw_gb_s=row.intra_node_bw_gb_s, intra_node_link=row.intra_node_link)


def box_spec(entry: HardwareEntry, priced: bool = True) -> HardwareSpec:
    """The box of a `[[hardware.*]]` entry: the default box of its GPU with the entry's overrides
    (`priced` False: an owned box already paid for, whose price is never required)."""
    return hardware_from_overrides(entry.gpu, priced=priced, **entry.overrides())


def ownership_terms(kind: str, spec: HardwareSpec, charge_capital: bool = False) -> OwnershipTerms:
    """What owning one box costs: a box to buy, or an owned one with charge_capital, carries its
    net capital (purchase − resale) and ops fee; an owned box is otherwise power only."""
    return OwnershipTerms(
        net_capital_usd=capital_usd(spec, 1),
        holding_months=spec.amortisation_months,
        power_usd_per_hour=power_usd_per_hour(spec, 1, 1.0),
        ops_usd_per_month=spec.ops_usd_per_month,
        charged=kind == "buy" or charge_capital,
        upfront=kind == "buy" and spec.accounting == "upfront",
    )


def box_offering(
    kind: str,
    spec: HardwareSpec,
    gpu: GpuSpec,
    *,
    boxes: int,
    index: int = 0,
    charge_capital: bool = False,
    inter_node_gbps: float = 10.0,
    usage: Usage = NO_USAGE,
) -> Offering:
    """An owned box (power; + its fixed costs with charge_capital) or a box to buy (power + its
    net price and ops fee, spread over the work `usage` says it does, or upfront on this job).

    Raises:
        ConfigError: accounting = "upfront" with a stated jobs_per_month / duty_cycle.
    """
    terms = ownership_terms(kind, spec, charge_capital)
    capital_fixed, capital_hourly = charge_rates(terms, usage)
    return Offering(
        key=f"{kind}/{gpu.gpu_id}x{spec.gpus_per_box}#{index}",
        kind=kind,
        provider=kind,
        instance=f"{spec.gpus_per_box}x {gpu.gpu_id} box",
        region="local",
        pricing=kind,
        gpu=gpu,
        gpus_per_instance=spec.gpus_per_box,
        inter_node_gbps=inter_node_gbps,
        usd_per_hour=power_usd_per_hour(spec, 1, 1.0),
        max_instances=boxes,
        capital_usd_per_instance=capital_fixed,
        capital_usd_per_instance_hour=capital_hourly,
        box_net_price_usd=capital_usd(spec, 1),
        amortisation_hours=spec.amortisation_months * HOURS_PER_MONTH,
        vcpus=spec.vcpus,
        ram_gib=spec.ram_gib,
        local_nvme_gb=spec.local_nvme_gb,
        ownership=terms,
        usage=usage,
    )


def hardware_offerings(
    owned: Sequence[HardwareEntry],
    buy: Sequence[HardwareEntry],
    gpus: Iterable[str] | None = None,
    section: str = "hardware",
    usage: Usage = NO_USAGE,
) -> list[Offering]:
    """Owned boxes (`num_boxes`, default max_boxes or 1) and boxes to buy (`max_gpus` GPUs in
    whole boxes, default max_boxes or one box), keeping only the GPU types in `gpus` when given;
    their fixed costs spread over `usage`.

    Raises:
        ConfigError: an entry's GPU is no GPU of the catalog: "hardware.owned[0].gpu: unknown
            GPU ..." (`section`: "hardware" in a job file, "capacity" in a batch file), the
            closest names and that matching is case-insensitive; a bad box override."""
    catalog = load_gpus()
    allowed = {resolve_gpu_id(g, "constraints.gpu_types") for g in gpus} if gpus else None
    out: list[Offering] = []
    for kind, entries in (("owned", owned), ("buy", buy)):
        for i, entry in enumerate(entries):
            gpu = catalog[resolve_gpu_id(entry.gpu, f"{section}.{kind}[{i}].gpu")]
            spec = box_spec(entry, priced=kind == "buy" or entry.charge_capital)
            if allowed is not None and gpu.gpu_id not in allowed:
                continue
            if kind == "owned":
                boxes = entry.num_boxes or spec.max_boxes or 1
            else:
                boxes = (entry.max_gpus // spec.gpus_per_box) if entry.max_gpus else (spec.max_boxes or 1)
            if boxes >= 1:
                out.append(
                    box_offering(
                        kind,
                        spec,
                        gpu,
                        boxes=boxes,
                        index=i,
                        charge_capital=entry.charge_capital,
                        inter_node_gbps=entry.inter_node_gbps,
                        usage=_entry_usage(entry, usage, f"{section}.{kind}[{i}]"),
                    )
                )
    return out


def _entry_usage(entry: HardwareEntry, usage: Usage, field: str) -> Usage:
    """The workload a box's fixed costs are spread over: its own (a [[capacity.owned]] entry's
    jobs_per_month / duty_cycle), else the job's `usage`."""
    if entry.jobs_per_month is None and entry.duty_cycle is None:
        return usage
    return Usage(entry.jobs_per_month, entry.duty_cycle, where=field)


def job_offerings(
    rows: Sequence[OfferingRow] | None,
    constraints: Any,
    owned: Sequence[HardwareEntry] = (),
    buy: Sequence[HardwareEntry] = (),
) -> list[Offering]:
    """Every offering a job may use — the one filter of training, serving and batch jobs: the
    catalog rows its constraints allow (gpu_types, providers, regions, pricing; `cloud` false:
    none) and its owned / bought boxes.

    Constraints only training has (spot_interruption_overhead,
    spot_interruptions_per_instance_day, availability, trust_guessed_network,
    reservation_prepaid, start_after / start_before: capacity blocks that cannot start in that
    window are left out) are read when present; a serving job's lack them and get
    `cloud_offering`'s defaults (its cost is per served hour, hourly_usd, which they do not touch).

    Raises:
        ConfigError: an unknown GPU, provider, region or pricing model in the filters.
    """
    cloud = []
    if rows is not None and getattr(constraints, "cloud", True):
        check_availability(rows, getattr(constraints, "availability", ()))
        cloud = cloud_offerings(
            rows,
            gpus=constraints.gpu_types,
            providers=constraints.providers,
            regions=constraints.regions,
            pricing=constraints.pricing,
            spot_overhead=getattr(constraints, "spot_interruption_overhead", 0.0),
            spot_rate_override=getattr(constraints, "spot_interruptions_per_instance_day", None),
            availability=getattr(constraints, "availability", ()),
            trust_guessed_network=getattr(constraints, "trust_guessed_network", True),
            reservation_prepaid=getattr(constraints, "reservation_prepaid", False),
        )
    cloud = [o for o in cloud if block_fits_window(o, constraints)]
    usage = Usage(getattr(constraints, "jobs_per_month", None), getattr(constraints, "duty_cycle", None))
    return cloud + hardware_offerings(owned, buy, constraints.gpu_types, usage=usage)


def today_utc() -> dt.date:
    """Today's date (UTC): the first day a capacity block can start."""
    return dt.datetime.now(dt.timezone.utc).date()  # noqa: UP017


def block_fits_window(offering: Offering, constraints: Any) -> bool:
    """A capacity block can start inside the job's `start_after` / `start_before` window (within
    its booking horizon from today); any other offering always can."""
    return block_start_fits(
        offering.terms,
        getattr(constraints, "start_after", None),
        getattr(constraints, "start_before", None),
        today_utc(),
    )


def check_availability(rows: Sequence[OfferingRow], availability: Sequence[Any]) -> None:
    """Every `[[constraints.availability]]` entry names a provider (and instance) of the catalog:
    a limit that matches no offering would be silently ignored.

    Raises:
        ConfigError: the entry's field, the closest names and the allowed ones.
    """
    for i, entry in enumerate(availability):
        field = f"constraints.availability[{i}]"
        catalog_rows_named(rows, entry.provider, entry.instance, f"{field}.provider", f"{field}.instance")


def flag_notes(offerings: Iterable[Offering]) -> list[str]:
    """One line per flagged offering a plan relies on (what a buyer should double-check)."""
    seen: dict[str, Offering] = {}
    for off in offerings:
        if off.flags and off.key not in seen:
            seen[off.key] = off
    return [
        f"relies on a flagged price: {o.provider} {o.instance} {o.region} {o.pricing} — "
        f"{f.rule}: {f.reason} (see `ccopt prices --flagged`)"
        for o in seen.values()
        for f in o.flags
    ]
