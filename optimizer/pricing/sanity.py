"""Price sanity: rules that flag catalog rows far from their peers, each flag with a reason.

Every rule is a pure function over typed catalog rows (`OfferingRow`) returning
{row key: flag}; `check_rows` runs them all and `catalog_flags` caches the result for a catalog.
The flags do not change any price: they tell a buyer which rows to double-check.

Rules (ids are stable; scripts may match on them):
    spot-extreme           a spot row at <= 12% of its on-demand price (issue 19's bar)
    spot-beyond-published  a spot discount deeper than the provider's published maximum
    region-outlier         a row far from the same provider's other regions (same instance
                           and pricing model)
    stale                  a row much older than the newest row of its catalog
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from optimizer.errors import ConfigError

if TYPE_CHECKING:
    from optimizer.pricing.schema import OfferingRow

__all__ = [
    "price_max_age_days",
    "PRICE_MAX_AGE_ENV",
    "PriceFlag",
    "SanityThresholds",
    "DEFAULT_THRESHOLDS",
    "PublishedSpotDiscount",
    "PUBLISHED_SPOT_DISCOUNTS",
    "RULES",
    "RowKey",
    "row_key",
    "record_key",
    "KeyedRow",
    "spot_extreme",
    "spot_beyond_published",
    "region_outlier",
    "stale",
    "check_rows",
    "catalog_flags",
    "flags_of",
]

#: rule ids, in the order `check_rows` runs them (and a row's flags are listed)
RULES = ("spot-extreme", "spot-beyond-published", "region-outlier", "stale")

#: (provider, instance_type, region, pricing_model): unique per catalog (schema.validate_csv)
RowKey = tuple[str, str, str, str]

#: float slack so a price written at exactly a threshold (rounded to 6 digits in the CSV)
#: counts as at the threshold; far below any price difference that matters
_EPS = 1e-9


@dataclass(frozen=True)
class PriceFlag:
    """One reason to double-check a catalog row: the rule that fired and why, with numbers."""

    rule: str  # one of RULES
    reason: str  # one line, e.g. "spot $0.308/GPU-h is 11.2% of on-demand $2.745/GPU-h ..."

    def as_dict(self) -> dict[str, str]:
        """{"rule": ..., "reason": ...} (the JSON shape of `ccopt prices --json`)."""
        return {"rule": self.rule, "reason": self.reason}


@dataclass(frozen=True)
class SanityThresholds:
    """Where each rule fires; override any field (e.g. `SanityThresholds(stale_age_days=90)`)."""

    #: issue 19 "Must show": spot rows at 12% of their on-demand price or less are flagged.
    #: A bar chosen by the issue, not a market fact.
    spot_extreme_max_fraction: float = 0.12
    #: GUESS: a row at >= 1.5x (or <= 1/1.5x) the median USD/GPU-hour of the provider's other
    #: regions for the same instance and pricing model; list prices of one instance across a
    #: provider's regions usually differ by well under 50%.
    region_outlier_ratio: float = 1.5
    #: GUESS: an outlier needs a majority to stand out from; with one other region neither of
    #: two differing rows can be called the outlier.
    region_min_other_regions: int = 2
    #: GUESS: a row older than the catalog's newest row by more than ~6 months (GPU list prices
    #: have moved by tens of percent within a year since 2023).
    stale_age_days: int = 180
    #: GUESS: a price read more than ~3 months before today is flagged as old on every plan
    #: line and in `ccopt prices` (cloud list prices moved by tens of percent within a year
    #: since 2023); override with $CCOPT_PRICE_MAX_AGE_DAYS (price_max_age_days()).
    max_price_age_days: int = 90


DEFAULT_THRESHOLDS = SanityThresholds()
PRICE_MAX_AGE_ENV = "CCOPT_PRICE_MAX_AGE_DAYS"


def price_max_age_days() -> int:
    """The age in days beyond which a price is flagged old: $CCOPT_PRICE_MAX_AGE_DAYS, else
    SanityThresholds.max_price_age_days.

    Raises:
        ConfigError: the variable is not a whole number >= 0.
    """
    raw = os.environ.get(PRICE_MAX_AGE_ENV, "").strip()
    if not raw:
        return DEFAULT_THRESHOLDS.max_price_age_days
    if not raw.isdigit():
        raise ConfigError(
            f"{PRICE_MAX_AGE_ENV}: {raw!r} is not allowed; allowed: a whole number of days >= 0"
        )
    return int(raw)


@dataclass(frozen=True)
class PublishedSpotDiscount:
    """A provider's published spot/preemptible discount off on-demand (fractions, 0.9 = 90%)."""

    provider: str
    min_discount: float | None  # None: the provider publishes only a maximum
    max_discount: float
    quote: str  # the published wording
    url: str


#: the providers' own published spot (preemptible) discount ranges; a provider not listed here
#: skips `spot-beyond-published`.
PUBLISHED_SPOT_DISCOUNTS: Mapping[str, PublishedSpotDiscount] = {
    d.provider: d
    for d in (
        PublishedSpotDiscount(
            "aws", None, 0.90, "up to 90% off the On-Demand price", "https://aws.amazon.com/ec2/spot/"
        ),
        PublishedSpotDiscount(
            "gcp",
            0.60,
            0.91,
            "a 60-91% discount compared to standard VMs",
            "https://cloud.google.com/compute/docs/instances/spot",
        ),
        PublishedSpotDiscount(
            "azure",
            None,
            0.90,
            "up to 90% compared to pay-as-you-go prices",
            "https://azure.microsoft.com/en-us/products/virtual-machines/spot",
        ),
        PublishedSpotDiscount(
            "oci",
            0.50,
            0.50,
            "always 50% off on-demand rates (preemptible)",
            "https://blogs.oracle.com/cloud-infrastructure/post/announcing-"
            "preemptible-instances-a-new-kind-of-compute-instance-available-"
            "at-a-50-discount",
        ),
    )
}


class KeyedRow(Protocol):
    """What names a catalog row: an OfferingRow, or a row of the price frame (itertuples)."""

    @property
    def provider(self) -> str: ...
    @property
    def instance_type(self) -> str: ...
    @property
    def region(self) -> str: ...
    @property
    def pricing_model(self) -> str: ...


def row_key(row: KeyedRow) -> RowKey:
    """The row's identity in its catalog: (provider, instance_type, region, pricing_model)."""
    return (row.provider, row.instance_type, row.region, row.pricing_model)


def record_key(record: Mapping[str, Any]) -> RowKey:
    """row_key of a row as a CSV record or JSON object (keys the catalog's column names)."""
    return (record["provider"], record["instance_type"], record["region"], record["pricing_model"])


def _where(row: OfferingRow) -> str:
    return f"{row.provider} {row.instance_type} {row.region}"


def _on_demand_reference(rows: Sequence[OfferingRow]) -> dict[tuple[str, str, str], float]:
    """On-demand USD per GPU-hour by (provider, instance, region) of every spot row: the same
    region's on-demand row, else the provider's median on-demand over regions (issue 19 brief)."""
    same: dict[tuple[str, str, str], float] = {}
    by_instance: dict[tuple[str, str], list[float]] = defaultdict(list)
    for row in rows:
        if row.pricing_model == "on_demand":
            same[(row.provider, row.instance_type, row.region)] = row.usd_per_gpu_hour
            by_instance[(row.provider, row.instance_type)].append(row.usd_per_gpu_hour)
    out: dict[tuple[str, str, str], float] = {}
    for row in rows:
        if row.pricing_model != "spot":
            continue
        where = (row.provider, row.instance_type, row.region)
        if where in same:
            out[where] = same[where]
        elif by_instance.get(where[:2]):
            out[where] = statistics.median(by_instance[where[:2]])
    return out


def _spot_fractions(rows: Sequence[OfferingRow]) -> list[tuple[OfferingRow, float, float]]:
    """(spot row, on-demand USD/GPU-hour, spot / on-demand) for spot rows with a reference."""
    reference = _on_demand_reference(rows)
    out = []
    for row in rows:
        on_demand = reference.get((row.provider, row.instance_type, row.region))
        if row.pricing_model == "spot" and on_demand:
            out.append((row, on_demand, row.usd_per_gpu_hour / on_demand))
    return out


def spot_extreme(
    rows: Sequence[OfferingRow], thresholds: SanityThresholds = DEFAULT_THRESHOLDS
) -> dict[RowKey, PriceFlag]:
    """Spot rows at <= `spot_extreme_max_fraction` of their on-demand price (same instance-hour,
    so USD per GPU-hour compares alike)."""
    bar = thresholds.spot_extreme_max_fraction
    flags = {}
    for row, on_demand, fraction in _spot_fractions(rows):
        if fraction <= bar + _EPS:
            flags[row_key(row)] = PriceFlag(
                "spot-extreme",
                (
                    f"spot ${row.usd_per_gpu_hour:.3f}/GPU-h is {fraction:.1%} of on-demand "
                    f"${on_demand:.3f}/GPU-h ({_where(row)}); flagged at <= {bar:.0%}"
                ),
            )
    return flags


def spot_beyond_published(
    rows: Sequence[OfferingRow], published: Mapping[str, PublishedSpotDiscount] = PUBLISHED_SPOT_DISCOUNTS
) -> dict[RowKey, PriceFlag]:
    """Spot rows whose discount off on-demand (1 − spot/on-demand) is deeper than the
    provider's published maximum; providers absent from `published` are skipped."""
    flags = {}
    for row, _on_demand, fraction in _spot_fractions(rows):
        source = published.get(row.provider)
        discount = 1.0 - fraction
        if source is not None and discount > source.max_discount + _EPS:
            flags[row_key(row)] = PriceFlag(
                "spot-beyond-published",
                (
                    f"spot discount {discount:.1%} off on-demand is deeper than {row.provider}'s "
                    f"published {source.quote!r} ({_where(row)}; {source.url})"
                ),
            )
    return flags


def _median_of_other_regions(members: Sequence[OfferingRow]) -> list[tuple[OfferingRow, float, int]]:
    """(row, median USD/GPU-hour of the rows in other regions, how many) for every row that has
    another region. Regions
    all distinct (the catalog's shape): one sort, each median read off it without the row
    itself (O(n log n), not O(n²): a million-row catalog); else the direct count."""
    if len({r.region for r in members}) < len(members):
        out = []
        for row in members:
            others = [r.usd_per_gpu_hour for r in members if r.region != row.region]
            if others:  # a row with no other region has no median to compare with
                out.append((row, statistics.median(others), len(others)))
        return out
    order = sorted(range(len(members)), key=lambda i: members[i].usd_per_gpu_hour)
    values = [members[i].usd_per_gpu_hour for i in order]
    m = len(values) - 1  # the others of each row

    def other(k: int, skip: int) -> float:  # k-th smallest of the values without index skip
        return values[k] if k < skip else values[k + 1]

    out = []
    for rank, i in enumerate(order):
        mid = other(m // 2, rank) if m % 2 else (other(m // 2 - 1, rank) + other(m // 2, rank)) / 2.0
        out.append((members[i], mid, m))
    return out


def region_outlier(
    rows: Sequence[OfferingRow], thresholds: SanityThresholds = DEFAULT_THRESHOLDS
) -> dict[RowKey, PriceFlag]:
    """Rows whose USD/GPU-hour is >= `region_outlier_ratio` × (or <= 1/ratio ×) the median of
    the same provider's other regions for the same instance and pricing model, when there are
    at least `region_min_other_regions` of them."""
    ratio_bar = thresholds.region_outlier_ratio
    groups: dict[tuple[str, str, str], list[OfferingRow]] = defaultdict(list)
    for row in rows:
        groups[(row.provider, row.instance_type, row.pricing_model)].append(row)
    flags = {}
    for (provider, instance, pricing), members in groups.items():
        if len(members) - 1 < thresholds.region_min_other_regions:
            continue
        medians = _median_of_other_regions(members)
        for row, median, count in medians:
            others_count = count
            ratio = row.usd_per_gpu_hour / median
            if ratio >= ratio_bar - _EPS or ratio <= 1.0 / ratio_bar + _EPS:
                flags[row_key(row)] = PriceFlag(
                    "region-outlier",
                    (
                        f"${row.usd_per_gpu_hour:.3f}/GPU-h in {row.region} is {ratio:.2f}x the median "
                        f"${median:.3f}/GPU-h of {others_count} other {provider} regions for {instance} "
                        f"{pricing}; flagged at >= {ratio_bar:g}x or <= 1/{ratio_bar:g}x (GUESS)"
                    ),
                )
    return flags


def stale(
    rows: Sequence[OfferingRow],
    thresholds: SanityThresholds = DEFAULT_THRESHOLDS,
    reference_date: dt.date | None = None,
) -> dict[RowKey, PriceFlag]:
    """Rows whose as_of is more than `stale_age_days` before `reference_date` (default: the
    newest as_of among `rows`, so the flags of a catalog do not change with the calendar; the
    catalog's age against today is `catalog.CatalogAge`)."""
    if not rows:
        return {}
    newest = max(r.as_of for r in rows)
    reference = reference_date or newest
    what = "today" if reference_date else "the catalog's newest row"
    flags = {}
    for row in rows:
        age_days = (reference - row.as_of).days
        if age_days > thresholds.stale_age_days:
            flags[row_key(row)] = PriceFlag(
                "stale",
                (
                    f"as_of {row.as_of} is {age_days} days before {what} ({reference}) "
                    f"({_where(row)} {row.pricing_model}); "
                    f"flagged at > {thresholds.stale_age_days} days (GUESS)"
                ),
            )
    return flags


def check_rows(
    rows: Iterable[OfferingRow],
    *,
    thresholds: SanityThresholds = DEFAULT_THRESHOLDS,
    published: Mapping[str, PublishedSpotDiscount] = PUBLISHED_SPOT_DISCOUNTS,
    reference_date: dt.date | None = None,
) -> dict[RowKey, tuple[PriceFlag, ...]]:
    """Every rule over a whole catalog: {row key: flags in RULES order}; unflagged rows absent.

    Args:
        rows: the whole catalog (peers are found among these rows, so pass the catalog before
            any job filter: a spot-only job still needs the on-demand rows as reference).
        thresholds: where the rules fire (SanityThresholds documents each).
        published: provider -> published spot discount range (PUBLISHED_SPOT_DISCOUNTS).
        reference_date: the `stale` rule's "now"; default the newest as_of among `rows`.
    """
    rows = list(rows)
    per_rule = (
        spot_extreme(rows, thresholds),
        spot_beyond_published(rows, published),
        region_outlier(rows, thresholds),
        stale(rows, thresholds, reference_date),
    )
    out: dict[RowKey, tuple[PriceFlag, ...]] = {}
    for row in rows:
        key = row_key(row)
        found = tuple(flags[key] for flags in per_rule if key in flags)
        if found:
            out[key] = found
    return out


@functools.lru_cache(maxsize=8)
def _catalog_flags_cached(rows: tuple[OfferingRow, ...]) -> Mapping[RowKey, tuple[PriceFlag, ...]]:
    return MappingProxyType(check_rows(rows))  # read-only: the cached result is shared


def catalog_flags(rows: Sequence[OfferingRow]) -> Mapping[RowKey, tuple[PriceFlag, ...]]:
    """`check_rows` with the default thresholds, cached per catalog (rows are frozen, so the
    same catalog hashes alike): the flags every planner's offerings carry."""
    return _catalog_flags_cached(tuple(rows))


def flags_of(row: OfferingRow, catalog_rows: Sequence[OfferingRow]) -> tuple[PriceFlag, ...]:
    """The default-threshold flags of `row` judged against the catalog it belongs to."""
    return catalog_flags(catalog_rows).get(row_key(row), ())
