"""The host and data tables (instance_host.csv, provider_storage.csv): sourced, complete, checked."""

from __future__ import annotations

import csv

import pytest

from optimizer.errors import CatalogError
from optimizer.inputs.gpus import data_path
from optimizer.pricing import host

PRICE_COLUMNS = (
    "egress_internet_usd_per_gb",
    "egress_inter_region_usd_per_gb",
    "ingress_usd_per_gb",
    "object_storage_usd_per_gb_month",
)


def _rows(name: str) -> list[dict[str, str]]:
    with open(data_path(name), newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_every_published_storage_price_names_its_page() -> None:
    for row in _rows("provider_storage.csv"):
        if any(row[c].strip() for c in PRICE_COLUMNS):
            assert "https://" in row["source"], row["provider"]


def test_every_offering_instance_has_a_host_row() -> None:
    offered = {(r["provider"], r["instance_type"]) for r in _rows("offerings.csv")}
    described = {(r["provider"], r["instance_type"]) for r in _rows("instance_host.csv")}
    assert offered <= described, sorted(offered - described)


def test_known_local_disks_cite_a_source_and_unknown_ones_say_why() -> None:
    for row in _rows("instance_host.csv"):
        if row["local_nvme_gb"].strip():
            assert row["source"].strip(), row["instance_type"]
        else:
            assert row["notes"].strip(), row["instance_type"]


def test_lookups_read_the_published_figures() -> None:
    # aws p4d.24xlarge: '8 x 1 TB NVMe SSD'; p3.2xlarge: EBS only; lambda: not read
    assert host.local_nvme_gb("aws", "p4d.24xlarge") == 8000
    assert host.local_nvme_gb("aws", "p3.2xlarge") == 0
    assert host.local_nvme_gb("lambda", "gpu_8x_h100_sxm5") is None
    aws = host.storage_rates("aws", "us-east-1")
    assert aws.egress_internet_usd_per_gb == 0.09 and aws.object_storage_usd_per_gb_month is None
    assert host.storage_rates("lambda", "us-east-1").egress_internet_usd_per_gb == 0  # 'all'
    assert host.storage_rates("aws", "eu-west-1") is None  # no row: unknown


def test_a_negative_price_is_a_catalog_error(tmp_path) -> None:
    bad = tmp_path / "provider_storage.csv"
    bad.write_text(
        "provider,region,egress_internet_usd_per_gb,egress_inter_region_usd_per_gb,"
        "ingress_usd_per_gb,object_storage_usd_per_gb_month,object_storage_service,"
        "as_of,source,notes\naws,us-east-1,-0.09,,,,,,,\n"
    )
    with pytest.raises(CatalogError, match="row 2, column 'egress_internet_usd_per_gb'"):
        host._storage(str(bad))
