"""Download newer price tables over HTTP into the user cache, validated and replaced atomically."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optimizer.errors import CatalogError, RefreshError
from optimizer.pricing.catalog import CACHE_FILE
from optimizer.pricing.catalog import cache_dir as default_cache_dir
from optimizer.pricing.schema import read_offerings

__all__ = ["RefreshResult", "refresh_prices", "META_FILE", "read_meta"]

META_FILE = "offerings.meta.json"
_CHUNK_BYTES = 64 * 1024


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

    def describe(self) -> str:
        """One line for the CLI."""
        if self.status == "not_modified":
            return f"prices: not modified at {self.url}; keeping {self.path} (as of {self.as_of})"
        return (f"prices: updated {self.path} from {self.url}: {self.rows} offerings, "
                f"as of {self.as_of}")


def read_meta(directory: Path) -> dict[str, Any]:
    """The metadata JSON next to the cached CSV ({} if absent or unreadable)."""
    try:
        data = json.loads((directory / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_temp(path: Path, data: bytes) -> str:
    """Write `data` to a new temp file beside `path` (same directory, so os.replace is atomic)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def _atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to a temp file beside `path`, then os.replace it onto `path`."""
    tmp = _write_temp(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _summary(path: Path, label: str) -> tuple[int, str]:

    frame = read_offerings(path, name=label)
    return len(frame), str(frame["as_of"].max())


def _download(
    url: str, headers: dict[str, str], timeout_s: float, retries: int, max_bytes: int,
    backoff_s: float,
) -> tuple[int, bytes, dict[str, str]]:
    """GET with bounded retries on timeouts, connection errors and 5xx; stream with a size cap.

    Returns (status, body, response headers); status 304 has an empty body.
    """
    import requests  # lazy: only `prices refresh` talks HTTP; keeps start-up fast

    last = ""
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(backoff_s * 2 ** (attempt - 1))  # exponential backoff: b, 2b, 4b, ...
        try:
            with requests.get(url, headers=headers, timeout=(timeout_s, timeout_s),
                              stream=True, allow_redirects=True) as response:
                status = response.status_code
                if status >= 500:
                    last = f"HTTP {status} {response.reason or ''}".strip()
                    continue
                if status == 304:
                    return status, b"", dict(response.headers)
                if status != 200:
                    raise RefreshError(f"HTTP {status} {response.reason or ''}".strip())
                return status, _read_body(response, max_bytes), dict(response.headers)
        except requests.Timeout:
            last = f"timed out after {timeout_s:g} s"
        except requests.exceptions.ChunkedEncodingError as exc:
            raise RefreshError(_truncated(exc)) from None
        except requests.ConnectionError as exc:
            if "timed out" in str(exc).lower():
                last = f"timed out after {timeout_s:g} s"
            else:
                errno = re.search(r"\[Errno -?\d+\] [^'\")]+", str(exc))
                last = f"connection failed ({errno.group(0) if errno else _short(exc)})"
        except requests.RequestException as exc:
            raise RefreshError(f"request failed ({_short(exc)})") from None
    tries = "attempt" if retries == 0 else "attempts"
    raise RefreshError(f"{last} ({retries + 1} {tries})")


def _utc_now_iso() -> str:
    """Current UTC time, ISO 8601 to the second (dt.UTC needs Python 3.11)."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")  # noqa: UP017


def _truncated(exc: BaseException) -> str:
    match = re.search(r"IncompleteRead\((\d+) bytes read, (\d+) more expected", str(exc))
    if match:
        got, more = int(match.group(1)), int(match.group(2))
        return f"truncated body: got {got} of {got + more} bytes"
    return f"truncated body ({_short(exc)})"


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 160 else text[:157] + "..."


def _read_body(response: Any, max_bytes: int) -> bytes:
    declared = response.headers.get("Content-Length")
    expected = int(declared) if declared and declared.isdigit() else None
    if expected is not None and expected > max_bytes:
        raise RefreshError(f"body of {expected} bytes exceeds the {max_bytes}-byte limit")
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_content(_CHUNK_BYTES):
        size += len(chunk)
        if size > max_bytes:
            raise RefreshError(f"body exceeds the {max_bytes}-byte limit")
        chunks.append(chunk)
    body = b"".join(chunks)
    encoded = response.headers.get("Content-Encoding", "identity").lower() != "identity"
    if expected is not None and not encoded and len(body) != expected:
        raise RefreshError(f"truncated body: got {len(body)} of {expected} bytes")
    return body


def refresh_prices(
    url: str | None = None,
    *,
    cache_dir: str | Path | None = None,
    timeout_s: float = 10,
    retries: int = 3,
    max_bytes: int = 20_000_000,
    backoff_s: float = 0.5,
) -> RefreshResult:
    """Download an offerings CSV from `url` into the user cache.

    Args:
        url: http(s) URL of an offerings CSV; default $CCOPT_PRICES_URL.
        cache_dir: directory of the cache; default $CCOPT_CACHE_DIR or ~/.cache/ccopt.
        timeout_s: connect and read timeout per attempt, seconds.
        retries: extra attempts after the first, only on timeouts, connection errors and 5xx.
        max_bytes: largest body accepted, enforced while streaming.
        backoff_s: sleep before the first retry, doubled for each further retry, seconds.

    Returns:
        RefreshResult (status "updated" or "not_modified").

    Raises:
        RefreshError: any failure; the previous cache files are left byte-identical.
    """
    target = url or os.environ.get("CCOPT_PRICES_URL", "").strip()
    if not target:
        raise RefreshError("no price-table URL: pass --url URL or set CCOPT_PRICES_URL")
    if not target.startswith(("http://", "https://")):
        raise RefreshError(f"url: {target!r} is not an http(s) URL")
    directory = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    csv_path = directory / CACHE_FILE
    meta = read_meta(directory)
    headers = {"Accept": "text/csv, text/plain;q=0.9, */*;q=0.5"}
    if csv_path.is_file() and meta.get("url") == target:
        if meta.get("etag"):
            headers["If-None-Match"] = str(meta["etag"])
        if meta.get("last_modified"):
            headers["If-Modified-Since"] = str(meta["last_modified"])
    try:
        status, body, response_headers = _download(
            target, headers, timeout_s, retries, max_bytes, backoff_s
        )
        if status == 304:
            if not csv_path.is_file():
                raise RefreshError("server answered 304 Not Modified but there is no cached table")
            rows, as_of = _summary(csv_path, str(csv_path))
            return RefreshResult("not_modified", csv_path, target, rows, as_of, 0)
        return _install(directory, csv_path, target, body, response_headers)
    except RefreshError as exc:
        message = f"refresh from {target} failed: {exc}; keeping previous tables"
        raise RefreshError(message) from None


def _install(
    directory: Path, csv_path: Path, url: str, body: bytes, headers: dict[str, str]
) -> RefreshResult:
    """Validate `body` completely, then atomically replace the cached CSV and metadata."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RefreshError(f"cannot create cache directory {directory} ({exc.strerror})") from None
    try:
        tmp = _write_temp(csv_path, body)
    except OSError as exc:
        raise RefreshError(f"cannot write to {directory} ({exc.strerror or exc})") from None
    try:
        try:
            rows, as_of = _summary(Path(tmp), url)
        except CatalogError as exc:
            raise RefreshError(f"downloaded table is invalid: {exc}") from None
        lowered = {k.lower(): v for k, v in headers.items()}
        meta = {
            "url": url,
            "etag": lowered.get("etag"),
            "last_modified": lowered.get("last-modified"),
            "fetched_at": _utc_now_iso(),
            "sha256": hashlib.sha256(body).hexdigest(),
            "bytes": len(body),
            "rows": rows,
            "as_of": as_of,
        }
        try:
            os.replace(tmp, csv_path)
        except OSError as exc:
            raise RefreshError(f"cannot replace {csv_path} ({exc.strerror or exc})") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    try:
        _atomic_write(directory / META_FILE, json.dumps(meta, indent=2).encode())
    except OSError:  # the CSV is valid and in place; drop stale metadata so the next
        with contextlib.suppress(OSError):  # refresh is unconditional
            (directory / META_FILE).unlink()
    return RefreshResult("updated", csv_path, url, rows, as_of, len(body))
