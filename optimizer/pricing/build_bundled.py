"""Rebuild pricing_data/offerings.csv from the shared reference table (maintainer tool).

Usage: ``python -m optimizer.pricing.build_bundled REFERENCE_DIR [OUT_CSV]`` where REFERENCE_DIR
holds ``cloud_prices.csv`` (one row per provider × instance with on-demand / spot prices).
Every rule applied here is documented in pricing_data/README.md; the tables below are the
single place where reserved discounts and interconnect defaults are chosen.
"""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

from optimizer.errors import ConfigError
from optimizer.inputs.gpus import data_path, load_gpus, resolve_gpu_id
from optimizer.pricing.catalog import COLUMNS, COMMITMENT_HOURS

__all__ = ["RESERVED_DISCOUNTS", "INTERCONNECT", "LAMBDA_PCIE_A100", "build_rows", "main"]

READ_DATE = "2026-12-02"  # date the reference rows were read (reference/README.md)

#: provider -> (1-year, 3-year) fractional discount off on-demand, applied where the provider
#: publishes no per-instance reserved rate. Reasons in pricing_data/README.md "Reserved rates".
RESERVED_DISCOUNTS: dict[str, tuple[float, float]] = {
    # AWS g6e.xlarge no-upfront ~$1.17 / ~$0.80 vs $1.861 on-demand (modal.com 2025-08-12)
    "aws": (0.37, 0.57),
    # GCP GPU CUD 37 % / 55 % as remembered from GCP's GPU CUD page (not in the reference);
    # reference only has "up to 57 %" for 1y or 3y, so 3y stays below that ceiling.
    "gcp": (0.37, 0.55),
    # Azure: reference only has "up to 72 %" (a maximum); GUESS: reuse the AWS GPU observation.
    "azure": (0.37, 0.57),
}
RESERVED_SOURCE = {
    "aws": "derived: on-demand x (1-d); d = 37%/57% from AWS g6e.xlarge no-upfront "
    "1y/3y (modal.com 2025-08-12, reference/reserved_discounts.csv)",
    "gcp": "derived: on-demand x (1-d); d = 37%/55% GCP GPU CUD (remembered; reference "
    "reserved_discounts.csv gives only 'up to 57%')",
    "azure": "derived: on-demand x (1-d); d = 37%/57% GUESS (AWS GPU observation reused; "
    "reference gives only Azure 'up to 72%')",
}
#: CoreWeave publishes a reservation "from $0.90/GPU-h" for L40S (secondary, modal.com);
#: used as given for both terms (it is a best-case 'from' price).
COREWEAVE_L40S_RESERVED_USD_PER_GPU_HOUR = 0.90

#: Lambda's 1x/2x/4x "A100 40GB" instances: the catalog does not say SXM or PCIe; the GPU
#: catalog maps them to the PCIe part (gpus.csv notes for A100-40GB-PCIE).
LAMBDA_PCIE_A100 = {"gpu_1x_a100", "gpu_2x_a100", "gpu_4x_a100"}

# (kind, Gbit/s per instance, provenance) per (provider, instance_type). provenance is one of
# "reference" (read in the shared reference data; inter_node_is_default=False),
# "remembered" (vendor-published figure recalled, not re-read), "guess".
_IC = tuple[str, float, str]
INTERCONNECT: dict[tuple[str, str], _IC] = {
    # --- AWS (EC2 instance-type pages; p4d/p5/p5e figures in the reference Capacity Blocks page)
    ("aws", "p4d.24xlarge"): ("efa", 400, "reference"),
    ("aws", "p4de.24xlarge"): ("efa", 400, "remembered"),  # reference: "assumed same as p4d"
    ("aws", "p5.48xlarge"): ("efa", 3200, "reference"),
    ("aws", "p5.4xlarge"): ("efa", 100, "guess"),
    ("aws", "p5e.48xlarge"): ("efa", 3200, "reference"),
    ("aws", "p5en.48xlarge"): ("efa", 3200, "remembered"),
    ("aws", "p6-b200.48xlarge"): ("efa", 3200, "remembered"),
    ("aws", "p6-b300.48xlarge"): ("efa", 6400, "remembered"),
    ("aws", "p3dn.24xlarge"): ("efa", 100, "remembered"),
    ("aws", "p3.2xlarge"): ("ethernet", 10, "remembered"),  # "up to 10 Gigabit"
    ("aws", "p3.8xlarge"): ("ethernet", 10, "remembered"),
    ("aws", "p3.16xlarge"): ("ethernet", 25, "remembered"),
    ("aws", "g4dn.xlarge"): ("ethernet", 25, "remembered"),  # "up to 25"
    ("aws", "g4dn.12xlarge"): ("ethernet", 50, "remembered"),
    ("aws", "g5.xlarge"): ("ethernet", 10, "remembered"),  # "up to 10"
    ("aws", "g5.12xlarge"): ("ethernet", 40, "remembered"),
    ("aws", "g5.16xlarge"): ("ethernet", 25, "remembered"),
    ("aws", "g5.48xlarge"): ("efa", 100, "remembered"),
    ("aws", "g6.xlarge"): ("ethernet", 10, "remembered"),  # "up to 10"
    ("aws", "g6.12xlarge"): ("ethernet", 40, "remembered"),
    ("aws", "g6.48xlarge"): ("efa", 100, "remembered"),
    ("aws", "g6e.xlarge"): ("ethernet", 20, "remembered"),  # "up to 20"
    ("aws", "g6e.12xlarge"): ("efa", 100, "remembered"),
    ("aws", "g6e.48xlarge"): ("efa", 400, "remembered"),
    # --- GCP (A3: GPUDirect-TCPX/TCPXO over Ethernet NICs; A3 Ultra: RDMA over CX-7)
    ("gcp", "a3-highgpu-8g"): ("ethernet", 800, "remembered"),  # 4 x 200 Gbps, GPUDirect-TCPX
    ("gcp", "a3-highgpu-4g"): ("ethernet", 400, "guess"),
    ("gcp", "a3-megagpu-8g"): ("ethernet", 1600, "remembered"),  # 8 x 200 Gbps, TCPXO
    ("gcp", "a3-ultragpu-8g"): ("rdma", 3200, "remembered"),  # 8 x 400 Gbps RoCE
    ("gcp", "a2-highgpu-1g"): ("ethernet", 24, "remembered"),
    ("gcp", "a2-highgpu-2g"): ("ethernet", 32, "remembered"),
    ("gcp", "a2-highgpu-4g"): ("ethernet", 50, "remembered"),
    ("gcp", "a2-highgpu-8g"): ("ethernet", 100, "remembered"),
    ("gcp", "a2-ultragpu-1g"): ("ethernet", 24, "remembered"),
    ("gcp", "a2-ultragpu-8g"): ("ethernet", 100, "remembered"),
    ("gcp", "g2-standard-4"): ("ethernet", 10, "remembered"),
    ("gcp", "g2-standard-8"): ("ethernet", 16, "remembered"),
    ("gcp", "g2-standard-48"): ("ethernet", 50, "remembered"),
    ("gcp", "n1-standard-8+1xT4"): ("ethernet", 16, "remembered"),  # N1: 2 Gbps per vCPU
    ("gcp", "n1-standard-8+1xV100"): ("ethernet", 16, "remembered"),
    ("gcp", "n1-standard-64+8xV100"): ("ethernet", 32, "remembered"),
    # --- Azure (ND-series: one InfiniBand HCA per GPU)
    ("azure", "Standard_ND96asr_v4"): ("infiniband", 1600, "remembered"),  # 8 x 200 HDR
    ("azure", "Standard_ND96amsr_A100_v4"): ("infiniband", 1600, "remembered"),
    ("azure", "Standard_ND96isr_H100_v5"): ("infiniband", 3200, "remembered"),  # 8 x 400 NDR
    ("azure", "Standard_ND40rs_v2"): ("infiniband", 100, "remembered"),  # EDR
    ("azure", "Standard_NC24ads_A100_v4"): ("ethernet", 20, "remembered"),
    ("azure", "Standard_NC96ads_A100_v4"): ("ethernet", 80, "remembered"),
    ("azure", "Standard_NC40ads_H100_v5"): ("ethernet", 40, "guess"),
    ("azure", "Standard_NC4as_T4_v3"): ("ethernet", 8, "remembered"),
    ("azure", "Standard_NV36ads_A10_v5"): ("ethernet", 40, "guess"),
    ("azure", "Standard_NC6s_v3"): ("ethernet", 10, "guess"),
    ("azure", "Standard_NC24s_v3"): ("ethernet", 25, "guess"),
    # --- OCI bare-metal GPU shapes: RoCE cluster networking
    ("oci", "BM.GPU4.8"): ("rdma", 1600, "remembered"),  # 8 x 200 Gbps
    ("oci", "BM.GPU.A100-v2.8"): ("rdma", 1600, "remembered"),
    ("oci", "BM.GPU.H100.8"): ("rdma", 3200, "remembered"),  # 16 x 200 Gbps
    ("oci", "BM.GPU.H200.8"): ("rdma", 3200, "remembered"),
    ("oci", "BM.GPU.B200.8"): ("rdma", 3200, "guess"),
    ("oci", "BM.GPU.B300.8"): ("rdma", 3200, "guess"),
    ("oci", "BM.GPU.MI300X.8"): ("rdma", 3200, "remembered"),
    ("oci", "BM.GPU.MI355X.8"): ("rdma", 3200, "guess"),
    ("oci", "BM.GPU.L40S.4"): ("rdma", 800, "guess"),
    ("oci", "BM.GPU.A10.4"): ("ethernet", 100, "guess"),
    ("oci", "BM.GPU3.8"): ("ethernet", 50, "guess"),
    ("oci", "VM.GPU.A10.1"): ("ethernet", 24, "guess"),
    ("oci", "VM.GPU.A10.2"): ("ethernet", 48, "guess"),
    ("oci", "VM.GPU3.1"): ("ethernet", 8, "guess"),
    ("oci", "VM.GPU3.2"): ("ethernet", 16, "guess"),
    ("oci", "VM.GPU3.4"): ("ethernet", 24, "guess"),
}
#: per-provider fallback (kind, Gbit/s, provenance) for instances not listed above.
#: Lambda on-demand instances: plain Ethernet between instances; the 3200 Gbps InfiniBand
#: fabric belongs to Lambda's 1-Click Clusters, which are priced separately (not in the data).
PROVIDER_DEFAULT: dict[str, tuple[_IC, _IC]] = {  # (fewer than 8 GPUs, 8 GPUs)
    "lambda": (("ethernet", 25, "guess"), ("ethernet", 100, "guess")),
    "runpod": (("ethernet", 10, "guess"), ("ethernet", 10, "guess")),
    "vast": (("ethernet", 10, "guess"), ("ethernet", 10, "guess")),
    "coreweave": (("ethernet", 25, "guess"), ("ethernet", 25, "guess")),
}
#: max instances rentable together; NaN = no limit in the data (quota-bound).
#: GUESS for Vast: each (GPU, count) price repeats over a few hosts in different locations.
MAX_INSTANCES = {"vast": 4}

_INSTANCE_RENAMES = {("coreweave", "L40S (per-GPU rate)"): "l40s-1x-per-gpu"}
_REGION_DEFAULTS = {"coreweave": "unspecified"}


def _source(ref: dict[str, str]) -> str:
    commit = ref["as_of"].split(" ")[1] if ref["as_of"].startswith("commit ") else ""
    return f"{ref['source']}@{commit}" if commit else ref["source"]


def _as_of(ref: dict[str, str]) -> str:
    if ref["as_of"].startswith("blog dated "):
        return ref["as_of"].removeprefix("blog dated ")
    return READ_DATE


def _interconnect(provider: str, instance: str, gpus: int) -> tuple[str, float, bool]:
    if (provider, instance) in INTERCONNECT:
        kind, gbps, how = INTERCONNECT[(provider, instance)]
    else:
        small, eight = PROVIDER_DEFAULT[provider]
        kind, gbps, how = eight if gpus >= 8 else small
    return kind, float(gbps), how != "reference"


def _fmt(value: float) -> str:
    return f"{round(value, 6):.6f}".rstrip("0").rstrip(".")


def build_rows(reference_csv: Path) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Return (offering rows, dropped reference rows) built from the reference table."""
    gpus = load_gpus()
    rows: list[dict[str, str]] = []
    dropped: list[dict[str, str]] = []
    with open(reference_csv, newline="", encoding="utf-8") as handle:
        for ref in csv.DictReader(handle):
            provider = ref["provider"].strip().lower()
            instance = ref["instance_type"].strip()
            try:
                gpu_id = resolve_gpu_id(ref["gpu"])
            except ConfigError:
                dropped.append(ref)
                continue
            if provider == "lambda" and instance in LAMBDA_PCIE_A100:
                gpu_id = "A100-40GB-PCIE"
            spec = gpus[gpu_id]
            count = int(ref["gpus_per_instance"])
            kind, gbps, is_default = _interconnect(provider, instance, count)
            base = {
                "provider": provider,
                "instance_type": _INSTANCE_RENAMES.get((provider, instance), instance),
                "region": ref["region"].strip() or _REGION_DEFAULTS[provider],
                "gpu_id": gpu_id,
                "gpus_per_instance": str(count),
                "vcpus": ref["vcpus"],
                "ram_gib": ref["ram_gb"],
                "intra_node_link": spec.intra_node_link,
                "intra_node_bw_gb_s": _fmt(spec.intra_node_bw_gb_s),
                "inter_node_gbps": _fmt(gbps),
                "inter_node_kind": kind,
                "inter_node_is_default": str(is_default).lower(),
                "max_instances": str(MAX_INSTANCES.get(provider, "")),
                "as_of": _as_of(ref),
                "source": _source(ref),
            }
            on_demand = float(ref["price_on_demand_usd_per_hour"] or "nan")
            spot = float(ref["price_spot_usd_per_hour"] or "nan")
            prices: list[tuple[str, float, bool, str]] = []
            if not math.isnan(on_demand):
                prices.append(("on_demand", on_demand, False, base["source"]))
            # RunPod's catalog repeats the on-demand price as SpotPrice: not a spot offer.
            if not math.isnan(spot) and spot != on_demand:
                prices.append(("spot", spot, False, base["source"]))
            if provider in RESERVED_DISCOUNTS and not math.isnan(on_demand):
                for term, discount in zip(("reserved_1y", "reserved_3y"),
                                          RESERVED_DISCOUNTS[provider], strict=True):
                    prices.append((term, on_demand * (1 - discount), True,
                                   RESERVED_SOURCE[provider]))
            if provider == "coreweave":
                rate = COREWEAVE_L40S_RESERVED_USD_PER_GPU_HOUR * count
                src = "modal.com/blog/nvidia-l40s-price-article ('from $0.90/hr' reservation)"
                prices += [("reserved_1y", rate, False, src), ("reserved_3y", rate, False, src)]
            for model, usd_per_hour, derived, source in prices:
                row = dict(base)
                row.update(
                    pricing_model=model,
                    usd_per_hour=_fmt(usd_per_hour),
                    usd_per_gpu_hour=_fmt(usd_per_hour / count),
                    commitment_hours=str(COMMITMENT_HOURS[model]),
                    derived=str(derived).lower(),
                    source=source,
                )
                rows.append({c: row[c] for c in COLUMNS})
    return rows, dropped


def main(argv: list[str] | None = None) -> int:
    """CLI entry: write the offerings CSV and list dropped rows on stderr."""
    args = sys.argv[1:] if argv is None else argv
    reference = Path(args[0])
    out = Path(args[1]) if len(args) > 1 else data_path("offerings.csv")
    rows, dropped = build_rows(reference / "cloud_prices.csv")
    with open(out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(COLUMNS), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    for ref in dropped:
        print(f"dropped {ref['provider']} {ref['instance_type']} ({ref['gpu']})", file=sys.stderr)
    print(f"wrote {len(rows)} rows to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
