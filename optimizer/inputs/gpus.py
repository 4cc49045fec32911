"""GPU catalog: loads pricing_data/gpus.csv into GpuSpec objects; lookup by id or alias."""

from __future__ import annotations

import csv
import functools
from functools import cache
from importlib import resources
from pathlib import Path

from optimizer.errors import CatalogError, ConfigError, did_you_mean
from optimizer.model.hardware import GpuSpec

__all__ = [
    "BUNDLED_GPU_FILES",
    "load_gpus",
    "get_gpu",
    "resolve_gpu_id",
    "gpu_ids",
    "data_path",
    "unknown_gpu",
    "check_gpu_name",
]

_FLOAT_COLUMNS = (
    "memory_gib",
    "mem_bandwidth_gb_s",
    "fp32_tflops",
    "tf32_tflops",
    "bf16_tflops",
    "fp16_tflops",
    "fp8_tflops",
    "int8_tops",
    "intra_node_bw_gb_s",
    "tdp_w",
    "street_price_usd",
    "default_efficiency",
    "default_inter_node_gbps",
)
#: per-GPU facts every row must state (a missing one is an error, never a silent default)
_REQUIRED = (
    "gpu_id",
    "vendor",
    "memory_gib",
    "mem_bandwidth_gb_s",
    "intra_node_link",
    "intra_node_bw_gb_s",
    "generation",
    "default_efficiency",
    "efficiency_source",
    "default_inter_node_gbps",
    "fabric",
    "fabric_source",
)


@cache
def data_path(name: str) -> Path:
    """Path of a bundled data file in pricing_data/ (installed as optimizer.pricing_data);
    cached: asked once per offering when a catalog is turned into offerings."""
    try:
        return Path(str(resources.files("optimizer.pricing_data").joinpath(name)))
    except ModuleNotFoundError:  # running from a source tree without install
        return Path(__file__).resolve().parents[2] / "pricing_data" / name


def _parse_row(row: dict[str, str], path: Path, line: int) -> GpuSpec:
    values: dict[str, float | None] = {}
    for column in _REQUIRED:
        if not (row.get(column) or "").strip():
            raise CatalogError(f"{path}: row {line}, column '{column}': value is missing")
    for column in _FLOAT_COLUMNS:
        raw = (row.get(column) or "").strip()
        if not raw:
            values[column] = None
            continue
        try:
            number = float(raw)
        except ValueError:
            raise CatalogError(f"{path}: row {line}, column '{column}': {raw!r} is not a number") from None
        if number <= 0:
            raise CatalogError(f"{path}: row {line}, column '{column}': must be > 0, got {raw}")
        values[column] = number
    aliases = tuple(a.strip().lower() for a in (row.get("aliases") or "").split(";") if a.strip())
    return GpuSpec(
        gpu_id=row["gpu_id"].strip(),
        vendor=row["vendor"].strip(),
        memory_gib=values["memory_gib"] or 0.0,
        mem_bandwidth_gb_s=values["mem_bandwidth_gb_s"] or 0.0,
        fp32_tflops=values["fp32_tflops"],
        tf32_tflops=values["tf32_tflops"],
        bf16_tflops=values["bf16_tflops"],
        fp16_tflops=values["fp16_tflops"],
        fp8_tflops=values["fp8_tflops"],
        int8_tops=values["int8_tops"],
        intra_node_link=row["intra_node_link"].strip(),
        intra_node_bw_gb_s=values["intra_node_bw_gb_s"] or 0.0,
        generation=row["generation"].strip(),
        default_efficiency=_fraction(values["default_efficiency"], path, line),
        default_inter_node_gbps=values["default_inter_node_gbps"] or 0.0,
        fabric=row["fabric"].strip(),
        tdp_w=values["tdp_w"],
        street_price_usd=values["street_price_usd"],
        spec_confidence=(row.get("spec_confidence") or "published").strip(),
        aliases=aliases,
        pcie_gen=_int_or_none(row, "pcie_gen", path, line),
        pcie_lanes=_int_or_none(row, "pcie_lanes", path, line),
        peer_to_peer=_yes_no(row, "peer_to_peer", path, line),
    )


def _fraction(value: float | None, path: Path, line: int) -> float:
    """An efficiency: a share of the peak in (0, 1]."""
    if value is None or value > 1:
        raise CatalogError(f"{path}: row {line}, column 'default_efficiency': {value} is not in (0, 1]")
    return value


def _int_or_none(row: dict[str, str], column: str, path: Path, line: int) -> int | None:
    raw = (row.get(column) or "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) <= 0:
        raise CatalogError(f"{path}: row {line}, column '{column}': {raw!r} is not a positive whole number")
    return int(raw)


def _yes_no(row: dict[str, str], column: str, path: Path, line: int) -> bool | None:
    raw = (row.get(column) or "").strip().lower()
    if raw in ("", "unknown"):
        return None
    if raw not in ("yes", "no"):
        raise CatalogError(
            f"{path}: row {line}, column '{column}': {raw!r}; allowed: yes, no, unknown or empty"
        )
    return raw == "yes"


#: the bundled GPU tables: data-centre and workstation cards, then consumer (GeForce) cards
BUNDLED_GPU_FILES = ("gpus.csv", "gpus_consumer.csv")


def _read_table(file: Path, gpus: dict[str, GpuSpec]) -> None:
    with open(file, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in _REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise CatalogError(f"{file}: missing column(s) {', '.join(missing)}")
        for line, row in enumerate(reader, start=2):
            spec = _parse_row(row, file, line)
            if spec.gpu_id in gpus:
                raise CatalogError(f"{file}: row {line}, column 'gpu_id': duplicate {spec.gpu_id!r}")
            gpus[spec.gpu_id] = spec


@functools.lru_cache(maxsize=4)
def load_gpus(path: str | None = None) -> dict[str, GpuSpec]:
    """Load the GPU catalog (`path`, else every bundled table); keys are canonical ids.
    Raises CatalogError naming row and column."""
    files = [Path(path)] if path else [data_path(name) for name in BUNDLED_GPU_FILES]
    gpus: dict[str, GpuSpec] = {}
    for file in files:
        _read_table(file, gpus)
    return gpus


@functools.lru_cache(maxsize=4)
def _alias_index(path: str | None = None) -> dict[str, str]:
    index: dict[str, str] = {}
    for gpu_id, spec in load_gpus(path).items():
        for key in (gpu_id.lower(), *spec.aliases):
            index[key.replace("_", "-")] = gpu_id
    return index


def gpu_ids() -> list[str]:
    """Canonical GPU ids in catalog order."""
    return list(load_gpus())


def resolve_gpu_id(name: str, field: str = "gpu") -> str:
    """Canonical id for an id or alias (case-insensitive). Raises ConfigError with close matches."""
    key = name.strip().lower().replace("_", "-")
    index = _alias_index()
    if key in index:
        return index[key]
    if key.startswith("nvidia-") and key[7:] in index:
        return index[key[7:]]
    raise ConfigError(f"{field}: {unknown_gpu(name)}")


def unknown_gpu(name: str) -> str:
    """Why `name` is no GPU of the catalog: the close matches and the allowed ids."""
    return (
        f"unknown GPU {name!r}{did_you_mean(name, list(_alias_index()))}; allowed: "
        f"{', '.join(gpu_ids())} (ids or aliases; matching is case-insensitive)"
    )


def check_gpu_name(name: str) -> str:
    """`name` unchanged if it names a GPU of the catalog; ValueError (the job-file validators'
    error, reported with the file and field) otherwise."""
    try:
        resolve_gpu_id(name)
    except ConfigError:
        raise ValueError(unknown_gpu(name)) from None
    return name


def get_gpu(name: str, field: str = "gpu") -> GpuSpec:
    """GpuSpec for an id or alias."""
    return load_gpus()[resolve_gpu_id(name, field)]
