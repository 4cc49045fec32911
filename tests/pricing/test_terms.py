"""Seller's terms: billed hours, capacity blocks, start windows, the cluster table (hand-derived)."""

from __future__ import annotations

import datetime as dt
import shutil

import pytest

from optimizer.errors import CatalogError
from optimizer.inputs.gpus import data_path, get_gpu
from optimizer.pricing.clusters import (
    CLUSTER_COLUMNS,
    cluster_offering_rows,
    load_clusters,
    quote_only_clusters,
    terms_for,
)
from optimizer.pricing.offering import Offering, cost_usd
from optimizer.pricing.terms import NO_TERMS, OfferingTerms, billed_hours, block_start_fits, fits_term

WEEKLY = OfferingTerms(min_term_hours=168, billing_increment_hours=168)
#: AWS EC2 Capacity Blocks as the doc states them: whole days, 1 to 14, start ≤ 8 weeks ahead
BLOCK = OfferingTerms(
    min_term_hours=24, billing_increment_hours=24, max_term_hours=336, booking_horizon_days=56
)


@pytest.mark.parametrize(
    ("terms", "hours", "billed"),
    [
        (NO_TERMS, 139.2, 139.2),  # billed per hour used
        (WEEKLY, 139.2, 168.0),  # a 5.8-day job on weekly billing pays one week
        (WEEKLY, 168.0, 168.0),  # exactly a week: one week, not two
        (WEEKLY, 169.0, 336.0),  # an hour over: the second week is billed whole
        (WEEKLY, 3.0, 168.0),  # three hours pay the minimum term
        (OfferingTerms(min_term_hours=24), 30.0, 30.0),  # a minimum only: no rounding above it
        (OfferingTerms(billing_increment_hours=1), 2.25, 3.0),  # hourly billing rounds up
        (BLOCK, 139.4, 144.0),  # 5.81 days in a block of whole days: 6 days
    ],
)
def test_billed_hours(terms, hours, billed):
    assert billed_hours(terms, hours) == pytest.approx(billed)


def test_a_block_fits_up_to_its_longest_length():
    assert fits_term(BLOCK, 336.0)  # 14 days exactly
    assert not fits_term(BLOCK, 336.5)  # would need a 15th day: not sold in 1-day steps
    assert fits_term(WEEKLY, 10_000.0)  # no block: any length


def _cloud(terms: OfferingTerms, usd_per_hour: float) -> Offering:
    return Offering(
        key="k",
        kind="cloud",
        provider="p",
        instance="i",
        region="r",
        pricing="on_demand",
        gpu=get_gpu("H100-80GB"),
        gpus_per_instance=8,
        inter_node_gbps=3200.0,
        usd_per_hour=usd_per_hour,
        terms=terms,
    )


def test_cost_bills_the_term():
    # 4 nodes × 8 GPUs × $2.50 = $80/h; 139.2 h on weekly billing pays 168 h: 80 × 168 = 13,440
    cost = cost_usd(_cloud(WEEKLY, 20.0), 4, 139.2)
    assert cost.running_usd == pytest.approx(13_440.0)
    assert cost.billed_hours == pytest.approx(168.0)
    # the same run billed per hour: 80 × 139.2 = 11,136
    assert cost_usd(_cloud(NO_TERMS, 20.0), 4, 139.2).running_usd == pytest.approx(11_136.0)
    # a p5 capacity block ($39.33/h): 139.4 h -> 6 days = 144 h; 4 × 39.33 × 144 = 22,654.08
    assert cost_usd(_cloud(BLOCK, 39.33), 4, 139.4).running_usd == pytest.approx(22_654.08)


TODAY = dt.date(2026, 12, 5)


@pytest.mark.parametrize(
    ("after", "before", "fits"),
    [
        (None, None, True),  # no window: from today
        (dt.date(2026, 12, 10), dt.date(2026, 12, 20), True),
        (dt.date(2027, 1, 30), None, True),  # today + 56 days = 2027-01-30: the last bookable day
        (dt.date(2027, 1, 31), None, False),  # one day past the 8-week horizon
        (None, dt.date(2026, 12, 4), False),  # the window closed yesterday
    ],
)
def test_block_start_window(after, before, fits):
    assert block_start_fits(BLOCK, after, before, TODAY) is fits
    assert block_start_fits(WEEKLY, after, before, TODAY)  # not a block: no start rule


def test_bundled_cluster_table_rows_and_terms():
    rows = {r.key: r for r in load_clusters()}
    p5 = rows[("aws", "p5.48xlarge", "us-east-1", "capacity_block")]
    # AWS Capacity Blocks page: $39.33 per instance-hour for 8 H100 -> 39.33 / 8 = 4.91625
    assert p5.usd_per_gpu_hour == pytest.approx(39.33 / 8)
    assert (p5.terms.billing_increment_hours, p5.terms.max_term_hours) == (24, 14 * 24)
    assert p5.terms.booking_horizon_days == 8 * 7
    # Lambda docs: 1CCs billed in weekly increments, 16 to 512 GPUs over 8 per node
    lam = rows[("lambda", "1cc-h100-sxm", "unspecified", "on_demand")]
    assert lam.usd_per_gpu_hour is None and lam.terms.access == "quote"
    assert (lam.terms.min_nodes, lam.terms.max_nodes, lam.terms.billing_increment_hours) == (2, 64, 168)
    assert lam in quote_only_clusters({"H100-80GB"}) and not quote_only_clusters({"B200"})
    assert terms_for("aws", "p5.48xlarge", "us-east-1", "capacity_block") == p5.terms
    assert terms_for("aws", "p5.48xlarge", "us-east-1", "on_demand") == NO_TERMS


def test_priced_cluster_rows_are_in_the_bundled_offerings():
    import csv

    with open(data_path("offerings.csv"), newline="", encoding="utf-8") as handle:
        bundled = list(csv.DictReader(handle))
    own = cluster_offering_rows()
    assert own and all(row in bundled for row in own)
    nebius = next(r for r in own if r["provider"] == "nebius")
    # docs.nebius.com: 8 × $2.668 + 128 × $0.012 + 1600 GiB × $0.0032 = 21.344 + 1.536 + 5.12 = $28.00/h
    assert float(nebius["usd_per_hour"]) == pytest.approx(8 * 2.668 + 128 * 0.012 + 1600 * 0.0032)
    assert float(nebius["usd_per_gpu_hour"]) == pytest.approx(3.50)
    assert {r["provider"] for r in own} >= {"aws", "nebius", "crusoe", "coreweave"}


def _table(tmp_path, **change) -> str:
    src = data_path("clusters.csv")
    path = tmp_path / "clusters.csv"
    shutil.copy(src, path)
    if change:
        import csv

        with open(src, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        rows[0].update(change)
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(CLUSTER_COLUMNS))
            writer.writeheader()
            writer.writerows(rows)
    return str(path)


@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        ({"access": "maybe"}, "column 'access'"),
        ({"usd_per_gpu_hour": ""}, "needs its published price"),
        ({"price_as_of": ""}, "needs the date it was read"),
        ({"gpu_id": "H1000"}, "unknown GPU id"),
        ({"pricing_model": "reserved_1y"}, "column 'pricing_model'"),
        ({"min_term_hours": "-1"}, "must be ≥ 0"),
    ],
)
def test_bad_cluster_rows_are_refused(tmp_path, change, phrase):
    from pathlib import Path

    with pytest.raises(CatalogError, match=phrase):
        load_clusters(Path(_table(tmp_path, **change)))
