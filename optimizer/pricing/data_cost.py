"""What a job's data costs on an offering: moving the dataset there once, storing it and the
checkpoints while the job runs (prices from pricing_data/provider_storage.csv).

The charge rides on the Offering (`Offering.data`), so the one cost formula
(`optimizer.pricing.offering.cost_usd`) adds it to every plan, alternative, compare row and
batch total. An unknown price counts as 0 and is named in `unknown` (reported, never invented).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import Field, dataclass, replace
from typing import Any, ClassVar, Protocol, TypeVar

from optimizer.errors import ConfigError, did_you_mean
from optimizer.inputs.jobs.data import ONPREM, DataSpec
from optimizer.pricing.host import StorageRates, storage_providers, storage_rates, storage_regions
from optimizer.units import HOURS_PER_MONTH

__all__ = ["DataCharge", "NO_DATA", "data_charge", "with_data", "checkpoint_gb_hours", "check_data_location"]


@dataclass(frozen=True)
class DataCharge:
    """The data lines of one job on one offering (USD; sizes in GB = 10^9 bytes)."""

    counted: bool = False  # False: the job has no [data] section, nothing is counted
    dataset_gb: float = 0.0
    egress_gb: float = 0.0  # moved once to the offering (0: already there)
    egress_usd_per_gb: float = 0.0
    route: str = ""  # where from → where to, and which price applies
    #: object storage at the offering for the copied dataset and the checkpoints, USD/GB-month
    storage_usd_per_gb_month: float = 0.0
    stored_dataset_gb: float = 0.0  # the copy kept at the offering (0: none made / local disk)
    checkpoint_gb: float = 0.0  # one checkpoint (0: written to local disk)
    checkpoint_every_h: float = 0.0
    checkpoints_kept: int = 0
    unknown: tuple[str, ...] = ()  # prices not in the tables (counted as 0)

    @property
    def egress_usd(self) -> float:
        return self.egress_gb * self.egress_usd_per_gb

    def dataset_storage_usd(self, hours: float) -> float:
        """The dataset copy kept for the job's `hours` (GB × USD/GB-month × hours / 730)."""
        return self.stored_dataset_gb * self.storage_usd_per_gb_month * hours / HOURS_PER_MONTH

    def checkpoint_storage_usd(self, hours: float) -> float:
        """Checkpoints kept over the job's `hours` at the offering's object-storage price."""
        gb_h = checkpoint_gb_hours(self.checkpoint_gb, self.checkpoint_every_h, self.checkpoints_kept, hours)
        return gb_h * self.storage_usd_per_gb_month / HOURS_PER_MONTH

    def usd(self, hours: float) -> float:
        """Everything the data costs over a job of `hours`."""
        if not self.counted:
            return 0.0
        return self.egress_usd + self.dataset_storage_usd(hours) + self.checkpoint_storage_usd(hours)


NO_DATA = DataCharge()


def checkpoint_gb_hours(size_gb: float, every_h: float, kept: int, hours: float) -> float:
    """GB-hours of checkpoints stored during a job of `hours`.

    Checkpoint i is written at i·f (n = ⌊H/f⌋ of them) and deleted when checkpoint i + K is
    written (keep the last K): the first n − K each stay K·f, the last m = min(n, K) stay until
    the job ends, H − i·f, which sums to m·H − f·m(2n − m + 1)/2.
    """
    if size_gb <= 0 or every_h <= 0 or kept <= 0 or hours <= 0:
        return 0.0
    n = int(hours // every_h)
    m = min(n, kept)
    full = max(0, n - kept) * kept * every_h
    tail = m * hours - every_h * m * (2 * n - m + 1) / 2
    return size_gb * (full + tail)


def check_data_location(spec: DataSpec, catalog_providers: Sequence[str] = ()) -> StorageRates | None:
    """The rates where the dataset lives (None: on-premises, or a provider without a row).

    Raises:
        ConfigError: an unknown provider or region, naming the `data.` field.
    """
    if spec.provider.lower() == ONPREM:
        return None
    known = sorted(set(storage_providers()) | {p.lower() for p in catalog_providers})
    if spec.provider.lower() not in known:
        raise ConfigError(
            f"data.provider: unknown {spec.provider!r}"
            f"{did_you_mean(spec.provider, [*known, ONPREM])} Allowed: "
            f"{', '.join([*known, ONPREM])}"
        )
    rates = storage_rates(spec.provider, spec.region)
    regions = storage_regions(spec.provider)
    if rates is None and spec.region is not None and regions and "all" not in regions:
        raise ConfigError(
            f"data.region: {spec.region!r} has no row for {spec.provider} in "
            f"pricing_data/provider_storage.csv; allowed: {', '.join(regions)}"
        )
    if rates is None and spec.region is None and len(regions) > 1:
        raise ConfigError(
            f"data.region: give the region of the dataset at {spec.provider}; allowed: {', '.join(regions)}"
        )
    return rates


def _egress(
    spec: DataSpec, src: StorageRates | None, provider: str, kind: str, region: str
) -> tuple[float, float | None, str]:
    """(GB moved, USD per GB or None if unknown, route in words) to an offering.

    A dataset whose region is not given (and whose provider prices every region alike) is
    taken to sit in the region of that provider's offering.
    """
    if spec.provider.lower() == ONPREM:
        if kind in ("owned", "buy"):
            return 0.0, 0.0, "on-premises, beside the boxes (no transfer)"
        return (
            spec.dataset_gb,
            0.0,
            (f"on-premises → {provider} {region} (your own uplink; ingress is what the provider prices)"),
        )
    src_region = spec.region or (src.region if src is not None and src.region != "all" else None)
    where = f"{spec.provider}" + (f" {src_region}" if src_region else "")
    same_provider = spec.provider.lower() == provider.lower()
    if same_provider and src_region in (None, region):
        return 0.0, 0.0, f"already at {provider} {region} (no transfer)"
    if src is None:
        return spec.dataset_gb, None, f"{where} → {provider} {region} (egress price unknown)"
    if same_provider:
        rate = src.egress_inter_region_usd_per_gb
        if rate is None and src.egress_internet_usd_per_gb == 0:
            rate = 0.0  # the provider charges no egress at all (its row says 0)
        route_kind = "inter-region"
    else:
        rate, route_kind = src.egress_internet_usd_per_gb, "internet egress"
    priced = "unknown" if rate is None else f"${rate:g}/GB"
    return spec.dataset_gb, rate, f"{where} → {provider} {region} ({route_kind} {priced})"


def data_charge(
    spec: DataSpec,
    src: StorageRates | None,
    provider: str,
    region: str,
    kind: str,
    checkpoint_gb: float,
    every_h: float,
    kept: int,
) -> DataCharge:
    """The data lines of a job on one offering (cloud: object storage at its provider/region;
    owned/buy boxes: dataset and checkpoints on their own disks, no storage price)."""
    unknown: list[str] = []
    gb, rate, route = _egress(spec, src, provider, kind, region)
    if rate is None:
        unknown.append(f"egress {route}")
    local_box = kind in ("owned", "buy")
    storage = 0.0
    if not local_box:
        dest = storage_rates(provider, region)
        if gb and (dest is None or dest.ingress_usd_per_gb is None):
            unknown.append(f"ingress at {provider} {region}")
        elif dest is not None and dest.ingress_usd_per_gb:
            rate = (rate or 0.0) + dest.ingress_usd_per_gb
        if dest is None or dest.object_storage_usd_per_gb_month is None:
            unknown.append(f"object storage at {provider} {region}")
        else:
            storage = dest.object_storage_usd_per_gb_month
    return DataCharge(
        counted=True,
        dataset_gb=spec.dataset_gb,
        egress_gb=gb,
        egress_usd_per_gb=rate or 0.0,
        route=route,
        storage_usd_per_gb_month=storage,
        stored_dataset_gb=gb if not local_box else 0.0,
        checkpoint_gb=0.0 if local_box else checkpoint_gb,
        checkpoint_every_h=every_h,
        checkpoints_kept=kept,
        unknown=tuple(unknown),
    )


class _Placed(Protocol):
    """What with_data reads of an offering (optimizer.pricing.offering.Offering, a frozen
    dataclass; that module imports this one, so it is named structurally)."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    @property
    def provider(self) -> str: ...
    @property
    def region(self) -> str: ...
    @property
    def kind(self) -> str: ...


_O = TypeVar("_O", bound=_Placed)


def with_data(
    offerings: Sequence[_O],
    spec: DataSpec,
    checkpoint_gb: float,
    every_h: float,
    kept: int,
    catalog_providers: Sequence[str] = (),
) -> list[_O]:
    """The offerings with the job's data charge attached (`Offering.data`).

    Raises:
        ConfigError: the dataset's provider or region is unknown.
    """
    src = check_data_location(spec, catalog_providers)
    return [
        replace(
            o,
            data=data_charge(
                spec,
                src,
                o.provider,
                o.region,
                o.kind,
                checkpoint_gb,
                every_h,
                kept,
            ),
        )
        for o in offerings
    ]
