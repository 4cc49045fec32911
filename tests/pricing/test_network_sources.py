"""Per-instance network figures: every published figure has a source, and spot checks.

Expected numbers are worked out here from the providers' own wording (quoted in each test),
not copied from the table: e.g. Azure ND H100 v5 "400 Gbps ... InfiniBand connection" per GPU
times 8 GPUs = 3200 Gbit/s per VM.
"""

from __future__ import annotations

import csv

import pytest

from optimizer.inputs.gpus import data_path
from optimizer.pricing.build_bundled import (
    INTERCONNECT,
    NETWORK_COLUMNS,
    PROVIDER_DEFAULT,
    load_network_table,
)
from optimizer.pricing.clusters import cluster_keys, load_clusters

#: providers whose every instance must have its own row (no silent per-provider fallback)
PER_INSTANCE_PROVIDERS = {"aws", "gcp", "azure", "oci"}


@pytest.fixture(scope="module")
def offerings() -> list[dict[str, str]]:
    with open(data_path("offerings.csv"), newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def network() -> dict[tuple[str, str], dict[str, str]]:
    return load_network_table()


def _net(offerings, provider, instance):
    rows = [r for r in offerings if (r["provider"], r["instance_type"]) == (provider, instance)]
    assert rows, (provider, instance)
    kinds = {(r["inter_node_kind"], float(r["inter_node_gbps"]), r["inter_node_is_default"]) for r in rows}
    assert len(kinds) == 1, kinds  # every pricing row of one instance carries the same network
    return kinds.pop()


def test_table_columns_and_every_published_row_has_a_source(network):
    with open(data_path("instance_network.csv"), newline="", encoding="utf-8") as handle:
        assert tuple(csv.DictReader(handle).fieldnames or ()) == NETWORK_COLUMNS
    for key, row in network.items():
        assert row["inter_node_kind"] in {"infiniband", "efa", "ethernet", "rdma"}, key
        assert float(row["inter_node_gbps"]) > 0, key
        assert row["notes"].strip(), key  # what the figure means, or why it is a guess
        if row["inter_node_is_default"] == "false":
            assert row["source_url"].startswith("https://"), key
            assert row["source_version"].strip() and row["source_version"] != "not read", key
        else:
            assert "guess" in row["notes"].lower() or "default" in row["notes"].lower(), key


def _own(row):
    """A row of our own cluster table (pricing_data/clusters.csv): its fabric is cited there."""
    return (row["provider"], row["instance_type"], row["region"], row["pricing_model"]) in cluster_keys()


def test_every_non_default_offering_figure_is_sourced(offerings, network):
    for row in offerings:
        if row["inter_node_is_default"] == "true" or _own(row):
            continue
        key = (row["provider"], row["instance_type"])
        assert key in network, key
        src = network[key]
        assert src["inter_node_is_default"] == "false", key
        assert src["source_url"].startswith("https://"), key
        assert (row["inter_node_kind"], float(row["inter_node_gbps"])) == (
            src["inter_node_kind"],
            float(src["inter_node_gbps"]),
        ), key


def test_offerings_match_the_network_table(offerings, network):
    for row in offerings:
        key = (row["provider"], row["instance_type"])
        if _own(row) and key not in network:
            continue  # a cluster of our own table (test_cluster_fabrics_are_cited)
        if row["provider"] in PER_INSTANCE_PROVIDERS:
            assert key in network, f"{key} has no row in instance_network.csv"
        if key in network:
            src = network[key]
            assert (row["inter_node_kind"], float(row["inter_node_gbps"]), row["inter_node_is_default"]) == (
                src["inter_node_kind"],
                float(src["inter_node_gbps"]),
                src["inter_node_is_default"],
            ), key
        else:  # marketplace / neocloud fallback: always flagged as a guess
            assert row["provider"] in PROVIDER_DEFAULT, key
            assert row["inter_node_is_default"] == "true", key
    assert set(INTERCONNECT) == set(network)


def test_cluster_fabrics_are_cited():
    """Every cluster row of our own table cites where its fabric is read; a published figure
    names a page or a repository file, a guess says so."""
    for row in load_clusters():
        assert row.fabric_source.strip(), row.key
        if row.inter_node_is_default:
            assert "GUESS" in row.fabric_source or "not read" in row.fabric_source, row.key
        else:
            assert "https://" in row.fabric_source or ".md" in row.fabric_source, row.key
            assert row.inter_node_kind in {"infiniband", "efa"}, row.key
    # Lambda docs: "Quantum-2 400Gb/s InfiniBand ... GPUDirect RDMA communication of up to
    # 3200Gb/s": 8 GPUs x 400 Gb/s = 3200 per node
    lam = {r.instance_type: r for r in load_clusters() if r.provider == "lambda"}["1cc-h100-sxm"]
    assert lam.inter_node_gbps == 8 * 400
    # AWS Capacity Blocks page: p4d "400 Gigabit", p5 "3200 Gigabit"
    aws = {r.instance_type: r.inter_node_gbps for r in load_clusters() if r.provider == "aws"}
    assert aws["p4d.24xlarge"] == 400 and aws["p5.48xlarge"] == 3200


def test_aws_published_figures(offerings):
    # ac.html "Network specifications": p5.48xlarge 3200 Gigabit; EFA guide "up to 32 network
    # cards ... up to 3,200 Gbps"
    assert _net(offerings, "aws", "p5.48xlarge") == ("efa", 3200.0, "false")
    # 2023 user guide: p4d.24xlarge "4x 100 Gigabit", ENA | EFA -> 4 x 100
    assert _net(offerings, "aws", "p4d.24xlarge") == ("efa", 4 * 100.0, "false")
    # "Baseline / Burst bandwidth (Gbps)" g5.xlarge 2.5 / 10.0: the sustained baseline is kept,
    # not the credit-based "up to 10" burst
    assert _net(offerings, "aws", "g5.xlarge") == ("ethernet", 2.5, "false")
    # g4dn.12xlarge "50 Gigabit", ENA | EFA
    assert _net(offerings, "aws", "g4dn.12xlarge") == ("efa", 50.0, "false")


def test_azure_published_figures(offerings):
    # ND H100 v5: "3.2 Tbps of interconnect bandwidth per VM", 400 Gbps CX7 InfiniBand per GPU
    assert _net(offerings, "azure", "Standard_ND96isr_H100_v5") == ("infiniband", 8 * 400.0, "false")
    # ND A100 v4: 200 Gb/s HDR InfiniBand per GPU, 8 GPUs
    assert _net(offerings, "azure", "Standard_ND96asr_v4") == ("infiniband", 8 * 200.0, "false")
    # NC24ads A100 v4 network tab: Max Bandwidth 20000 Mbps, no InfiniBand
    assert _net(offerings, "azure", "Standard_NC24ads_A100_v4") == ("ethernet", 20000 / 1000, "false")
    # NCv3: the page lists NICs but no bandwidth -> stays a flagged guess
    assert _net(offerings, "azure", "Standard_NC24s_v3")[2] == "true"


def test_gcp_published_figures(offerings):
    # A3 Ultra: "eight NVIDIA ConnectX-7 NICs deliver a total network bandwidth of 3,200 Gbps"
    # for GPU-to-GPU traffic (RDMA); the 400 Gbps of gVNICs for general traffic is excluded
    assert _net(offerings, "gcp", "a3-ultragpu-8g") == ("rdma", 3200.0, "false")
    assert _net(offerings, "gcp", "a2-highgpu-8g") == ("ethernet", 100.0, "false")
    # N1 + GPU per-combination table not read -> flagged
    assert _net(offerings, "gcp", "n1-standard-64+8xV100")[2] == "true"


def test_unread_providers_stay_flagged(offerings):
    for provider in ("oci", "lambda", "runpod", "vast", "coreweave"):
        flags = {r["inter_node_is_default"] for r in offerings if r["provider"] == provider}
        assert flags == {"true"}, provider
