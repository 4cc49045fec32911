"""Turn the price catalog and the job's hardware entries into `Offering`s for the planner."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from optimizer.errors import ConfigError
from optimizer.inputs.gpus import load_gpus, resolve_gpu_id
from optimizer.inputs.jobs.train import Constraints, HardwareEntry
from optimizer.solve.train.enumerate import Offering

__all__ = ["cloud_offerings", "hardware_offerings", "job_offerings"]


def cloud_offerings(catalog: Any, constraints: Constraints) -> list[Offering]:
    """Catalog offerings allowed by the job's filters, as Offerings (spot gets its overhead).

    `catalog` is the price DataFrame (optimizer.pricing.load_catalog().frame) or a sequence of
    OfferingRow objects (load_offering_rows, the planner's pandas-free fast path).
    """
    from optimizer.pricing.catalog import filter_offerings, filter_rows

    if not constraints.cloud:
        return []
    filters: dict[str, Any] = dict(gpus=constraints.gpus, providers=constraints.providers,
                   regions=constraints.regions, pricing=list(constraints.pricing))
    try:
        if hasattr(catalog, "itertuples"):
            rows: Any = filter_offerings(catalog, **filters).itertuples(index=False)
        else:
            rows = filter_rows(catalog, **filters)
    except ConfigError as exc:  # name the job-file field: "gpu: …" -> "constraints.gpus: …"
        field, _, rest = str(exc).partition(": ")
        names = {"gpu": "gpus", "provider": "providers", "region": "regions"}
        raise ConfigError(f"constraints.{names.get(field, field)}: {rest}") from None
    gpus = load_gpus()
    out: list[Offering] = []
    for row in rows:
        pricing = row.pricing_model
        limit = row.max_instances
        max_inst = None if limit is None or limit != limit else int(limit)  # None or NaN
        if not constraints.trust_guessed_network and bool(row.inter_node_is_default):
            max_inst = 1
        commitment = 0.0 if constraints.reservation_prepaid else float(row.commitment_hours)
        out.append(Offering(
            key=f"{row.provider}/{row.instance_type}/{row.region}/{pricing}",
            kind="cloud", provider=row.provider, instance=row.instance_type, region=row.region,
            pricing=pricing, gpu=_gpu_in_instance(gpus[row.gpu_id], row),
            gpus_per_instance=int(row.gpus_per_instance),
            inter_node_gbps=float(row.inter_node_gbps), usd_per_hour=float(row.usd_per_hour),
            max_instances=max_inst, commitment_hours=commitment,
            spot_overhead=constraints.spot_interruption_overhead if pricing == "spot" else 0.0,
            inter_node_kind=str(row.inter_node_kind),
            inter_node_is_default=bool(row.inter_node_is_default),
        ))
    return out


def _gpu_in_instance(gpu: Any, row: Any) -> Any:
    """The GPU as this instance wires it: the row's intra-node link may differ from the part's
    default (e.g. PCIe cards in one instance, NVLink-bridged pairs in another)."""
    bw = float(row.intra_node_bw_gb_s)
    if bw == gpu.intra_node_bw_gb_s and row.intra_node_link == gpu.intra_node_link:
        return gpu
    return replace(gpu, intra_node_bw_gb_s=bw, intra_node_link=str(row.intra_node_link))


def _spec(entry: HardwareEntry) -> Any:
    from optimizer.pricing.owned import hardware_from_overrides

    extra = dict(entry.model_extra or {})
    return hardware_from_overrides(entry.gpu, **extra)


def hardware_offerings(owned: Sequence[HardwareEntry], buy: Sequence[HardwareEntry],
                       constraints: Constraints) -> list[Offering]:
    """Owned boxes (power only, or + amortised capital) and boxes to buy (capital + power)."""
    from optimizer.pricing.owned import HOURS_PER_MONTH, box_price_usd, power_usd_per_hour

    gpus = load_gpus()
    allowed = {resolve_gpu_id(g, "constraints.gpus") for g in constraints.gpus} \
        if constraints.gpus else None
    out: list[Offering] = []
    for kind, entries in (("owned", owned), ("buy", buy)):
        for i, entry in enumerate(entries):
            spec = _spec(entry)
            gpu = gpus[resolve_gpu_id(entry.gpu, f"hardware.{kind}.gpu")]
            if allowed is not None and gpu.gpu_id not in allowed:
                continue
            if kind == "owned":
                boxes = entry.boxes or spec.max_boxes or 1
            else:
                boxes = (entry.max_count // spec.gpus_per_box) if entry.max_count else \
                    (spec.max_boxes or 1)
                if boxes < 1:
                    continue
            net_box = box_price_usd(spec) * (1 - spec.resale_fraction)
            per_hour_capital = net_box / (spec.amortisation_months * HOURS_PER_MONTH)
            capital_fixed, capital_hourly = 0.0, 0.0
            if kind == "buy":
                if spec.accounting == "upfront":
                    capital_fixed = net_box
                else:
                    capital_hourly = per_hour_capital
            elif entry.charge_capital:
                capital_hourly = per_hour_capital
            out.append(Offering(
                key=f"{kind}/{gpu.gpu_id}x{spec.gpus_per_box}#{i}", kind=kind, provider=kind,
                instance=f"{spec.gpus_per_box}x {gpu.gpu_id} box", region="local",
                pricing=kind, gpu=gpu, gpus_per_instance=spec.gpus_per_box,
                inter_node_gbps=entry.inter_node_gbps,
                usd_per_hour=power_usd_per_hour(spec, 1, 1.0), max_instances=boxes,
                capital_usd_per_instance=capital_fixed,
                capital_usd_per_instance_hour=capital_hourly, box_net_price_usd=net_box,
            ))
    return out


def job_offerings(frame: Any, constraints: Constraints, owned: Sequence[HardwareEntry],
                  buy: Sequence[HardwareEntry]) -> list[Offering]:
    return cloud_offerings(frame, constraints) + hardware_offerings(owned, buy, constraints)
