"""Validation of an offerings CSV: exact columns, units, prices, GPU ids, duplicates (pydantic)."""

from __future__ import annotations

import bisect
import csv
import datetime as dt
import hashlib
import io
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from optimizer.errors import CatalogError, did_you_mean
from optimizer.files import open_input
from optimizer.inputs.gpus import load_gpus
from optimizer.inputs.jobs.limits import MAX_GPUS_PER_INSTANCE, MAX_INSTANCES, MAX_USD_PER_GPU_HOUR
from optimizer.vocabulary import COMMITMENT_HOURS, InterNodeKind, IntraNodeLink, PricingModel

if TYPE_CHECKING:
    import pandas as pd

#: the catalog columns, in file order (pricing_data/README.md documents each one)
COLUMNS = (
    "provider",
    "instance_type",
    "region",
    "gpu_id",
    "gpus_per_instance",
    "vcpus",
    "ram_gib",
    "intra_node_link",
    "intra_node_bw_gb_s",
    "inter_node_gbps",
    "inter_node_kind",
    "inter_node_is_default",
    "max_instances",
    "pricing_model",
    "usd_per_hour",
    "usd_per_gpu_hour",
    "commitment_hours",
    "derived",
    "as_of",
    "source",
)

__all__ = [
    "read_csv_number",
    "COLUMNS",
    "csv_number",
    "OfferingRow",
    "validate_csv",
    "stream_rows",
    "StreamedTable",
    "LARGE_TABLE_ROWS",
    "KEEP_REGIONS",
    "row_error",
    "check_header",
    "check_row",
    "csv_records",
    "read_offerings",
    "rows_to_frame",
    "MAX_USD_PER_GPU_HOUR",
    "PRICE_ORIGINS",
    "PriceOrigin",
]


def csv_number(value: float) -> str:
    """A number as the offerings CSVs write it: rounded to 6 decimals, no trailing zeros."""
    return f"{round(value, 6):.6f}".rstrip("0").rstrip(".")


def read_csv_number(text: str, where: str, column: str) -> float | None:
    """An optional number cell of a data CSV (clusters, host and storage tables): None when
    empty, else a finite number ≥ 0.

    Raises:
        CatalogError: `WHERE, column 'C': not a number ('x')` or `must be ≥ 0 and finite`.
    """
    text = text.strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise CatalogError(f"{where}, column '{column}': not a number ({text!r})") from None
    if not math.isfinite(value) or value < 0:
        raise CatalogError(f"{where}, column '{column}': must be ≥ 0 and finite (got {text!r})")
    return value


PriceOrigin = Literal["bundled", "refreshed", "file", "overlay"]
#: where a row's price comes from (OfferingRow.origin), as plans and `ccopt prices` print it
PRICE_ORIGINS: tuple[str, ...] = get_args(PriceOrigin)

#: relative tolerance of usd_per_gpu_hour against usd_per_hour / gpus_per_instance (rounding)
_REL_TOL = 1e-4
_REQUIRED = tuple(c for c in COLUMNS if c not in ("vcpus", "ram_gib", "max_instances"))


class OfferingRow(BaseModel):
    """One offering in one pricing model; units in field names (USD, GiB, GB/s, Gbit/s)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    provider: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    instance_type: str = Field(min_length=1)
    region: str = Field(min_length=1)
    gpu_id: str
    gpus_per_instance: int = Field(gt=0, le=MAX_GPUS_PER_INSTANCE)
    vcpus: float | None = Field(default=None, gt=0)
    ram_gib: float | None = Field(default=None, gt=0)
    intra_node_link: IntraNodeLink
    intra_node_bw_gb_s: float = Field(gt=0)  # per GPU, one direction, GB/s
    inter_node_gbps: float = Field(ge=0, le=100_000)  # per instance, Gbit/s
    inter_node_kind: InterNodeKind
    inter_node_is_default: bool
    max_instances: int | None = Field(default=None, ge=1, le=MAX_INSTANCES)
    pricing_model: PricingModel
    usd_per_hour: float = Field(gt=0, le=MAX_USD_PER_GPU_HOUR * MAX_GPUS_PER_INSTANCE)  # whole instance
    usd_per_gpu_hour: float = Field(gt=0, le=MAX_USD_PER_GPU_HOUR)
    commitment_hours: int = Field(ge=0)
    derived: bool
    as_of: dt.date
    source: str = Field(min_length=1)
    # not CSV columns (the header check keeps them out of files): set when the table is loaded
    #: where the price comes from: bundled, refreshed (the cache), file (--prices) or overlay
    origin: PriceOrigin = "file"
    #: what the user's prices changed, e.g. "aws on_demand 30% off (prices.toml)"; "" if nothing
    overlay_note: str = ""
    #: the catalog's price before the overlay changed it (None: unchanged, or an extra row)
    catalog_usd_per_hour: float | None = None

    @field_validator("gpu_id")
    @classmethod
    def _known_gpu(cls, value: str) -> str:
        known = load_gpus()
        if value not in known:
            raise ValueError(
                f"unknown GPU id {value!r}{did_you_mean(value, known)}; known: {', '.join(known)}"
            )
        return value


def row_error(path: object, line: int, column: str, message: str) -> CatalogError:
    """CatalogError naming the file, the row (CSV line) and the column."""
    return CatalogError(f"{path}: row {line}, column '{column}': {message}")


def check_header(path: object, header: list[str] | None) -> None:
    if not header:
        expected = ", ".join(COLUMNS)
        raise CatalogError(f"{path}: row 1: empty file, expected a header with {expected}")
    missing = [c for c in COLUMNS if c not in header]
    extra = [c for c in header if c not in COLUMNS]
    if missing or extra or len(header) != len(set(header)):
        column = (missing or extra or [header[0]])[0]
        what = "missing column" if missing else "unexpected column" if extra else "repeated column"
        raise row_error(path, 1, column, f"{what}; expected exactly: {', '.join(COLUMNS)}")


def check_row(path: object, line: int, raw: dict[str, Any]) -> OfferingRow:
    for column in _REQUIRED:
        if not (raw.get(column) or "").strip():
            raise row_error(path, line, column, "value is missing")
    data = {k: (v.strip() or None) for k, v in raw.items()}
    try:
        row = OfferingRow.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        column = str(err["loc"][0]) if err["loc"] else "?"
        got = data.get(column)
        raise row_error(path, line, column, f"{err['msg']} (got {got!r})") from None
    expected = row.usd_per_hour / row.gpus_per_instance
    if not math.isclose(row.usd_per_gpu_hour, expected, rel_tol=_REL_TOL, abs_tol=1e-6):
        raise row_error(
            path,
            line,
            "usd_per_gpu_hour",
            f"{row.usd_per_gpu_hour} != usd_per_hour / gpus_per_instance = {expected:.6g}",
        )
    if row.commitment_hours != COMMITMENT_HOURS[row.pricing_model]:
        raise row_error(
            path,
            line,
            "commitment_hours",
            f"{row.commitment_hours} does not match pricing_model {row.pricing_model!r} "
            f"(expected {COMMITMENT_HOURS[row.pricing_model]})",
        )
    if row.inter_node_kind != "none" and row.inter_node_gbps <= 0:
        raise row_error(path, line, "inter_node_gbps", "must be > 0 unless inter_node_kind is 'none'")
    if row.derived and not row.pricing_model.startswith("reserved"):
        raise row_error(path, line, "derived", "only reserved rows can be derived")
    return row


def csv_records(reader: Any, name: object) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of the records of a csv.reader; a record the parser refuses (a
    field over its size limit) is CatalogError naming the file and the line."""
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise CatalogError(
                f"{name}: row {reader.line_num}: not readable as CSV ({exc}); allowed: fields of at "
                f"most {csv.field_size_limit():,} characters"
            ) from None
        yield reader.line_num, fields


#: CHOICE: rows read before a table is reduced while read (the bundled table has ~250; a
#: table this large is a generated or multi-region dump, not a hand-kept list)
LARGE_TABLE_ROWS = 50_000
#: CHOICE: rows kept per machine (provider, instance, GPUs, host, network, pricing model)
KEEP_REGIONS = 8

#: fields that tell rows of one machine apart without making it another machine
_PER_REGION = {"region", "usd_per_hour", "usd_per_gpu_hour", "as_of", "source"}
_MACHINE = tuple(f for f in OfferingRow.model_fields if f not in _PER_REGION)


@dataclass(frozen=True)
class StreamedTable:
    """The rows kept (in file order) and how many were read."""

    rows: tuple[OfferingRow, ...]
    read: int

    @property
    def reduced(self) -> bool:
        return len(self.rows) < self.read

    def __len__(self) -> int:  # the rows read: what the cache's metadata counted
        return self.read


def _machine(row: OfferingRow) -> tuple[object, ...]:
    return tuple(getattr(row, f) for f in _MACHINE)


def stream_rows(
    lines: Iterable[str], name: object, reduce_over: int | None = None, keep_regions: Iterable[str] = ()
) -> StreamedTable:
    """Validate CSV text lines, one row at a time; row numbers are CSV line numbers (the header
    is row 1). Every row of a table up to `reduce_over` rows is kept (None: every row of any
    table; the planners pass LARGE_TABLE_ROWS), else the KEEP_REGIONS cheapest rows of each
    machine: rows that differ only in region, price, date and source are one machine to the
    planner, which takes the cheapest
    (ties: the region first in sort order, so the choice does not depend on the file's order);
    the others are enough for next-best alternatives and for the price sanity rules to have
    other regions to compare with. Memory past `reduce_over` rows: the kept rows and one
    16-byte digest per row read (the duplicate check). Rows in `keep_regions` (the regions a job names:
    its region filter, its data's region, its held or reserved instances; case-insensitive)
    are always kept, so a reduction never drops what the job asked for.

    Raises:
        CatalogError: a bad header, row or duplicate offering (file, row and column named).
    """
    reader = csv_records(csv.reader(lines), name)
    first = next(reader, None)
    header = [h.strip() for h in first[1]] if first and first[1] else None
    check_header(name, header)
    header = header or []
    pinned_regions = {r.lower() for r in keep_regions}
    kept: list[tuple[int, OfferingRow]] = []
    pinned: list[tuple[int, OfferingRow]] = []
    groups: dict[tuple[object, ...], list[tuple[float, str, int, OfferingRow]]] | None = None
    # 128-bit digest of (provider, instance, region, pricing) -> its line: a collision (a false
    # "duplicate" naming an unrelated row) is ~1e-27 at 1e6 rows; a 64-bit hash was ~3e-8
    seen: dict[bytes, int] = {}
    read = 0
    for line, fields in reader:
        if not fields or not any(f.strip() for f in fields):
            continue
        if len(fields) != len(header):
            column = header[len(fields)] if len(fields) < len(header) else "(extra field)"
            raise row_error(name, line, column, f"expected {len(header)} fields, got {len(fields)}")
        row = check_row(name, line, dict(zip(header, fields, strict=True)))
        key = (row.provider, row.instance_type, row.region, row.pricing_model)
        digest = hashlib.blake2b(repr(key).encode(), digest_size=16).digest()
        if digest in seen:
            raise row_error(
                name, line, "pricing_model", f"duplicate offering {key} (first on row {seen[digest]})"
            )
        seen[digest] = line
        read += 1
        if groups is None:
            kept.append((line, row))
            if reduce_over is not None and len(kept) > reduce_over:
                groups = {}
                for at, old in kept:
                    _keep_or_pin(groups, pinned, pinned_regions, at, old)
                kept = []
        else:
            _keep_or_pin(groups, pinned, pinned_regions, line, row)
    if not read:
        raise CatalogError(f"{name}: row 2: no offerings in the file")
    if groups is not None:
        kept = sorted([(at, row) for group in groups.values() for _, _, at, row in group] + pinned)
    return StreamedTable(tuple(row for _, row in kept), read)


def _keep_or_pin(
    groups: dict[tuple[object, ...], list[tuple[float, str, int, OfferingRow]]],
    pinned: list[tuple[int, OfferingRow]],
    pinned_regions: set[str],
    line: int,
    row: OfferingRow,
) -> None:
    """A row of a region the job names is always kept; any other competes in its machine."""
    if row.region.lower() in pinned_regions:
        pinned.append((line, row))
    else:
        _keep(groups, line, row)


def _keep(
    groups: dict[tuple[object, ...], list[tuple[float, str, int, OfferingRow]]], line: int, row: OfferingRow
) -> None:
    """Add `row` to its machine's cheapest KEEP_REGIONS (by price, then region)."""
    group = groups.setdefault(_machine(row), [])
    entry = (row.usd_per_hour, row.region, line, row)
    if len(group) == KEEP_REGIONS and entry[:2] >= group[-1][:2]:
        return
    bisect.insort(group, entry, key=lambda e: e[:2])
    if len(group) > KEEP_REGIONS:
        group.pop()


def validate_csv(lines: Iterable[str], name: object) -> list[OfferingRow]:
    """Validate CSV text lines; return every row or raise CatalogError naming file, row, column.

    Row numbers are CSV line numbers (the header is row 1).
    """
    return list(stream_rows(lines, name).rows)


def read_offerings(path: Path, name: object | None = None) -> pd.DataFrame:
    """Read and validate an offerings CSV into the tidy catalog DataFrame (columns = COLUMNS)."""
    label = name if name is not None else path
    try:
        with io.TextIOWrapper(open_input(path, str(label)), encoding="utf-8", newline="") as handle:
            rows = validate_csv(handle, label)
    except UnicodeDecodeError as exc:
        raise CatalogError(f"{label}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise CatalogError(f"{label}: cannot read ({exc.strerror or exc})") from None
    return rows_to_frame(rows)


def rows_to_frame(rows: Iterable[OfferingRow]) -> pd.DataFrame:
    """Validated rows as the tidy catalog DataFrame (columns = COLUMNS; as_of as ISO text)."""
    import pandas as pd  # lazy: pandas is heavy and only the prices table needs a DataFrame

    records = [r.model_dump() for r in rows]
    for rec in records:
        rec["as_of"] = rec["as_of"].isoformat()
    frame = pd.DataFrame.from_records(records, columns=list(COLUMNS))
    dtypes = {
        "gpus_per_instance": "int64",
        "vcpus": "float64",
        "ram_gib": "float64",
        "intra_node_bw_gb_s": "float64",
        "inter_node_gbps": "float64",
        "inter_node_is_default": "bool",
        "max_instances": "float64",
        "usd_per_hour": "float64",
        "usd_per_gpu_hour": "float64",
        "commitment_hours": "int64",
        "derived": "bool",
    }
    return frame.astype(dtypes)
