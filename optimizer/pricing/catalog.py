"""The cloud price catalog: load (bundled / user cache / file), filter, cheapest per GPU-hour."""

from __future__ import annotations

import datetime as dt
import functools
import io
import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optimizer.errors import CatalogError, ConfigError, did_you_mean
from optimizer.files import open_input
from optimizer.inputs.gpus import data_path, resolve_gpu_id
from optimizer.inputs.jobs.pricing import PriceOverlay, load_overlay, overlay_path
from optimizer.notices import note
from optimizer.pricing.cache_meta import checksum_problem, rows_problem
from optimizer.pricing.overlay import Overlay, apply_overlays
from optimizer.pricing.schema import (
    COLUMNS,
    KEEP_REGIONS,
    LARGE_TABLE_ROWS,
    StreamedTable,
    read_offerings,
    stream_rows,
)
from optimizer.units import HOURS_PER_YEAR
from optimizer.user_cache import cache_root, untrusted_reason, user_cache_dir
from optimizer.vocabulary import COMMITMENT_HOURS, INTER_NODE_KINDS, INTRA_NODE_LINKS, PRICING_MODELS

if TYPE_CHECKING:
    import pandas as pd

    from optimizer.pricing.schema import OfferingRow

__all__ = [
    "PRICING_MODELS",
    "HOURS_PER_YEAR",
    "COMMITMENT_HOURS",
    "COLUMNS",
    "INTER_NODE_KINDS",
    "INTRA_NODE_LINKS",
    "CACHE_FILE",
    "Catalog",
    "CatalogAge",
    "CatalogRows",
    "catalog_age",
    "load_catalog",
    "load_catalog_rows",
    "filter_offerings",
    "filter_rows",
    "load_offering_rows",
    "row_filter",
    "cheapest_per_gpu_hour",
    "cache_dir",
    "offline_from_env",
    "bundled_path",
]

CACHE_FILE = "offerings.csv"
_TRUE = {"1", "true", "yes", "on"}


@dataclass(frozen=True, eq=False)
class Catalog:
    """A validated price table and where it came from.

    Attributes:
        frame: one row per (provider, instance_type, region, pricing_model); columns COLUMNS.
        source: "bundled", "cache", or the path given to load_catalog.
        as_of: newest as_of date (ISO) among the rows.
        path: the file that was read.
        note: why a fallback happened (e.g. an invalid cache), else "".
    """

    frame: pd.DataFrame
    source: str
    as_of: str
    path: str
    note: str = ""

    def describe(self) -> str:
        """One line for stderr, e.g. 'prices: bundled tables, as of 2026-12-02'."""
        label = {"bundled": "bundled tables", "cache": f"cached tables ({self.path})"}.get(
            self.source, self.source
        )
        line = f"prices: {label}, as of {self.as_of}"
        return f"{line} ({self.note})" if self.note else line

    def age(self, today: dt.date | None = None) -> CatalogAge:
        """How old these tables are on `today` (default: the local date)."""
        return CatalogAge(
            source=self.source,
            as_of=dt.date.fromisoformat(self.as_of),
            path=self.path,
            today=today or dt.date.today(),
        )


@dataclass(frozen=True)
class CatalogAge:
    """Where the price tables came from and how old they are.

    Attributes:
        source: "bundled", "cache", or the path given to the loader.
        as_of: the newest as_of date among the rows.
        path: the file that was read.
        today: the date the age is measured on (injected in tests).
        note: why a fallback happened (e.g. an invalid cache → bundled), else "".
    """

    source: str
    as_of: dt.date
    path: str
    today: dt.date
    note: str = ""
    #: your prices applied over the tables (the overlay file's path, a job's [pricing])
    overlays: tuple[str, ...] = ()

    @property
    def age_days(self) -> int:
        """Whole days from as_of to today (0 on the day of the tables; negative if dated ahead)."""
        return (self.today - self.as_of).days

    def describe(self) -> str:
        """E.g. 'prices as of 2026-10-01 (63 days old, bundled)'."""
        days = self.age_days
        age = "today" if days == 0 else f"{days} day{'' if abs(days) == 1 else 's'} old"
        return f"prices as of {self.as_of} ({age}, {self.source})"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: source, as_of (ISO), age_days, path (and note when a fallback happened)."""
        out: dict[str, Any] = {
            "source": self.source,
            "as_of": self.as_of.isoformat(),
            "age_days": self.age_days,
            "path": self.path,
        }
        if self.overlays:
            out["overlays"] = list(self.overlays)
        return {**out, "note": self.note} if self.note else out


@dataclass(frozen=True)
class CatalogRows:
    """The validated catalog as OfferingRow objects, with its age (what `load_catalog_rows` returns).

    Attributes:
        rows: the OfferingRow objects (the planners' input; pass them whole to cloud_offerings).
        age: source, as_of, age_days and path of the tables.
        description: the one-line stderr summary ('prices: bundled tables, as of ...').
        note: why a fallback happened (e.g. an invalid cache), else "".
    """

    rows: tuple[OfferingRow, ...]
    age: CatalogAge
    description: str
    note: str = ""


def offline_from_env() -> bool:
    """True if CCOPT_OFFLINE is set to 1/true/yes/on (forces the bundled tables)."""
    return os.environ.get("CCOPT_OFFLINE", "").strip().lower() in _TRUE


def cache_dir() -> Path | None:
    """The user cache directory as configured (user_cache.user_cache_dir; None: no home folder)."""
    return user_cache_dir()


def bundled_path() -> Path:
    """Path of the bundled pricing_data/offerings.csv."""
    return data_path(CACHE_FILE)


@functools.lru_cache(maxsize=8)
def _read_cached(path: str, mtime_ns: int, size: int) -> pd.DataFrame:
    """Validated frame of `path`; (mtime_ns, size) in the key so a replaced file is re-read."""
    return read_offerings(Path(path))


def _stat(path: Path) -> os.stat_result:
    """The file's stat; CatalogError when it is missing, unreadable or a directory."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise CatalogError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if path.is_dir():
        raise CatalogError(f"{path}: is a directory; allowed: an offerings CSV file")
    return stat


def _read(path: Path) -> pd.DataFrame:
    stat = _stat(path)
    return _read_cached(str(path), stat.st_mtime_ns, stat.st_size).copy()


def _catalog(frame: pd.DataFrame, source: str, path: Path, note: str = "") -> Catalog:
    return Catalog(frame=frame, source=source, as_of=str(frame["as_of"].max()), path=str(path), note=note)


def _source_files(path: str | Path | None, offline: bool | None) -> list[tuple[Path, str]]:
    """Files to try in order, with their source label: `path`; else cache then bundled."""
    if path is not None:
        file = Path(path).expanduser()
        return [(file, str(file))]
    if offline is None:
        offline = offline_from_env()
    files: list[tuple[Path, str]] = []
    root = cache_root()
    if not offline and root.path is not None and os.path.lexists(cached := root.path / CACHE_FILE):
        if reason := untrusted_reason(root.path, cached):
            note(f"ignored the price cache: {reason}; using the bundled tables")
        else:
            files.append((cached, "cache"))
    elif not offline and root.refused:
        note(f"cache not used: {root.refused}")
    return files + [(bundled_path(), "bundled")]


def _load_first(reader: Any, path: str | Path | None, offline: bool | None) -> tuple[Any, str, Path, str]:
    """(data, source, file, note) from the first file that validates; an invalid cache (a bad
    table, or not the file refresh wrote: SHA-256 or row count differ from its metadata) falls
    back to the bundled tables with a note; any other invalid file raises CatalogError."""
    note = ""
    files = _source_files(path, offline)
    for file, source in files:
        try:
            if source == "cache" and (problem := checksum_problem(file)):
                raise CatalogError(problem)
            data = reader(file)
            if source == "cache" and (problem := rows_problem(file, len(data))):
                raise CatalogError(problem)
            return data, source, file, note
        except CatalogError as exc:
            if source != "cache":
                raise
            note = f"ignored invalid cache: {exc}"
    raise AssertionError("unreachable: the bundled file is always tried last")


def load_catalog(path: str | Path | None = None, *, offline: bool | None = None) -> Catalog:
    """Load and validate the price catalog.

    Args:
        path: an offerings CSV to read instead of the defaults.
        offline: True forces the bundled tables; None reads CCOPT_OFFLINE.

    Returns:
        Catalog from `path`, else the user cache (if present, valid and not offline), else
        the bundled pricing_data/offerings.csv. An invalid cache falls back to the bundled
        tables and says so in Catalog.note.

    Raises:
        CatalogError: the chosen file fails validation (names file, row and column).
    """
    frame, source, file, note = _load_first(_read, path, offline)
    return _catalog(frame, source, file, note)


@functools.lru_cache(maxsize=8)
def _rows_cached(
    path: str, mtime_ns: int, size: int, keep_regions: frozenset[str] = frozenset()
) -> StreamedTable:
    """The rows of `path` streamed and validated (a table over LARGE_TABLE_ROWS rows keeps the
    cheapest KEEP_REGIONS rows of each machine: schema.stream_rows, bounded memory)."""
    try:
        with io.TextIOWrapper(open_input(path, path), encoding="utf-8", newline="") as handle:
            return stream_rows(handle, path, reduce_over=LARGE_TABLE_ROWS, keep_regions=keep_regions)
    except UnicodeDecodeError as exc:
        raise CatalogError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except OSError as exc:
        raise CatalogError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _read_rows(path: Path, keep_regions: frozenset[str] = frozenset()) -> StreamedTable:
    stat = _stat(path)
    return _rows_cached(str(path), stat.st_mtime_ns, stat.st_size, keep_regions)


def catalog_age(
    rows: Iterable[OfferingRow], source: str, path: str | Path, today: dt.date | None = None
) -> CatalogAge:
    """The age of a set of rows: newest as_of vs `today` (default: the local date)."""
    return CatalogAge(
        source=source, as_of=max(r.as_of for r in rows), path=str(path), today=today or dt.date.today()
    )


@functools.lru_cache(maxsize=8)
def _stamped(rows: tuple[OfferingRow, ...], origin: str) -> tuple[OfferingRow, ...]:
    """`rows` with their price's origin (cached: the same table read again is the same tuple)."""
    return tuple(r.model_copy(update={"origin": origin}) for r in rows)


#: the origin of a row's price by the table it was read from (any other file: "file")
_ORIGIN = {"bundled": "bundled", "cache": "refreshed"}


def load_catalog_rows(
    path: str | Path | None = None,
    *,
    offline: bool | None = None,
    today: dt.date | None = None,
    overlay: PriceOverlay | None = None,
    overlay_label: str = "[pricing]",
    keep_regions: Iterable[str] = (),
) -> CatalogRows:
    """The validated catalog as OfferingRow objects with its age (same files, order and checks
    as load_catalog, without pandas: the planners' fast path), with the user's prices applied:
    the overlay file (inputs/jobs/pricing.overlay_path) and then `overlay` (a job's `[pricing]`).

    Args:
        path: an offerings CSV to read instead of the defaults.
        offline: True forces the bundled tables; None reads CCOPT_OFFLINE.
        today: the date CatalogAge.age_days is measured on (default: the local date).
        overlay: a job's `[pricing]` table, applied after the user's file.
        overlay_label: how messages and plan lines name `overlay`.
        keep_regions: regions the job names, never dropped when a large table is reduced.

    Raises:
        CatalogError: the chosen file fails validation (names file, row and column).
        ConfigError: the overlay file or `overlay` is invalid or names nothing in the catalog.
    """
    pinned = frozenset(r.lower() for r in keep_regions)
    table, source, file, note = _load_first(functools.partial(_read_rows, keep_regions=pinned), path, offline)
    rows = table.rows
    if table.reduced:  # stated wherever the catalog's note is (plan line, JSON catalog.note)
        kept = (
            f"{table.read:,} rows read, the {KEEP_REGIONS} cheapest regions of each machine kept"
            f"{' with every row of ' + ', '.join(sorted(pinned)) if pinned else ''} "
            f"({len(rows):,} rows; a table over {LARGE_TABLE_ROWS:,} rows is reduced while read)"
        )
        note = f"{note}; {kept}" if note else kept
    age = replace(catalog_age(rows, source, file, today), note=note)
    label = {"bundled": "bundled tables", "cache": f"cached tables ({file})"}.get(source, source)
    line = f"prices: {label}, as of {age.as_of}"
    origin = _ORIGIN.get(source, "file")
    rows = _stamped(rows, origin)
    overlays = []
    user_file = overlay_path()
    if user_file is not None:
        overlays.append(Overlay(load_overlay(user_file), str(user_file)))
    if overlay is not None and not overlay.empty:
        overlays.append(Overlay(overlay, overlay_label))
    if overlays:
        rows = apply_overlays(rows, overlays, today)
        changed = sum(r.origin == "overlay" for r in rows)
        line += f"; your prices ({', '.join(o.label for o in overlays)}) set {changed} rows"
        age = replace(age, overlays=tuple(o.label for o in overlays))
    return CatalogRows(rows=rows, age=age, description=f"{line} ({note})" if note else line, note=note)


def load_offering_rows(
    path: str | Path | None = None, *, offline: bool | None = None
) -> tuple[tuple[Any, ...], str]:
    """The validated catalog as OfferingRow objects (same files and checks as load_catalog,
    without pandas: the planner's fast path). Returns (rows, one-line description);
    `load_catalog_rows` returns the same with the catalog's age."""
    loaded = load_catalog_rows(path, offline=offline)
    return loaded.rows, loaded.description


def _as_list(value: str | Iterable[str] | None, split: bool = True) -> list[str] | None:
    """Normalise a filter value to a list; "a,b" splits unless `split` is False."""
    if value is None:
        return None
    items = [value] if isinstance(value, str) else list(value)
    parts = [p for item in items for p in (str(item).split(",") if split else [str(item)])]
    out = [p.strip() for p in parts if p.strip()]
    return out or None


def _check_known(wanted: list[str], field: str, allowed: Iterable[str]) -> set[str]:
    """Lower-cased wanted values; ConfigError naming the field and the allowed values."""
    allowed = sorted(set(allowed))
    lowered = {a.lower() for a in allowed}
    for value in wanted:
        if value.lower() not in lowered:
            raise ConfigError(
                f"{field}: unknown value {value!r}{did_you_mean(value, allowed)} "
                f"Allowed: {', '.join(allowed)}"
            )
    return {v.lower() for v in wanted}


def row_filter(
    *,
    gpus: str | Iterable[str] | None = None,
    providers: str | Iterable[str] | None = None,
    regions: str | Iterable[str] | None = None,
    pricing: str | Iterable[str] | None = None,
    min_instances: int | None = None,
    known_providers: Iterable[str] = (),
    known_regions: Iterable[str] = (),
    max_instances: int | None = None,
) -> Any:
    """A predicate over rows (attributes gpu_id, provider, region, pricing_model,
    max_instances) implementing the filters of filter_offerings; validates the values first.
    `max_instances` is the old name of `min_instances` (it always meant "at least").

    Raises:
        ConfigError: an unknown value; the message names the field and the allowed values.
    """
    gpu_list = _as_list(gpus)
    ids = {resolve_gpu_id(g, field="gpu") for g in gpu_list} if gpu_list is not None else None
    provider_list = _as_list(providers)
    prov = _check_known(provider_list, "provider", known_providers) if provider_list is not None else None
    region_list = _as_list(regions, split=False)
    regs = _check_known(region_list, "region", known_regions) if region_list is not None else None
    pricing_list = _as_list(pricing)
    prices = (
        _check_known([p.replace("-", "_") for p in pricing_list], "pricing", PRICING_MODELS)
        if pricing_list is not None
        else None
    )
    least = min_instances if min_instances is not None else max_instances
    if least is not None and least < 1:
        raise ConfigError(f"min_instances: must be >= 1, got {least}")

    def keep(row: Any) -> bool:
        limit = row.max_instances
        return (
            (ids is None or row.gpu_id in ids)
            and (prov is None or row.provider.lower() in prov)
            and (regs is None or row.region.lower() in regs)
            and (prices is None or row.pricing_model.lower() in prices)
            and (least is None or limit is None or limit != limit or limit >= least)
        )

    return keep


def filter_offerings(
    frame: pd.DataFrame,
    *,
    gpus: str | Iterable[str] | None = None,
    providers: str | Iterable[str] | None = None,
    regions: str | Iterable[str] | None = None,
    pricing: str | Iterable[str] | None = None,
    min_instances: int | None = None,
    max_instances: int | None = None,
) -> pd.DataFrame:
    """Rows of `frame` matching every given filter (case-insensitive).

    Each filter takes one value or a list; "a,b" is split into a list, except for regions
    (marketplace regions such as "Kansas, US, NA" contain commas).

    Args:
        gpus: GPU ids or aliases (resolved with optimizer.inputs.gpus.resolve_gpu_id).
        providers: provider names present in `frame`.
        regions: region names present in `frame`.
        pricing: pricing models from PRICING_MODELS.
        min_instances: keep offerings that can be rented at least this many instances
            together (rows with no limit, NaN, always pass).
        max_instances: the old name of min_instances (same meaning; kept for callers).

    Raises:
        ConfigError: an unknown value; the message names the field and the allowed values.
    """
    keep = row_filter(
        gpus=gpus,
        providers=providers,
        regions=regions,
        pricing=pricing,
        min_instances=min_instances,
        max_instances=max_instances,
        known_providers=frame["provider"],
        known_regions=frame["region"],
    )
    return frame[[keep(row) for row in frame.itertuples(index=False)]]


def filter_rows(rows: Iterable[Any], **filters: Any) -> list[Any]:
    """filter_offerings for OfferingRow objects (see load_offering_rows)."""
    rows = list(rows)
    keep = row_filter(
        known_providers={r.provider for r in rows}, known_regions={r.region for r in rows}, **filters
    )
    return [r for r in rows if keep(r)]


def cheapest_per_gpu_hour(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per gpu_id: the offering with the lowest usd_per_gpu_hour, sorted by it.

    Ties break on provider, instance_type, region, pricing_model (deterministic).
    """
    keys = ["usd_per_gpu_hour", "provider", "instance_type", "region", "pricing_model"]
    ordered = frame.sort_values(keys, kind="mergesort")
    return ordered.drop_duplicates("gpu_id", keep="first").reset_index(drop=True)
