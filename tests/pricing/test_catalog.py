"""Bundled catalog contents, derived reserved rates, filters and the cheapest-offering helper."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from optimizer.errors import ConfigError
from optimizer.inputs.gpus import gpu_ids
from optimizer.pricing.catalog import (
    COLUMNS,
    PRICING_MODELS,
    cheapest_per_gpu_hour,
    filter_offerings,
    load_catalog,
    load_offering_rows,
)
from optimizer.pricing.offering import cost_usd
from optimizer.pricing.offerings import cloud_offering


@pytest.fixture(scope="module")
def bundled():
    return load_catalog(offline=True).frame


def _one(frame, **match):
    rows = frame
    for column, value in match.items():
        rows = rows[rows[column] == value]
    assert len(rows) == 1, match
    return rows.iloc[0]


def test_bundled_schema_and_source():
    catalog = load_catalog(offline=True)
    assert catalog.source == "bundled"
    # the newest row: a Crusoe price of our own cluster table, read 2026-12-05 (clusters.csv)
    assert catalog.as_of == "2026-12-05"
    assert catalog.describe() == "prices: bundled tables, as of 2026-12-05"
    assert list(catalog.frame.columns) == list(COLUMNS)
    assert Path(catalog.path).name == "offerings.csv"


def test_bundled_coverage(bundled):
    providers = set(bundled["provider"])
    assert {"aws", "gcp", "azure", "lambda"} <= providers
    assert len(providers - {"aws", "gcp", "azure", "lambda"}) >= 2
    assert set(bundled["gpu_id"]) <= set(gpu_ids())
    # GPUs the reference rents but the GPU catalog lacks were dropped, not renamed
    assert (
        not bundled["instance_type"]
        .isin(["gpu_1x_rtx6000", "BM.GPU2.2", "BM.GPU.GB200.4", "BM.GPU.RTXPRO.8"])
        .any()
    )
    assert set(bundled["pricing_model"]) == set(PRICING_MODELS)
    # every row carries an inter-node figure and a kind
    assert (bundled["inter_node_gbps"] > 0).all()


def test_derived_reserved_rate_aws_p5(bundled):
    # p5.48xlarge on-demand 55.04 $/h (skypilot catalog v8); AWS discount 37 % / 57 %:
    # 1y: 55.04 × 0.63 = 34.6752 $/h  -> 34.6752 / 8 = 4.3344 $/GPU-h
    # 3y: 55.04 × 0.43 = 23.6672 $/h  -> 2.9584 $/GPU-h
    one = _one(bundled, instance_type="p5.48xlarge", pricing_model="reserved_1y")
    three = _one(bundled, instance_type="p5.48xlarge", pricing_model="reserved_3y")
    assert one["usd_per_hour"] == pytest.approx(34.6752, abs=1e-6)
    assert one["usd_per_gpu_hour"] == pytest.approx(4.3344, abs=1e-6)
    assert three["usd_per_hour"] == pytest.approx(23.6672, abs=1e-6)
    assert bool(one["derived"]) and bool(three["derived"])
    assert (one["commitment_hours"], three["commitment_hours"]) == (8760, 26280)
    # committed cost of 2 instances for a year: 34.6752 × 8760 × 2 = 607,509.504 USD, however
    # few hours are used; on demand bills only the hours used (2 × 55.04 × 10 h = 1,100.8)
    rows = {(r.instance_type, r.pricing_model): r for r in load_offering_rows(offline=True)[0]}
    reserved = cloud_offering(rows["p5.48xlarge", "reserved_1y"])
    assert cost_usd(reserved, 2, 10.0).total_usd == pytest.approx(607_509.504, rel=1e-9)
    od = _one(bundled, instance_type="p5.48xlarge", pricing_model="on_demand")
    assert not bool(od["derived"])
    on_demand = cloud_offering(rows["p5.48xlarge", "on_demand"])
    assert cost_usd(on_demand, 2, 10.0).total_usd == pytest.approx(2 * 55.04 * 10, rel=1e-9)


def test_derived_reserved_rate_gcp_a3(bundled):
    # a3-highgpu-8g on-demand 87.83247; GCP 1y 37 %: 87.83247 × 0.63 = 55.3344561
    row = _one(bundled, instance_type="a3-highgpu-8g", pricing_model="reserved_1y")
    assert row["usd_per_hour"] == pytest.approx(55.3344561, abs=1e-5)


def test_no_reservations_or_fake_spot_for_marketplaces(bundled):
    for provider in ("vast", "runpod", "lambda"):
        models = set(bundled.loc[bundled["provider"] == provider, "pricing_model"])
        assert models == {"on_demand"}, provider


def test_interconnect_defaults(bundled):
    p4d = _one(bundled, instance_type="p4d.24xlarge", pricing_model="on_demand")
    assert (p4d["inter_node_kind"], p4d["inter_node_gbps"]) == ("efa", 400.0)
    assert not bool(p4d["inter_node_is_default"])  # read in the reference
    nd = _one(bundled, instance_type="Standard_ND96isr_H100_v5", pricing_model="on_demand")
    # ND H100 v5: 8 × 400 Gb/s InfiniBand, published on the series page (instance_network.csv)
    assert (nd["inter_node_kind"], nd["inter_node_gbps"], bool(nd["inter_node_is_default"])) == (
        "infiniband",
        3200.0,
        False,
    )
    vast = bundled[bundled["provider"] == "vast"]
    # marketplace hosts in different locations: only the public internet joins them
    assert (vast["inter_node_kind"] == "internet").all() and (vast["inter_node_gbps"] <= 25).all()
    assert (vast["max_instances"] == 4).all()
    # intra-node link comes from the GPU catalog
    assert set(bundled.loc[bundled["gpu_id"] == "RTX4090", "intra_node_link"]) == {"pcie"}


def test_filter_by_alias_case_and_lists(bundled):
    h100 = filter_offerings(bundled, gpus="h100", providers="AWS")
    assert set(h100["gpu_id"]) == {"H100-80GB"} and set(h100["provider"]) == {"aws"}
    both = filter_offerings(bundled, gpus=["RTX4090", "3090"], pricing="reserved-1y,on_demand")
    assert set(both["gpu_id"]) == {"RTX4090", "RTX3090"}
    assert set(both["pricing_model"]) == {"on_demand"}  # nobody reserves consumer cards here
    east = filter_offerings(bundled, regions="US-EAST-1")
    assert set(east["region"]) == {"us-east-1"}
    kansas = filter_offerings(bundled, regions=["Kansas, US, NA", "eastus"])  # commas kept
    assert set(kansas["region"]) == {"Kansas, US, NA", "eastus"}


def test_filter_max_instances(tiny_csv):
    frame = load_catalog(tiny_csv).frame
    assert len(filter_offerings(frame, min_instances=2)) == 3  # NaN = no limit, vast allows 2
    assert set(filter_offerings(frame, min_instances=3)["provider"]) == {"aws"}
    # the old keyword, same meaning ("at least")
    assert set(filter_offerings(frame, max_instances=3)["provider"]) == {"aws"}


@pytest.mark.parametrize(
    ("kwargs", "phrase"),
    [
        ({"providers": "awz"}, "provider: unknown value 'awz'"),
        ({"pricing": "monthly"}, "Allowed: capacity_block, on_demand, reserved_1y, reserved_3y, spot"),
        ({"regions": "mars-1"}, "region: unknown value 'mars-1'"),
        ({"gpus": "H1000"}, "gpu: unknown GPU 'H1000'"),
        ({"min_instances": 0}, "min_instances: must be >= 1"),
        ({"max_instances": 0}, "min_instances: must be >= 1"),
    ],
)
def test_filter_errors(bundled, kwargs, phrase):
    with pytest.raises(ConfigError) as info:
        filter_offerings(bundled, **kwargs)
    assert phrase in str(info.value)


def test_cheapest_per_gpu_hour(tiny_csv):
    cheapest = cheapest_per_gpu_hour(load_catalog(tiny_csv).frame)
    # H100: reserved_1y 24 $/h / 8 = 3 beats on-demand 5; RTX4090: 2.8 / 8 = 0.35
    assert cheapest[["gpu_id", "pricing_model", "usd_per_gpu_hour"]].values.tolist() == [
        ["RTX4090", "on_demand", 0.35],
        ["H100-80GB", "reserved_1y", 3.0],
    ]


def test_cheapest_bundled_is_sorted_and_unique(bundled):
    cheapest = cheapest_per_gpu_hour(bundled)
    assert cheapest["gpu_id"].is_unique
    assert cheapest["usd_per_gpu_hour"].is_monotonic_increasing
    for row in cheapest.itertuples(index=False):
        assert row.usd_per_gpu_hour == bundled.loc[bundled["gpu_id"] == row.gpu_id, "usd_per_gpu_hour"].min()


def test_cache_preferred_unless_offline(tiny_csv, isolated_env, monkeypatch):
    isolated_env.mkdir()
    cached = isolated_env / "offerings.csv"
    cached.write_bytes(tiny_csv.read_bytes())
    catalog = load_catalog()
    assert (catalog.source, catalog.as_of, len(catalog.frame)) == ("cache", "2026-12-01", 3)
    assert load_catalog(offline=True).source == "bundled"
    monkeypatch.setenv("CCOPT_OFFLINE", "1")
    assert load_catalog().source == "bundled"


def test_invalid_cache_falls_back_with_note(isolated_env):
    isolated_env.mkdir()
    (isolated_env / "offerings.csv").write_text("provider\naws\n", encoding="utf-8")
    catalog = load_catalog()
    assert catalog.source == "bundled"
    assert "ignored invalid cache" in catalog.note and "row 1" in catalog.note


def test_replaced_file_is_reread(tmp_path, tiny_rows, make_csv):
    path = tmp_path / "moving.csv"
    path.write_text(make_csv(tiny_rows), encoding="utf-8")
    assert len(load_catalog(path).frame) == 3
    path.write_text(make_csv(tiny_rows[:2]), encoding="utf-8")
    os.utime(path, ns=(1, 1))  # a different mtime even on coarse-clock file systems
    assert len(load_catalog(path).frame) == 2


def test_frame_is_a_copy(tiny_csv):
    first = load_catalog(tiny_csv).frame
    first.loc[:, "usd_per_hour"] = 0.0
    assert load_catalog(tiny_csv).frame["usd_per_hour"].min() > 0


def test_missing_file_is_a_catalog_error(tmp_path):
    from optimizer.errors import CatalogError

    with pytest.raises(CatalogError, match=r"nope\.csv: cannot read"):
        load_catalog(tmp_path / "nope.csv")
