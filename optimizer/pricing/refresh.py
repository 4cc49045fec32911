"""Download newer price tables over HTTP into the user cache, validated and replaced atomically."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from optimizer.errors import CatalogError, ConfigError, RefreshError
from optimizer.files import write_atomic
from optimizer.inputs.validation import check_number
from optimizer.pricing import skypilot
from optimizer.pricing.cache_meta import META_FILE, checksum_problem, read_meta
from optimizer.pricing.catalog import CACHE_FILE
from optimizer.pricing.download import Deadline, download
from optimizer.pricing.refresh_catalog import ACCEPT_CSV, catalog_table, download_catalog
from optimizer.pricing.schema import read_offerings
from optimizer.pricing.shrink import check_shrink
from optimizer.user_cache import cache_root

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RefreshResult", "refresh_prices", "META_FILE", "read_meta", "header_safe", "MAX_HEADER_CHARS"]

#: the ranges of the arguments (`prices refresh --timeout/--deadline/--retries`)
MAX_TIMEOUT_S = 600.0
MAX_DEADLINE_S = 3600.0
MAX_RETRIES = 10


@dataclass(frozen=True)
class RefreshResult:
    """Outcome of a refresh.

    Attributes:
        status: "updated" (new table written) or "not_modified" (HTTP 304, cache kept).
        path: the cached offerings CSV.
        url: where it came from.
        rows: offerings in the cached table.
        as_of: newest as_of date among those rows.
        bytes: size of the downloaded body (0 for not_modified).
    """

    status: str
    path: Path
    url: str
    rows: int
    as_of: str
    bytes: int
    #: files read (1 for --url; one per cloud for the SkyPilot catalog)
    files: int = 1
    #: catalog rows left out, one line each (GPU not in the GPU catalog, no network figure)
    skipped: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line for the CLI."""
        if self.status == "not_modified":
            return f"prices: not modified at {self.url}; keeping {self.path} (as of {self.as_of})"
        source = f"the SkyPilot catalog at {self.url} ({self.files} files)" if self.files > 1 else self.url
        left = f"; {len(self.skipped)} catalog instances left out" if self.skipped else ""
        return f"prices: updated {self.path} from {source}: {self.rows} offerings, as of {self.as_of}{left}"


def _summary(path: Path, label: str) -> tuple[int, str]:

    frame = read_offerings(path, name=label)
    return len(frame), str(frame["as_of"].max())


def _utc_now_iso() -> str:
    """Current UTC time, ISO 8601 to the second (dt.UTC needs Python 3.11)."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")  # noqa: UP017


def refresh_prices(
    url: str | None = None,
    *,
    catalog_url: str | None = None,
    today: dt.date | None = None,
    cache_dir: str | Path | None = None,
    timeout_s: float = 10,
    retries: int = 3,
    max_bytes: int = 20_000_000,
    backoff_s: float = 0.5,
    deadline_s: float = 60.0,
    allow_shrink: bool = False,
) -> RefreshResult:
    """Download newer price tables into the user cache: an offerings CSV from `url`, or (no
    URL) the public SkyPilot catalog's per-cloud vms.csv files, converted as the bundled table
    was built (pricing/refresh_catalog.py).

    Args:
        url: http(s) URL of an offerings CSV; default $CCOPT_PRICES_URL; neither: the catalog.
        catalog_url: the SkyPilot catalog directory (default $CCOPT_SKYPILOT_URL, else
            skypilot.DEFAULT_BASE_URL); each cloud's file is `{catalog_url}/v8/aws/vms.csv`.
        today: the date the catalog is read on (as_of of its rows); default today, UTC.
        cache_dir: directory of the cache; default $CCOPT_CACHE_DIR or ~/.cache/ccopt.
        timeout_s: connect and read timeout per attempt, seconds.
        retries: extra attempts after the first, only on timeouts, connection errors and 5xx.
        max_bytes: largest body accepted, enforced while streaming.
        backoff_s: sleep before the first retry, doubled for each further retry, seconds.
        deadline_s: total wall time of the refresh (all attempts, backoff and body), seconds;
            a server that trickles bytes is cut off here. For the catalog: per file.
        allow_shrink: accept a table that lost more than shrink.MAX_ROW_LOSS of the rows of the
            cached table or a whole provider (without a valid cache there is nothing to lose).

    Returns:
        RefreshResult (status "updated" or "not_modified").

    Raises:
        ConfigError: a bad argument (no URL, not http(s), a timeout or deadline out of range).
        RefreshError: any failure; the previous cache files are left byte-identical.
    """
    target, field = _refresh_target(url, catalog_url)
    check_number(timeout_s, "--timeout-s", gt=0, le=MAX_TIMEOUT_S)
    check_number(deadline_s, "--deadline-s", gt=0, le=MAX_DEADLINE_S)
    check_number(retries, "--retries", ge=0, le=MAX_RETRIES, integer=True)
    check_number(backoff_s, "backoff_s", ge=0, le=MAX_TIMEOUT_S)
    directory = Path(cache_dir).expanduser() if cache_dir is not None else _user_cache()
    fetch = _Fetch(timeout_s, retries, max_bytes, backoff_s, deadline_s)
    if field == "--catalog-url":
        return _refresh_from_catalog(directory, target, fetch, today, allow_shrink)
    return _refresh_from_csv(directory, target, fetch, allow_shrink)


@dataclass(frozen=True)
class _Fetch:
    """How a refresh downloads (refresh_prices' arguments of the same names)."""

    timeout_s: float
    retries: int
    max_bytes: int
    backoff_s: float
    deadline_s: float


def _user_cache() -> Path:
    """The user cache folder refreshed into; a refused one (relative) is bad input, as it is
    never read (optimizer/user_cache.py)."""
    root = cache_root()
    if root.path is None:
        raise ConfigError(f"prices refresh: {root.refused}")
    return root.path


def _refresh_target(url: str | None, catalog_url: str | None) -> tuple[str, str]:
    """(the http(s) URL refreshed from, the flag that names it: --url or --catalog-url)."""
    if url and catalog_url:
        raise ConfigError("--url and --catalog-url: give one (an offerings CSV, or the SkyPilot catalog)")
    for flag, given in (("--url", url), ("--catalog-url", catalog_url)):
        if given is not None and not given.strip():  # '' is not "the default source"
            raise ConfigError(f"{flag}: empty; allowed: an http(s) URL (or leave {flag} out)")
    target = url or ("" if catalog_url else os.environ.get("CCOPT_PRICES_URL", "").strip())
    field = "--url" if target else "--catalog-url"
    target = target or skypilot.base_url(catalog_url)
    if not target.startswith(("http://", "https://")):
        raise ConfigError(f"{field}: {target!r} is not an http(s) URL; allowed: http://... or https://...")
    return target, field


def _refresh_from_catalog(
    directory: Path, target: str, fetch: _Fetch, today: dt.date | None, allow_shrink: bool
) -> RefreshResult:
    """The SkyPilot catalog's per-cloud files, converted and installed as the cached table."""
    csv_path = directory / CACHE_FILE
    try:
        texts, urls, size = download_catalog(
            target, fetch.timeout_s, fetch.retries, fetch.max_bytes, fetch.backoff_s, fetch.deadline_s
        )
        read_date = today or dt.datetime.now(dt.timezone.utc).date()  # noqa: UP017
        body, notes = catalog_table(texts, urls, csv_path, read_date, allow_shrink)
        done = _install(directory, csv_path, target, body, {}, allow_shrink)
    except RefreshError as exc:
        message = f"refresh from the SkyPilot catalog failed: {exc}; keeping previous tables"
        raise RefreshError(message) from None
    return replace(done, bytes=size, files=len(texts), skipped=tuple(notes))


def _refresh_from_csv(directory: Path, target: str, fetch: _Fetch, allow_shrink: bool) -> RefreshResult:
    """An offerings CSV, fetched conditionally when the cache is the file fetched from `target`."""
    csv_path = directory / CACHE_FILE
    deadline = Deadline.after(fetch.deadline_s)
    headers = {**ACCEPT_CSV, **_conditional(directory, csv_path, target)}
    try:
        status, body, response_headers = download(
            target, headers, fetch.timeout_s, fetch.retries, fetch.max_bytes, fetch.backoff_s, deadline
        )
        if status == 304:
            if not csv_path.is_file():
                raise RefreshError("server answered 304 Not Modified but there is no cached table")
            rows, as_of = _summary(csv_path, str(csv_path))
            return RefreshResult("not_modified", csv_path, target, rows, as_of, 0)
        return _install(directory, csv_path, target, body, response_headers, allow_shrink)
    except RefreshError as exc:
        message = f"refresh from {target} failed: {exc}; keeping previous tables"
        raise RefreshError(message) from None


def _conditional(directory: Path, csv_path: Path, target: str) -> dict[str, str]:
    """If-None-Match / If-Modified-Since of the cached table, only for a cache that is the file
    we wrote from `target` (a damaged one is fetched anew)."""
    meta = read_meta(directory)
    headers: dict[str, str] = {}
    if csv_path.is_file() and meta.get("url") == target and checksum_problem(csv_path) is None:
        for key, header in (("etag", "If-None-Match"), ("last_modified", "If-Modified-Since")):
            value = header_safe(meta.get(key))
            if value is not None:  # a value that cannot be sent back (hand-edited) is skipped
                headers[header] = value
    return headers


#: the longest ETag / Last-Modified value kept (real ones are under 100 characters)
MAX_HEADER_CHARS = 1024


def header_safe(value: object) -> str | None:
    """`value` if it can be sent back as an HTTP header (printable ASCII, at most
    MAX_HEADER_CHARS), else None: odd metadata only costs the conditional request."""
    if not isinstance(value, str) or not value or len(value) > MAX_HEADER_CHARS:
        return None
    return value if value.isascii() and value.isprintable() else None


def _cached(csv_path: Path) -> pd.DataFrame | None:
    """The cached table a refresh would replace, or None (absent or invalid: nothing to lose)."""
    if csv_path.is_file():
        with contextlib.suppress(CatalogError):
            return read_offerings(csv_path)
    return None


def _install(
    directory: Path,
    csv_path: Path,
    url: str,
    body: bytes,
    headers: dict[str, str],
    allow_shrink: bool = False,
) -> RefreshResult:
    """Validate `body` completely, then atomically replace the cached CSV and metadata
    (optimizer.files.write_atomic: the body is checked in its temp file before the rename)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RefreshError(f"cannot create cache directory {directory} ({exc.strerror or exc})") from None
    summary: dict[str, object] = {}

    def validate(tmp: Path) -> None:
        try:
            frame = read_offerings(tmp, name=url)
        except CatalogError as exc:
            raise RefreshError(f"downloaded table is invalid: {exc}") from None
        old = None if allow_shrink else _cached(csv_path)
        if old is not None:
            check_shrink(old, frame, "cached table")
        summary.update(rows=len(frame), as_of=str(frame["as_of"].max()))

    try:
        write_atomic(csv_path, body, before_replace=validate)
    except OSError as exc:
        raise RefreshError(f"cannot write {csv_path} ({exc.strerror or exc})") from None
    rows, as_of = int(str(summary["rows"])), str(summary["as_of"])
    lowered = {k.lower(): v for k, v in headers.items()}
    meta = {
        "url": url,
        "etag": header_safe(lowered.get("etag")),
        "last_modified": header_safe(lowered.get("last-modified")),
        "fetched_at": _utc_now_iso(),
        "sha256": hashlib.sha256(body).hexdigest(),
        "bytes": len(body),
        "rows": rows,
        "as_of": as_of,
    }
    try:
        write_atomic(directory / META_FILE, json.dumps(meta, indent=2).encode())
    except OSError:  # the CSV is valid and in place; drop stale metadata so the next
        with contextlib.suppress(OSError):  # refresh is unconditional
            (directory / META_FILE).unlink()
    return RefreshResult("updated", csv_path, url, rows, as_of, len(body))
