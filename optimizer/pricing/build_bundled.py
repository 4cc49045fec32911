"""Rebuild pricing_data/offerings.csv from the shared reference table (maintainer tool).

Usage: ``python -m optimizer.pricing.build_bundled REFERENCE_DIR [OUT_CSV]`` where REFERENCE_DIR
holds ``cloud_prices.csv`` (one row per provider × instance with on-demand / spot prices).
Every rule applied here is documented in pricing_data/README.md; the tables below are the
single place where reserved discounts are chosen; per-instance network figures and their
sources live in pricing_data/instance_network.csv.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from optimizer.errors import ConfigError
from optimizer.inputs.gpus import data_path, load_gpus, resolve_gpu_id
from optimizer.pricing.catalog import COLUMNS, COMMITMENT_HOURS
from optimizer.pricing.clusters import cluster_offering_rows
from optimizer.pricing.schema import csv_number
from optimizer.pricing.skypilot import CATALOG_VERSIONS, Conversion, catalog_path, convert

__all__ = [
    "RESERVED_DISCOUNTS",
    "INTERCONNECT",
    "PROVIDER_DEFAULT",
    "LAMBDA_PCIE_A100",
    "load_network_table",
    "build_rows",
    "build_from_catalog",
    "known_network_instances",
    "write_csv",
    "main",
]

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

#: The per-instance network source table (pricing_data/instance_network.csv): one row per
#: (provider, instance_type) with inter_node_kind, inter_node_gbps (Gbit/s per instance, the
#: sustained figure available to GPU-to-GPU traffic between instances), inter_node_is_default
#: (true = no published figure was read; the value is a documented guess), source_url,
#: source_version (file @ commit or page date) and notes (what the figure means, or why it is a guess).
NETWORK_CSV = "instance_network.csv"
NETWORK_COLUMNS = (
    "provider",
    "instance_type",
    "inter_node_kind",
    "inter_node_gbps",
    "inter_node_is_default",
    "source_url",
    "source_version",
    "notes",
)

# (kind, Gbit/s per instance, provenance); provenance "published" (read in the source named in
# instance_network.csv; inter_node_is_default=False) or "default" (a documented guess).
_IC = tuple[str, float, str]


def load_network_table(path: Path | None = None) -> dict[tuple[str, str], dict[str, str]]:
    """Rows of pricing_data/instance_network.csv keyed by (provider, instance_type)."""
    path = path or data_path(NETWORK_CSV)
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) != NETWORK_COLUMNS:
            raise ConfigError(f"{path}: columns must be {', '.join(NETWORK_COLUMNS)}")
        table: dict[tuple[str, str], dict[str, str]] = {}
        for line, row in enumerate(reader, start=2):
            key = (row["provider"], row["instance_type"])
            if key in table:
                raise ConfigError(f"{path}: line {line}: duplicate {key}")
            if row["inter_node_is_default"] not in ("true", "false"):
                raise ConfigError(f"{path}: line {line}: inter_node_is_default must be true/false")
            if row["inter_node_is_default"] == "false" and not row["source_url"].startswith("https://"):
                raise ConfigError(f"{path}: line {line}: a published figure needs a source_url")
            table[key] = row
    return table


INTERCONNECT: dict[tuple[str, str], _IC] = {
    key: (
        row["inter_node_kind"],
        float(row["inter_node_gbps"]),
        "default" if row["inter_node_is_default"] == "true" else "published",
    )
    for key, row in load_network_table().items()
}
#: per-provider fallback (kind, Gbit/s, provenance) for instances not listed above.
#: Lambda on-demand instances: plain Ethernet between instances; the 3200 Gbps InfiniBand
#: fabric belongs to Lambda's 1-Click Clusters, which are priced separately (not in the data).
PROVIDER_DEFAULT: dict[str, tuple[_IC, _IC]] = {  # (fewer than 8 GPUs, 8 GPUs)
    "lambda": (("ethernet", 25, "default"), ("ethernet", 100, "default")),
    # marketplace hosts sit in different locations: the path between two is the public internet
    "runpod": (("internet", 10, "default"), ("internet", 10, "default")),
    "vast": (("internet", 10, "default"), ("internet", 10, "default")),
    "coreweave": (("ethernet", 25, "default"), ("ethernet", 25, "default")),
}
#: max instances rentable together; NaN = no limit in the data (quota-bound).
#: GUESS for Vast: each (GPU, count) price repeats over a few hosts in different locations.
MAX_INSTANCES = {"vast": 4}

_INSTANCE_RENAMES = {("coreweave", "L40S (per-GPU rate)"): "l40s-1x-per-gpu"}
_REGION_DEFAULTS = {"coreweave": "unspecified"}


def _source(ref: Mapping[str, str]) -> str:
    commit = ref["as_of"].split(" ")[1] if ref["as_of"].startswith("commit ") else ""
    return f"{ref['source']}@{commit}" if commit else ref["source"]


def _as_of(ref: Mapping[str, str]) -> str:
    for prefix in ("blog dated ", "fetched "):  # a blog's date; the day a refresh read the catalog
        if ref["as_of"].startswith(prefix):
            return ref["as_of"].removeprefix(prefix)
    return READ_DATE


def _interconnect(provider: str, instance: str, gpus: int) -> tuple[str, float, bool] | None:
    """(fabric kind, Gbit/s, is a default) of an instance; None when neither instance_network.csv
    nor a provider default gives one (the row is dropped, as `ccopt prices refresh` drops it)."""
    if (provider, instance) in INTERCONNECT:
        kind, gbps, how = INTERCONNECT[(provider, instance)]
    elif provider in PROVIDER_DEFAULT:
        small, eight = PROVIDER_DEFAULT[provider]
        kind, gbps, how = eight if gpus >= 8 else small
    else:
        return None
    return kind, float(gbps), how != "published"


def _reference(source: Path | Iterable[Mapping[str, str]]) -> list[Mapping[str, str]]:
    if isinstance(source, Path):
        with open(source, newline="", encoding="utf-8") as handle:
            return list(csv.DictReader(handle))
    return list(source)


def build_rows(
    reference: Path | Iterable[Mapping[str, str]],
) -> tuple[list[dict[str, str]], list[Mapping[str, str]]]:
    """Return (offering rows, dropped reference rows) built from the reference table: a
    cloud_prices.csv path, or its rows (what `skypilot.convert` makes of the catalog files)."""
    gpus = load_gpus()
    rows: list[dict[str, str]] = []
    dropped: list[Mapping[str, str]] = []
    for ref in _reference(reference):
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
        network = _interconnect(provider, instance, count)
        if network is None:  # e.g. OCI BM.GPU.GB200.4: no published network figure to cite
            dropped.append(ref)
            continue
        kind, gbps, is_default = network
        base = {
            "provider": provider,
            "instance_type": _INSTANCE_RENAMES.get((provider, instance), instance),
            "region": ref["region"].strip() or _REGION_DEFAULTS[provider],
            "gpu_id": gpu_id,
            "gpus_per_instance": str(count),
            "vcpus": ref["vcpus"],
            "ram_gib": ref["ram_gb"],
            "intra_node_link": spec.intra_node_link,
            "intra_node_bw_gb_s": csv_number(spec.intra_node_bw_gb_s),
            "inter_node_gbps": csv_number(gbps),
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
            for term, discount in zip(
                ("reserved_1y", "reserved_3y"), RESERVED_DISCOUNTS[provider], strict=True
            ):
                prices.append((term, on_demand * (1 - discount), True, RESERVED_SOURCE[provider]))
        if provider == "coreweave":
            rate = COREWEAVE_L40S_RESERVED_USD_PER_GPU_HOUR * count
            src = "modal.com/blog/nvidia-l40s-price-article ('from $0.90/hr' reservation)"
            prices += [("reserved_1y", rate, False, src), ("reserved_3y", rate, False, src)]
        for model, usd_per_hour, derived, source in prices:
            row = dict(base)
            row.update(
                pricing_model=model,
                usd_per_hour=csv_number(usd_per_hour),
                usd_per_gpu_hour=csv_number(usd_per_hour / count),
                commitment_hours=str(COMMITMENT_HOURS[model]),
                derived=str(derived).lower(),
                source=source,
            )
            rows.append({c: row[c] for c in COLUMNS})
    return rows, dropped


def known_network_instances() -> dict[str, set[str]]:
    """Provider -> the instances with a row in instance_network.csv, for the providers that
    have no PROVIDER_DEFAULT (their instances need a per-instance network figure)."""
    known: dict[str, set[str]] = {}
    for provider, instance in INTERCONNECT:
        if provider not in PROVIDER_DEFAULT:
            known.setdefault(provider, set()).add(instance)
    return known


def build_from_catalog(
    texts: Mapping[str, str], read_date: str, labels: Mapping[str, str] | None = None
) -> tuple[list[dict[str, str]], list[Mapping[str, str]], Conversion]:
    """Offering rows from SkyPilot catalog files (cloud -> vms.csv text): the conversion of
    `skypilot.convert`, then the same rules as the bundled table (`build_rows`). This is what
    `ccopt prices refresh` runs on the downloaded files and `main --skypilot DIR` on local ones.

    The priced rows of our own cluster table (pricing_data/clusters.csv) are appended.

    Returns:
        (offering rows, dropped reference rows (GPU not in the catalog), the conversion).

    Raises:
        RefreshError: a file lacks a required column (schema drift).
    """
    conversion = convert(texts, read_date, labels, known_network_instances())
    rows, dropped = build_rows(conversion.rows)
    return rows + cluster_offering_rows(), dropped, conversion


def write_csv(rows: Iterable[Mapping[str, str]], handle: object) -> None:
    """Offering rows as CSV text (the exact COLUMNS, \\n line ends) on a text handle."""
    writer = csv.DictWriter(handle, fieldnames=list(COLUMNS), lineterminator="\n")  # type: ignore[arg-type]
    writer.writeheader()
    writer.writerows(rows)


def _catalog_texts(directory: Path) -> dict[str, str]:
    """cloud -> vms.csv text for the clouds present under `directory` (laid out as upstream's
    catalogs/ folder: v8/aws/vms.csv, ...)."""
    texts: dict[str, str] = {}
    for cloud in CATALOG_VERSIONS:
        path = directory / catalog_path(cloud)
        if path.is_file():
            texts[cloud] = path.read_text(encoding="utf-8")
    return texts


def main(argv: list[str] | None = None) -> int:
    """CLI entry: write the offerings CSV and list dropped rows on stderr.

    `--skypilot DIR [DATE]` builds from SkyPilot catalog files under DIR (v8/aws/vms.csv, ...)
    read on DATE (default today, UTC) instead of the reference table.
    """
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "--skypilot":
        date = args[2] if len(args) > 2 else dt.datetime.now(dt.timezone.utc).date().isoformat()  # noqa: UP017
        rows, dropped, _ = build_from_catalog(_catalog_texts(Path(args[1])), date)
        out = data_path("offerings.csv") if len(args) < 4 else Path(args[3])
    else:
        rows, dropped = build_rows(Path(args[0]) / "cloud_prices.csv")
        rows += cluster_offering_rows()  # our own table: clusters, capacity blocks (clusters.csv)
        out = Path(args[1]) if len(args) > 1 else data_path("offerings.csv")
    with open(out, "w", newline="", encoding="utf-8") as handle:
        write_csv(rows, handle)
    for ref in dropped:
        print(f"dropped {ref['provider']} {ref['instance_type']} ({ref['gpu']})", file=sys.stderr)
    print(f"wrote {len(rows)} rows to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
