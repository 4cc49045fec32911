"""Catalog age: source, newest as_of and age in days against an injected date."""

from __future__ import annotations

import datetime as dt

from optimizer.pricing.catalog import (
    CatalogAge,
    catalog_age,
    load_catalog,
    load_catalog_rows,
    load_offering_rows,
)

BUNDLED_AS_OF = dt.date(2026, 12, 5)  # the newest as_of in pricing_data/offerings.csv (clusters.csv)


def test_bundled_age_against_a_fixed_date():
    today = BUNDLED_AS_OF + dt.timedelta(days=63)
    loaded = load_catalog_rows(offline=True, today=today)
    assert loaded.age.source == "bundled" and loaded.age.as_of == BUNDLED_AS_OF
    assert loaded.age.age_days == 63 and loaded.age.path.endswith("offerings.csv")
    assert loaded.age.describe() == "prices as of 2026-12-05 (63 days old, bundled)"
    assert loaded.age.as_dict() == {
        "source": "bundled",
        "as_of": "2026-12-05",
        "age_days": 63,
        "path": loaded.age.path,
    }
    # the old call still returns (rows, description), the same rows and line
    rows, description = load_offering_rows(offline=True)
    assert rows is loaded.rows and description == loaded.description
    assert description == "prices: bundled tables, as of 2026-12-05"


def test_age_wording_and_pandas_catalog_agree():
    same_day = CatalogAge("cache", BUNDLED_AS_OF, "/x/offerings.csv", BUNDLED_AS_OF)
    assert same_day.age_days == 0 and same_day.describe() == "prices as of 2026-12-05 (today, cache)"
    one = CatalogAge("bundled", BUNDLED_AS_OF, "p", BUNDLED_AS_OF + dt.timedelta(days=1))
    assert one.describe() == "prices as of 2026-12-05 (1 day old, bundled)"
    today = dt.date(2027, 1, 1)
    assert load_catalog(offline=True).age(today) == load_catalog_rows(offline=True, today=today).age


def test_age_of_a_given_file_uses_its_newest_row(tiny_csv):
    loaded = load_catalog_rows(tiny_csv, today=dt.date(2026, 12, 11))
    assert loaded.age.source == str(tiny_csv)
    assert loaded.age.as_of == dt.date(2026, 12, 1) and loaded.age.age_days == 10
    assert catalog_age(loaded.rows, "x", tiny_csv, dt.date(2026, 12, 1)).age_days == 0
