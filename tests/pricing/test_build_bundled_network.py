"""The bundled table's rows need a network figure (pricing/build_bundled.py): a shape with no
instance_network.csv row of a provider without a default is dropped, not a crash."""

from __future__ import annotations

from optimizer.pricing.build_bundled import build_rows

#: OCI's GB200 shape as the reference table lists it (reference/cloud_prices.csv, SkyPilot
#: catalog v8): GB200 is a catalog GPU since issue 44, but no page gives the shape's network
GB200_SHAPE = {
    "provider": "oci",
    "instance_type": "BM.GPU.GB200.4",
    "gpu": "GB200",
    "gpus_per_instance": "4",
    "vcpus": "144",
    "ram_gb": "960",
    "region": "af-casablanca-1",
    "price_on_demand_usd_per_hour": "64",
    "price_spot_usd_per_hour": "",
    "price_reserved_1y_usd_per_hour": "",
    "price_reserved_3y_usd_per_hour": "",
    "interconnect": "",
    "source": "skypilot-org/skypilot-catalog catalogs/v8/oci/vms.csv",
    "as_of": "commit 0588751183820 (read 2026-12-02)",
    "notes": "",
}


def test_a_shape_without_a_network_figure_is_dropped() -> None:
    rows, dropped = build_rows([GB200_SHAPE])
    assert rows == [] and dropped == [GB200_SHAPE]


def test_a_provider_default_still_gives_one() -> None:
    lambda_row = {**GB200_SHAPE, "provider": "lambda", "instance_type": "gpu_1x_h100_sxm5", "gpu": "H100"}
    lambda_row["gpus_per_instance"] = "1"
    rows, dropped = build_rows([lambda_row])
    assert dropped == [] and {r["pricing_model"] for r in rows} == {"on_demand"}
    assert rows[0]["inter_node_kind"] == "ethernet" and rows[0]["inter_node_is_default"] == "true"
