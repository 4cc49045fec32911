"""Loader validation: every malformed case is one CatalogError naming file, row and column."""

from __future__ import annotations

from pathlib import Path

import pytest

from optimizer.errors import CatalogError
from optimizer.pricing.catalog import COLUMNS, load_catalog_rows
from optimizer.pricing.schema import read_offerings

# (row index into the tiny rows, column, bad value, key phrase of the message)
# the tiny file's data rows sit on CSV lines 2, 3, 4
CELL_CASES = [
    (0, "usd_per_hour", "", "value is missing"),
    (1, "usd_per_hour", "-24", "greater than 0"),
    (2, "usd_per_hour", "0", "greater than 0"),
    (0, "usd_per_hour", "forty", "valid number"),
    (0, "usd_per_hour", "nan", "finite number"),
    (2, "usd_per_gpu_hour", "2.8", "usd_per_hour / gpus_per_instance"),  # per-instance, not per GPU
    (0, "gpu_id", "H1000", "unknown GPU id"),
    (0, "gpu_id", "", "value is missing"),
    (1, "pricing_model", "monthly", "reserved_1y"),
    (1, "commitment_hours", "0", "does not match pricing_model"),
    (0, "gpus_per_instance", "8.5", "valid integer"),
    (0, "gpus_per_instance", "0", "greater than 0"),
    (2, "inter_node_kind", "pigeon", "ethernet"),
    (2, "intra_node_link", "usb", "nvlink"),
    (2, "max_instances", "0", "greater than or equal to 1"),
    (0, "derived", "maybe", "valid boolean"),
    (0, "derived", "true", "only reserved rows"),
    (0, "as_of", "30/11/2026", "date"),
    (0, "provider", "AWS Cloud", "pattern"),
    (2, "vcpus", "-4", "greater than 0"),
]


@pytest.mark.parametrize(("index", "column", "value", "phrase"), CELL_CASES)
def test_bad_cell_names_file_row_column(tmp_path, tiny_rows, make_csv, index, column, value, phrase):
    tiny_rows[index][column] = value
    path = tmp_path / "bad.csv"
    path.write_text(make_csv(tiny_rows), encoding="utf-8")
    with pytest.raises(CatalogError) as info:
        read_offerings(path)
    message = str(info.value)
    assert str(path) in message
    assert f"row {index + 2}," in message
    assert f"column '{column}'" in message
    assert phrase in message


def test_duplicate_offering(tmp_path, tiny_rows, make_csv):
    rows = tiny_rows + [dict(tiny_rows[0], usd_per_hour="48", usd_per_gpu_hour="6")]
    path = tmp_path / "dup.csv"
    path.write_text(make_csv(rows), encoding="utf-8")
    with pytest.raises(CatalogError, match=r"row 5, column 'pricing_model': duplicate .*row 2"):
        read_offerings(path)


@pytest.mark.parametrize(
    ("columns", "column", "phrase"),
    [
        ([c for c in COLUMNS if c != "source"], "source", "missing column"),
        ([*COLUMNS, "notes"], "notes", "unexpected column"),
        ([c if c != "usd_per_hour" else "price" for c in COLUMNS], "usd_per_hour", "missing column"),
    ],
)
def test_bad_header(tmp_path, tiny_rows, make_csv, columns, column, phrase):
    path = tmp_path / "header.csv"
    rows = [dict(r, notes="x", price="1") for r in tiny_rows]
    path.write_text(make_csv(rows, columns), encoding="utf-8")
    with pytest.raises(CatalogError) as info:
        read_offerings(path)
    assert f"{path}: row 1, column '{column}': {phrase}" in str(info.value)


def test_short_row(tmp_path, tiny_rows, make_csv):
    text = make_csv(tiny_rows).splitlines()
    text[3] = ",".join(text[3].split(",")[:5])  # 5 of 20 fields on line 4
    path = tmp_path / "short.csv"
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    with pytest.raises(CatalogError, match=r"row 4, column 'vcpus': expected 20 fields, got 5"):
        read_offerings(path)


def test_empty_and_headers_only(tmp_path, make_csv):
    empty = tmp_path / "empty.csv"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(CatalogError, match="empty file"):
        read_offerings(empty)
    header_only = tmp_path / "header_only.csv"
    header_only.write_text(make_csv([]), encoding="utf-8")
    with pytest.raises(CatalogError, match="no offerings"):
        read_offerings(header_only)


def test_valid_tiny_file_types(tiny_csv: Path):
    frame = read_offerings(tiny_csv)
    assert list(frame.columns) == list(COLUMNS)
    assert frame["gpus_per_instance"].tolist() == [8, 8, 8]
    assert frame["max_instances"].isna().tolist() == [True, True, False]
    assert frame["derived"].tolist() == [False, True, False]
    assert frame["as_of"].tolist() == ["2026-11-30", "2026-11-30", "2026-12-01"]


def test_pydantic_literals_match_catalog_constants():
    from typing import get_args

    from optimizer.pricing import catalog, schema

    assert get_args(schema.PricingModel) == catalog.PRICING_MODELS
    assert get_args(schema.InterNodeKind) == catalog.INTER_NODE_KINDS
    assert get_args(schema.IntraNodeLink) == catalog.INTRA_NODE_LINKS


def test_bundled_file_validates():
    from optimizer.pricing.catalog import bundled_path

    frame = read_offerings(bundled_path())
    assert len(frame) > 200
    assert not frame.duplicated(["provider", "instance_type", "region", "pricing_model"]).any()


def test_a_field_over_the_csv_parser_limit_names_file_and_row(tmp_path, tiny_rows, make_csv):
    """csv.Error was an internal error (exit 3); it is bad input naming the file and the row."""
    phrase = "field larger than field limit"
    tiny_rows[1]["source"] = "x" * 200_000
    path = tmp_path / "big.csv"
    path.write_text(make_csv(tiny_rows), encoding="utf-8")
    with pytest.raises(CatalogError) as info:
        read_offerings(path)
    assert f"{path}: row 3: not readable as CSV" in str(info.value) and phrase in str(info.value)
    assert "allowed: fields of at most 131,072 characters" in str(info.value)


def test_a_cache_the_csv_parser_refuses_falls_back_to_the_bundled_tables(
    tmp_path, tiny_rows, make_csv, monkeypatch
):
    monkeypatch.setenv("CCOPT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CCOPT_OFFLINE", raising=False)
    tiny_rows[0]["source"] = "x" * 200_000
    (tmp_path / "offerings.csv").write_text(make_csv(tiny_rows), encoding="utf-8")
    catalog = load_catalog_rows()
    assert catalog.age.source == "bundled" and "not readable as CSV" in catalog.note
