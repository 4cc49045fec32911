"""Price-sanity rules: the bundled p4d spot row, hand-made boundaries, offerings carrying flags."""

from __future__ import annotations

import datetime as dt
import statistics
import time
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optimizer.pricing.catalog import load_offering_rows
from optimizer.pricing.offerings import cloud_offering, cloud_offerings, job_offerings
from optimizer.pricing.sanity import (
    DEFAULT_THRESHOLDS,
    PUBLISHED_SPOT_DISCOUNTS,
    RULES,
    PriceFlag,
    SanityThresholds,
    _median_of_other_regions,
    check_rows,
    region_outlier,
    row_key,
    spot_beyond_published,
    spot_extreme,
    stale,
)
from optimizer.pricing.schema import OfferingRow

P4D_SPOT = ("aws", "p4d.24xlarge", "us-east-1", "spot")
AS_OF = dt.date(2026, 12, 2)


def _row(
    provider: str = "aws",
    instance: str = "p5.48xlarge",
    region: str = "us-east-1",
    pricing: str = "on_demand",
    usd_per_hour: float = 40.0,
    gpus: int = 8,
    as_of: dt.date = AS_OF,
) -> OfferingRow:
    """A valid OfferingRow of a hand-made catalog (H100, 8 GPUs unless told)."""
    commitment = {"on_demand": 0, "spot": 0, "reserved_1y": 8760, "reserved_3y": 26280}[pricing]
    return OfferingRow(
        provider=provider,
        instance_type=instance,
        region=region,
        gpu_id="H100-80GB",
        gpus_per_instance=gpus,
        intra_node_link="nvlink",
        intra_node_bw_gb_s=450,
        inter_node_gbps=3200,
        inter_node_kind="efa",
        inter_node_is_default=False,
        pricing_model=pricing,
        usd_per_hour=usd_per_hour,
        usd_per_gpu_hour=usd_per_hour / gpus,
        commitment_hours=commitment,
        derived=False,
        as_of=as_of,
        source="test",
    )


@pytest.fixture(scope="module")
def bundled_rows():
    return load_offering_rows(offline=True)[0]


# --- the bundled catalog -------------------------------------------------------------------


def test_bundled_p4d_spot_is_flagged_spot_extreme(bundled_rows):
    flags = check_rows(bundled_rows)[P4D_SPOT]
    assert [f.rule for f in flags] == ["spot-extreme"]
    reason = flags[0].reason
    # skypilot catalog v8: p4d spot 2.4655 $/h vs on-demand 21.957642 $/h = 11.2 %
    assert "11.2% of on-demand $2.745/GPU-h" in reason and "$0.308/GPU-h" in reason
    assert "p4d.24xlarge" in reason and "<= 12%" in reason


def test_bundled_every_spot_row_at_or_below_the_bar_is_flagged(bundled_rows):
    flags = check_rows(bundled_rows)
    on_demand = {
        r.provider + r.instance_type + r.region: r.usd_per_hour
        for r in bundled_rows
        if r.pricing_model == "on_demand"
    }
    for row in bundled_rows:
        od = on_demand.get(row.provider + row.instance_type + row.region)
        if row.pricing_model != "spot" or od is None:
            continue
        extreme = row.usd_per_hour / od <= DEFAULT_THRESHOLDS.spot_extreme_max_fraction
        rules = {f.rule for f in flags.get(row_key(row), ())}
        assert ("spot-extreme" in rules) == extreme, row_key(row)


def test_bundled_flags_only_known_rules_and_check_is_fast(bundled_rows):
    start = time.perf_counter()
    flags = check_rows(bundled_rows)
    elapsed_s = time.perf_counter() - start
    assert elapsed_s < 0.05  # ~1 ms measured for 253 rows; generous bound against slow CI
    assert flags and all(f.rule in RULES for found in flags.values() for f in found)
    assert all(isinstance(f, PriceFlag) and "\n" not in f.reason for found in flags.values() for f in found)


# --- spot-extreme at the boundary ----------------------------------------------------------


def _spot_pair(fraction: float, provider: str = "aws") -> list[OfferingRow]:
    on_demand = 40.0
    return [
        _row(provider=provider, usd_per_hour=on_demand),
        _row(provider=provider, pricing="spot", usd_per_hour=on_demand * fraction),
    ]


def test_spot_at_the_bar_is_flagged_and_above_is_not():
    bar = DEFAULT_THRESHOLDS.spot_extreme_max_fraction
    assert bar == pytest.approx(0.12)  # issue 19: "spot rows at 12% of on-demand or less"
    spot_key = ("aws", "p5.48xlarge", "us-east-1", "spot")
    assert spot_key in spot_extreme(_spot_pair(bar))  # 12.0 %: at the bar
    assert spot_key in spot_extreme(_spot_pair(bar - 0.001))
    assert spot_extreme(_spot_pair(bar + 0.001)) == {}
    assert spot_extreme(_spot_pair(0.13)) == {}


def test_spot_extreme_threshold_is_overridable():
    assert spot_extreme(_spot_pair(0.13), SanityThresholds(spot_extreme_max_fraction=0.15))
    assert spot_extreme(_spot_pair(0.12), SanityThresholds(spot_extreme_max_fraction=0.10)) == {}


def test_spot_without_same_region_on_demand_uses_provider_median():
    rows = [
        _row(region="us-west-2", usd_per_hour=30.0),
        _row(region="eu-west-1", usd_per_hour=50.0),
        _row(region="us-east-2", pricing="spot", usd_per_hour=4.0),
    ]  # 4 / median 40 = 10 %
    flags = spot_extreme(rows)
    assert "10.0% of on-demand $5.000/GPU-h" in flags[("aws", "p5.48xlarge", "us-east-2", "spot")].reason
    assert spot_extreme(rows[2:]) == {}  # no on-demand at all: no reference, no flag


# --- spot-beyond-published -----------------------------------------------------------------


def test_spot_discount_beyond_the_published_maximum():
    aws = PUBLISHED_SPOT_DISCOUNTS["aws"]
    assert aws.max_discount == pytest.approx(0.90) and aws.url.startswith("https://aws.amazon.com")
    key = ("aws", "p5.48xlarge", "us-east-1", "spot")
    deep = spot_beyond_published(_spot_pair(0.05))  # 95 % off
    assert "95.0% off on-demand" in deep[key].reason and aws.url in deep[key].reason
    assert spot_beyond_published(_spot_pair(1 - aws.max_discount)) == {}  # exactly 90 % off
    gcp = PUBLISHED_SPOT_DISCOUNTS["gcp"]
    assert spot_beyond_published(_spot_pair(1 - gcp.max_discount, "gcp")) == {}  # 91 %
    assert spot_beyond_published(_spot_pair(0.05, "gcp"))
    assert spot_beyond_published(_spot_pair(0.01, "vast")) == {}  # unpublished: rule skipped


def test_every_published_range_names_its_source():
    for provider, source in PUBLISHED_SPOT_DISCOUNTS.items():
        assert source.provider == provider and source.url.startswith("https://")
        assert 0 < source.max_discount < 1 and source.quote


# --- region-outlier ------------------------------------------------------------------------


def test_region_outlier_on_a_hand_made_catalog():
    # USD/GPU-h 5.0, 5.2, 9.0: 9.0 is 1.76x the median (5.1) of the two others; 5.0 is 0.70x
    # the median (7.1) of 5.2 and 9.0, inside 1/1.5 = 0.667
    rows = [
        _row(region="us-east-1", usd_per_hour=40.0),
        _row(region="us-west-2", usd_per_hour=41.6),
        _row(region="eu-north-1", usd_per_hour=72.0),
        _row(region="eu-north-1", pricing="spot", usd_per_hour=20.0),
    ]  # alone in its model
    flags = region_outlier(rows)
    assert list(flags) == [("aws", "p5.48xlarge", "eu-north-1", "on_demand")]
    reason = flags[("aws", "p5.48xlarge", "eu-north-1", "on_demand")].reason
    assert "1.76x the median $5.100/GPU-h of 2 other aws regions" in reason and "GUESS" in reason


def test_region_outlier_needs_enough_other_regions_and_is_overridable():
    two = [_row(region="us-east-1", usd_per_hour=40.0), _row(region="eu-north-1", usd_per_hour=80.0)]
    assert region_outlier(two) == {}  # one other region: no majority to stand out from
    loose = SanityThresholds(region_min_other_regions=1)
    assert len(region_outlier(two, loose)) == 2  # 2x and 0.5x
    cheap = [
        _row(region="a", usd_per_hour=40.0),
        _row(region="b", usd_per_hour=40.0),
        _row(region="c", usd_per_hour=20.0),
    ]  # 0.5x the others
    assert list(region_outlier(cheap)) == [("aws", "p5.48xlarge", "c", "on_demand")]
    assert region_outlier(cheap, SanityThresholds(region_outlier_ratio=2.5)) == {}


# --- stale ---------------------------------------------------------------------------------


def test_stale_against_the_newest_row_or_an_injected_date():
    limit = DEFAULT_THRESHOLDS.stale_age_days
    old = _row(instance="old", as_of=AS_OF - dt.timedelta(days=limit + 1))
    edge = _row(instance="edge", as_of=AS_OF - dt.timedelta(days=limit))
    rows = [_row(), old, edge]
    assert list(stale(rows)) == [row_key(old)]
    assert f"{limit + 1} days before the catalog's newest row" in stale(rows)[row_key(old)].reason
    later = stale(rows, reference_date=AS_OF + dt.timedelta(days=limit + 1))
    assert set(later) == {row_key(r) for r in rows}
    assert stale(rows, SanityThresholds(stale_age_days=limit + 1)) == {}


def test_check_rows_lists_a_rows_flags_in_rule_order():
    rows = _spot_pair(0.05)  # both spot-extreme and beyond AWS's 90 %
    flags = check_rows(rows)
    assert [f.rule for f in flags[("aws", "p5.48xlarge", "us-east-1", "spot")]] == [
        "spot-extreme",
        "spot-beyond-published",
    ]
    assert ("aws", "p5.48xlarge", "us-east-1", "on_demand") not in flags


# --- offerings carry the flags -------------------------------------------------------------


def test_offerings_carry_flags_judged_against_the_whole_catalog(bundled_rows):
    # a spot-only filter drops the on-demand reference row; the flag is kept regardless
    offers = cloud_offerings(bundled_rows, gpus=["A100-40GB"], providers=["aws"], pricing=["spot"])
    p4d = next(o for o in offers if o.instance == "p4d.24xlarge")
    assert [f.rule for f in p4d.flags] == ["spot-extreme"]
    on_demand = cloud_offerings(bundled_rows, gpus=["A100-40GB"], providers=["aws"], pricing=["on_demand"])
    assert all(o.flags == () for o in on_demand)


def test_job_offerings_and_single_row_constructor(bundled_rows):
    constraints = SimpleNamespace(  # the attributes job_offerings reads from a job's constraints
        cloud=True,
        gpu_types=["A100-40GB"],
        providers=None,
        regions=None,
        pricing=["spot"],
        spot_interruption_overhead=0.1,
        trust_guessed_network=True,
        reservation_prepaid=False,
        spot_interruptions_per_instance_day=None,
        availability=(),
    )
    offers = job_offerings(bundled_rows, constraints, (), ())
    assert any(o.flags and o.flags[0].rule == "spot-extreme" for o in offers)
    row = next(r for r in bundled_rows if row_key(r) == P4D_SPOT)
    assert cloud_offering(row).flags == ()  # no catalog given: nothing to judge against
    assert cloud_offering(row, catalog_rows=bundled_rows).flags == check_rows(bundled_rows)[P4D_SPOT]
    flag = PriceFlag("stale", "made up")
    assert cloud_offering(row, flags=(flag,)).flags == (flag,)
    assert flag.as_dict() == {"rule": "stale", "reason": "made up"}


@given(
    st.lists(st.floats(0.5, 200.0, allow_nan=False), min_size=2, max_size=12),
    st.booleans(),
)
@settings(max_examples=200, deadline=None)
def test_region_outlier_medians_equal_the_direct_median_of_the_other_regions(prices, repeat) -> None:
    """The sorted-once median (a million-row catalog in O(n log n)) equals statistics.median of
    the other regions' prices, also when two rows share a region (the direct path)."""
    regions = [f"r{i}" for i in range(len(prices))]
    if repeat:
        regions[-1] = regions[0]
    rows = [_row(region=r, usd_per_hour=p * 8) for r, p in zip(regions, prices, strict=True)]
    found = _median_of_other_regions(rows)
    assert len(found) == sum(any(o.region != r.region for o in rows) for r in rows)
    for row, median, count in found:
        others = [r.usd_per_gpu_hour for r in rows if r.region != row.region]
        assert count == len(others)
        assert median == pytest.approx(statistics.median(others), rel=1e-12)
