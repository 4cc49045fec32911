"""The public SkyPilot catalog as the price source: where its per-cloud `vms.csv` files live,
the columns read from them, and their conversion to reference rows (the shape of the shared
reference `cloud_prices.csv` that `build_bundled.build_rows` turns into offerings).

The one place the published location and schema version are pinned: SkyPilot reads
`{HOSTED_CATALOG_DIR_URL}/{CATALOG_SCHEMA_VERSION}/{cloud}/vms.csv` with
HOSTED_CATALOG_DIR_URL = https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs
and CATALOG_SCHEMA_VERSION = 'v8' (skypilot-org/skypilot `sky/skylet/constants.py`).
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from optimizer.errors import RefreshError
from optimizer.pricing.schema import csv_number

__all__ = [
    "DEFAULT_BASE_URL",
    "BASE_URL_ENV",
    "CATALOG_VERSIONS",
    "REQUIRED_COLUMNS",
    "SOURCE_REPO",
    "Conversion",
    "base_url",
    "catalog_path",
    "file_url",
    "convert",
]

SOURCE_REPO = "skypilot-org/skypilot-catalog"
DEFAULT_BASE_URL = "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs"
#: overrides DEFAULT_BASE_URL (a mirror, or a local server in tests); `prices refresh --catalog-url`
BASE_URL_ENV = "CCOPT_SKYPILOT_URL"
#: cloud -> schema version read. v8 is SkyPilot's current one; Azure is absent from v7/v8, so
#: its newest published file is v6 (pricing_data/README.md, "Sources and dates").
CATALOG_VERSIONS: dict[str, str] = {
    "aws": "v8",
    "azure": "v6",
    "gcp": "v8",
    "lambda": "v8",
    "oci": "v8",
    "runpod": "v8",
    "vast": "v8",
}
#: the columns read (SkyPilot `sky/catalog/common.py` reads these names in every cloud's file;
#: their order differs from cloud to cloud, so they are read by name). A file without one of
#: them is refused: a renamed column is schema drift, never guessed around.
REQUIRED_COLUMNS = (
    "InstanceType",
    "AcceleratorName",
    "AcceleratorCount",
    "vCPUs",
    "MemoryGiB",
    "Price",
    "SpotPrice",
    "Region",
)
#: RunPod's `Region` is a country code; its data-centre id (US-CA-1) is `AvailabilityZone`
_REGION_COLUMN = {"runpod": "AvailabilityZone"}

#: SkyPilot accelerator name -> ccopt GPU id where the two differ or an alias would mislead
#: (SkyPilot's "A100" is the 40 GB part; ccopt's alias "a100" names the 80 GB one). Names not
#: listed go through the GPU catalog's aliases; unknown GPUs are dropped by build_rows.
GPU_NAMES = {
    "A100": "A100-40GB",
    "A100-80GB": "A100-80GB",
    "H100": "H100-80GB",
    "H100-MEGA": "H100-80GB",
    "H200": "H200-141GB",
    "V100": "V100-16GB",
    "V100-32GB": "V100-32GB",
    "RTXA6000": "A6000",
    "RTX6000-Ada": "RTX6000-Ada",
}
#: the PCIe card when the instance name or GpuInfo says "pcie" (RunPod 'A100 PCIe', Lambda
#: gpu_1x_h100_pcie); "nvl" (Vast H100_NVL) is the 94 GB H100 NVL
_PCIE = {"A100-40GB": "A100-40GB-PCIE", "A100-80GB": "A100-80GB-PCIE", "H100-80GB": "H100-80GB-PCIE"}
#: per-instance readings the catalog gets wrong (pricing_data/README.md, reference Caveats)
INSTANCE_FIXES: dict[tuple[str, str], dict[str, str]] = {
    # catalog AcceleratorCount 12; the size has 8 H100 (Azure ND H100 v5 page)
    ("azure", "Standard_ND96isr_H100_v5"): {"gpus_per_instance": "8"},
    # NC H100 v5 carries the 94 GB H100 NVL; the catalog says only "H100"
    ("azure", "Standard_NC40ads_H100_v5"): {"gpu": "H100-NVL-94GB"},
    # NC A100 v4 sizes carry the PCIe card; the catalog says only "A100-80GB"
    ("azure", "Standard_NC24ads_A100_v4"): {"gpu": "A100-80GB-PCIE"},
    ("azure", "Standard_NC96ads_A100_v4"): {"gpu": "A100-80GB-PCIE"},
}
#: an "A100" with at least this much memory per GPU (GpuInfo TotalGpuMemoryInMiB / count) is
#: the 80 GB part (Vast lists both under one name); the 40 GB part has 40960 MiB
_A100_80GB_MIN_MIB = 70_000
#: GCP lists the host VM and the attached GPUs on separate rows; an offering is their sum.
#: machine type -> (host row, accelerator, count). N1 hosts take any size: the ones here are
#: this table's choice (pricing_data/README.md).
GCP_MACHINES: dict[str, tuple[str, str, int]] = {
    **{f"a2-highgpu-{n}g": (f"a2-highgpu-{n}g", "A100", n) for n in (1, 2, 4, 8)},
    "a2-megagpu-16g": ("a2-megagpu-16g", "A100", 16),
    **{f"a2-ultragpu-{n}g": (f"a2-ultragpu-{n}g", "A100-80GB", n) for n in (1, 2, 4, 8)},
    **{f"a3-highgpu-{n}g": (f"a3-highgpu-{n}g", "H100", n) for n in (1, 2, 4, 8)},
    "a3-megagpu-8g": ("a3-megagpu-8g", "H100-MEGA", 8),
    "a3-ultragpu-8g": ("a3-ultragpu-8g", "H200", 8),
    "g2-standard-4": ("g2-standard-4", "L4", 1),
    "g2-standard-8": ("g2-standard-8", "L4", 1),
    "g2-standard-24": ("g2-standard-24", "L4", 2),
    "g2-standard-48": ("g2-standard-48", "L4", 4),
    "g2-standard-96": ("g2-standard-96", "L4", 8),
    "n1-standard-8+1xT4": ("n1-standard-8", "T4", 1),
    "n1-standard-8+1xV100": ("n1-standard-8", "V100", 1),
    "n1-standard-64+8xV100": ("n1-standard-64", "V100", 8),
}
#: one representative region per instance: the first of these that offers it, else (Vast) the
#: first listed on its continent, else the cheapest region (ties: the first listed). Same
#: choices as the bundled table.
PREFERRED_REGIONS: dict[str, tuple[str, ...]] = {
    "aws": ("us-east-1", "us-east-2", "us-west-2"),
    "azure": ("eastus",),
    "gcp": ("us-central1", "us-east4", "us-east5"),
    "lambda": ("us-east-1",),
    "oci": ("af-casablanca-1",),
    "runpod": ("US-CA-1", "US-KS-2"),
    "vast": (),
}
#: Vast regions are host locations ("Oregon, US, NA"): the first North American one listed
_REGION_SUFFIX = {"vast": ", NA"}
#: GCP's us-central1 GPU rows for H100/H200 and A100 80GB are far below every other US region
#: (8xH100 33.61 vs 78.37 $/h; reference Caveats): those machine types are read elsewhere
REGION_OVERRIDES: dict[tuple[str, str], str] = {
    **{("gcp", m): "us-east4" for m in ("a3-highgpu-4g", "a3-highgpu-8g", "a3-megagpu-8g", "a3-ultragpu-8g")},
    **{("gcp", f"a2-ultragpu-{n}g"): "us-east5" for n in (1, 2, 4, 8)},
}


@dataclass
class Conversion:
    """Reference rows converted from the catalog files, and what was left out (and why)."""

    rows: list[dict[str, str]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def base_url(override: str | None = None) -> str:
    """The catalog directory URL: `override`, else $CCOPT_SKYPILOT_URL, else DEFAULT_BASE_URL."""
    return (override or os.environ.get(BASE_URL_ENV, "").strip() or DEFAULT_BASE_URL).rstrip("/")


def catalog_path(cloud: str) -> str:
    """The file's path under the catalog directory, e.g. 'v8/aws/vms.csv'."""
    return f"{CATALOG_VERSIONS[cloud]}/{cloud}/vms.csv"


def file_url(base: str, cloud: str) -> str:
    """Where one cloud's vms.csv is published under `base`."""
    return f"{base.rstrip('/')}/{catalog_path(cloud)}"


def _number(text: str | None) -> float:
    try:
        value = float(text or "nan")
    except ValueError:
        return math.nan
    return value if math.isfinite(value) and value > 0 else math.nan


def _records(cloud: str, text: str, label: str) -> list[dict[str, str]]:
    reader = csv.DictReader(io.StringIO(text))
    try:
        header = [h.strip() for h in (reader.fieldnames or [])]
    except csv.Error as exc:
        raise RefreshError(f"{label}: row 1: not readable as CSV ({exc})") from None
    required = REQUIRED_COLUMNS + ((_REGION_COLUMN[cloud],) if cloud in _REGION_COLUMN else ())
    missing = [c for c in required if c not in header]
    if missing:
        shown = ", ".join(header[:12]) or "(empty file)"
        raise RefreshError(
            f"{label}: schema drift: column {missing[0]!r} is missing (renamed or dropped upstream); "
            f"expected SkyPilot catalog {CATALOG_VERSIONS[cloud]} columns {', '.join(required)}; "
            f"got {shown}"
        )
    try:
        return [{k.strip(): (v or "").strip() for k, v in rec.items() if k} for rec in reader]
    except csv.Error as exc:  # a stray carriage return, a field past the parser's limit
        raise RefreshError(f"{label}: row {reader.line_num}: not readable as CSV ({exc})") from None


def _gpu_id(cloud: str, instance: str, name: str, gpu_info: str, count: int = 1) -> str:
    gpu = GPU_NAMES.get(name, name)
    total = re.search(r"'TotalGpuMemoryInMiB': (\d+)", gpu_info)
    if gpu == "A100-40GB" and total and int(total.group(1)) / max(count, 1) >= _A100_80GB_MIN_MIB:
        gpu = "A100-80GB"
    text = f"{instance} {gpu_info}".lower()
    if "nvl" in text and gpu == "H100-80GB":
        return "H100-NVL-94GB"
    if "pcie" in text:
        gpu = _PCIE.get(gpu, gpu)
    return gpu


def _pick_region(cloud: str, instance: str, by_region: Mapping[str, list[dict[str, str]]]) -> str:
    override = REGION_OVERRIDES.get((cloud, instance))
    if override in by_region:
        return str(override)
    for region in PREFERRED_REGIONS[cloud]:
        if region in by_region and any(not math.isnan(_number(r["Price"])) for r in by_region[region]):
            return region
    suffix = _REGION_SUFFIX.get(cloud)
    for region in by_region if suffix else ():
        if region.endswith(str(suffix)):
            return region
    priced = [
        (min(_number(r["Price"]) for r in rows), i, region)
        for i, (region, rows) in enumerate(by_region.items())
        if any(not math.isnan(_number(r["Price"])) for r in rows)
    ]
    if priced:
        return min(priced)[2]
    return next(iter(by_region))  # no on-demand price anywhere (e.g. AWS p5e): spot only


def _min(values: Iterable[float]) -> float:
    present = [v for v in values if not math.isnan(v)]
    return min(present) if present else math.nan


def _fmt(value: float) -> str:
    return "" if math.isnan(value) else csv_number(value)


def _reference_row(
    cloud: str,
    instance: str,
    region: str,
    rows: list[dict[str, str]],
    gpu_rows: list[dict[str, str]],
    meta: dict[str, str],
) -> dict[str, str]:
    """One reference row: on-demand = lowest Price, spot = lowest SpotPrice over the region's
    zones (AWS spot differs by zone; the bundled table used the minimum), plus the GPUs'
    rows where the catalog prices them apart (GCP)."""
    on_demand = _min(_number(r["Price"]) for r in rows)
    spot = _min(_number(r["SpotPrice"]) for r in rows)
    if gpu_rows:
        on_demand += _min(_number(r["Price"]) for r in gpu_rows)
        spot += _min(_number(r["SpotPrice"]) for r in gpu_rows)
    first = rows[0]
    out = {
        "provider": cloud,
        "instance_type": instance,
        "gpu": meta["gpu"],
        "gpus_per_instance": meta["gpus_per_instance"],
        "vcpus": _fmt(_number(first["vCPUs"])),
        "ram_gb": _fmt(_number(first["MemoryGiB"])),
        "region": region,
        "price_on_demand_usd_per_hour": _fmt(on_demand),
        "price_spot_usd_per_hour": _fmt(spot),
        "source": meta["source"],
        "as_of": meta["as_of"],
    }
    out.update(INSTANCE_FIXES.get((cloud, instance), {}))
    return out


#: AWS Local Zones (use1-atl2-az1) sit in a metro away from the region, with their own (often
#: lower) spot prices: the bundled table read only the region's regular zones (use1-az1)
_AWS_LOCAL_ZONE = re.compile(r"^[a-z]+\d+-[a-z]+\d+-az\d+$")


def _group(
    records: Iterable[dict[str, str]], region_column: str
) -> dict[str, dict[str, list[dict[str, str]]]]:
    grouped: dict[str, dict[str, list[dict[str, str]]]] = {}
    for rec in records:
        if _AWS_LOCAL_ZONE.match(rec.get("AvailabilityZone", "")):
            continue
        grouped.setdefault(rec["InstanceType"], {}).setdefault(rec[region_column], []).append(rec)
    return grouped


def _convert_one(cloud: str, text: str, label: str, read_date: str, wanted: set[str] | None) -> Conversion:
    records = _records(cloud, text, label)
    region_column = _REGION_COLUMN.get(cloud, "Region")
    out = Conversion()
    meta = {"source": f"{SOURCE_REPO} catalogs/{catalog_path(cloud)}", "as_of": f"fetched {read_date}"}
    if cloud == "gcp":
        hosts = _group((r for r in records if r["InstanceType"]), region_column)
        gpus: dict[tuple[str, int, str], list[dict[str, str]]] = {}
        for rec in records:
            if not rec["InstanceType"] and rec["AcceleratorName"]:
                count = _number(rec["AcceleratorCount"])  # nan: not a count (skipped below)
                key = (rec["AcceleratorName"], int(count) if math.isfinite(count) else 0, rec[region_column])
                gpus.setdefault(key, []).append(rec)
        for machine, (host, accel, count) in GCP_MACHINES.items():
            if wanted is not None and machine not in wanted:
                continue
            by_region = {
                region: rows for region, rows in hosts.get(host, {}).items() if (accel, count, region) in gpus
            }
            if not by_region:
                continue
            region = _pick_region(cloud, machine, by_region)
            gpu = _gpu_id(cloud, machine, accel, "")
            info = {**meta, "gpu": gpu, "gpus_per_instance": str(count)}
            out.rows.append(
                _reference_row(cloud, machine, region, by_region[region], gpus[(accel, count, region)], info)
            )
        return out
    grouped = _group(
        (
            r
            for r in records
            if r["InstanceType"] and r["AcceleratorName"] and _number(r["AcceleratorCount"]) > 0
        ),
        region_column,
    )
    for instance, by_region in grouped.items():
        if wanted is not None and instance not in wanted:
            out.skipped.append(f"{cloud} {instance}: no inter-node network figure in instance_network.csv")
            continue
        region = _pick_region(cloud, instance, by_region)
        first = by_region[region][0]
        n_gpus = int(_number(first["AcceleratorCount"]))
        gpu = _gpu_id(cloud, instance, first["AcceleratorName"], first.get("GpuInfo", ""), n_gpus)
        info = {**meta, "gpu": gpu, "gpus_per_instance": str(n_gpus)}
        out.rows.append(_reference_row(cloud, instance, region, by_region[region], [], info))
    return out


def convert(
    texts: Mapping[str, str],
    read_date: str,
    labels: Mapping[str, str] | None = None,
    known_instances: Mapping[str, set[str]] | None = None,
) -> Conversion:
    """Reference rows (cloud_prices.csv columns) from the catalog files' text, per cloud.

    Args:
        texts: cloud -> the text of its vms.csv.
        read_date: ISO date the files were read (becomes as_of via build_rows).
        labels: cloud -> the file's name in messages (URL or path); default the catalog path.
        known_instances: cloud -> the instances whose network figure is known; a cloud listed
            here keeps only those (the others are reported in Conversion.skipped).

    Raises:
        RefreshError: a file lacks a required column (schema drift), one line naming the file.
    """
    out = Conversion()
    for cloud in CATALOG_VERSIONS:
        if cloud not in texts:
            continue
        label = (labels or {}).get(cloud, f"catalogs/{catalog_path(cloud)}")
        wanted = (known_instances or {}).get(cloud)
        part = _convert_one(cloud, texts[cloud], label, read_date, wanted)
        out.rows += part.rows
        out.skipped += part.skipped
    return out
