"""One bounded HTTP GET: per-read timeouts, a total deadline, bounded retries and a size cap.

The total deadline holds against a server that trickles bytes: the body is read with `read1`
(whatever has arrived), the deadline is checked after every read, and the socket's timeout is
lowered to the time left before each read, so no single read outlives the deadline.
"""

from __future__ import annotations

import contextlib
import re
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from optimizer.errors import RefreshError

__all__ = ["Deadline", "download"]

_CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True)
class Deadline:
    """A wall-clock limit on the whole refresh (time.monotonic based)."""

    total_s: float
    end: float

    @classmethod
    def after(cls, total_s: float) -> Deadline:
        return cls(total_s, time.monotonic() + total_s)

    def left_s(self) -> float:
        return self.end - time.monotonic()

    def check(self) -> None:
        """Raises RefreshError once the deadline has passed."""
        if self.left_s() <= 0:
            raise RefreshError(f"gave up after the total deadline of {self.total_s:g} s")

    def timeout(self, per_read_s: float) -> float:
        """The per-read timeout, cut to the time left (at least 1 ms)."""
        self.check()
        return max(0.001, min(per_read_s, self.left_s()))


def download(
    url: str,
    headers: dict[str, str],
    timeout_s: float,
    retries: int,
    max_bytes: int,
    backoff_s: float,
    deadline: Deadline,
) -> tuple[int, bytes, dict[str, str]]:
    """GET with bounded retries on timeouts, connection errors and 5xx; stream with a size cap.

    Returns (status, body, response headers); status 304 has an empty body.
    Raises:
        RefreshError: any failure, including the total deadline passing.
    """
    import requests  # lazy: only `prices refresh` talks HTTP; keeps start-up fast

    last = ""
    for attempt in range(retries + 1):
        if attempt:
            pause = backoff_s * 2 ** (attempt - 1)  # exponential backoff: b, 2b, 4b, ...
            if pause >= deadline.left_s():
                raise RefreshError(
                    f"{last}; no time left for a retry within the total deadline of {deadline.total_s:g} s"
                )
            time.sleep(pause)
        per_read = deadline.timeout(timeout_s)
        try:
            with requests.get(
                url, headers=headers, timeout=(per_read, per_read), stream=True, allow_redirects=True
            ) as response:
                _check_redirects(url, response)
                status = response.status_code
                if status >= 500:
                    last = f"HTTP {status} {response.reason or ''}".strip()
                    continue
                if status == 304:
                    return status, b"", dict(response.headers)
                if status != 200:
                    raise RefreshError(f"HTTP {status} {response.reason or ''}".strip())
                body = _read_body(response, max_bytes, timeout_s, deadline)
                _check_complete(body, response.headers)
                return status, body, dict(response.headers)
        except requests.Timeout:
            deadline.check()
            last = f"timed out after {per_read:g} s"
        except requests.exceptions.ChunkedEncodingError as exc:
            deadline.check()
            raise RefreshError(_truncated(exc)) from None
        except requests.ConnectionError as exc:
            deadline.check()
            if "timed out" in str(exc).lower():
                last = f"timed out after {per_read:g} s"
            else:
                errno = re.search(r"\[Errno -?\d+\] [^'\")]+", str(exc))
                last = f"connection failed ({errno.group(0) if errno else _short(exc)})"
        except requests.RequestException as exc:
            raise RefreshError(f"request failed ({_short(exc)})") from None
        except ValueError as exc:  # a malformed or non-ASCII redirect target (urllib's own errors)
            raise RefreshError(f"request failed (bad URL or redirect target: {_short(exc)})") from None
    tries = "attempt" if retries == 0 else "attempts"
    raise RefreshError(f"{last} ({retries + 1} {tries})")


def _check_complete(body: bytes, headers: Any) -> None:
    """A body without a Content-Length to check it against must end with a whole line: a
    connection closed mid-row would otherwise leave a cut last row that may still parse."""
    if body and "content-length" not in {k.lower() for k in headers} and not body.endswith(b"\n"):
        raise RefreshError(
            "the download ended mid-line and the server sent no Content-Length to check it "
            "against; refused as likely cut short"
        )


def _check_redirects(url: str, response: Any) -> None:
    """Refuse a redirect from https to plain http at any hop (the table, or the request that
    led to it, would travel unauthenticated; an https → http → https chain is refused too)."""
    if urlsplit(url).scheme.lower() != "https":
        return
    hops = [r.url for r in getattr(response, "history", ())[1:]] + [response.url]
    for hop in hops:
        if urlsplit(hop).scheme.lower() != "https":
            raise RefreshError(f"refused a redirect from https to {_short(Exception(hop))}")


def _socket(response: Any) -> Any:
    """The response's socket, or None (urllib3 2.x → http.client → socket.SocketIO)."""
    fp = getattr(getattr(response.raw, "_fp", None), "fp", None)
    return getattr(getattr(fp, "raw", fp), "_sock", None)


def _read_body(response: Any, max_bytes: int, timeout_s: float, deadline: Deadline) -> bytes:
    declared = response.headers.get("Content-Length")
    expected = int(declared) if declared and declared.isdigit() else None
    if expected is not None and expected > max_bytes:
        raise RefreshError(f"body of {expected} bytes exceeds the {max_bytes}-byte limit")
    chunks: list[bytes] = []
    size = 0
    sock = _socket(response)
    while True:
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.settimeout(deadline.timeout(timeout_s))
        deadline.check()
        chunk = _read1(response)
        if not chunk:
            break
        size += len(chunk)
        if size > max_bytes:
            raise RefreshError(f"body exceeds the {max_bytes}-byte limit")
        chunks.append(chunk)
    body = b"".join(chunks)
    encoded = response.headers.get("Content-Encoding", "identity").lower() != "identity"
    if expected is not None and not encoded and len(body) != expected:
        raise RefreshError(f"truncated body: got {len(body)} of {expected} bytes")
    return body


def _read1(response: Any) -> bytes:
    """What has arrived (up to a chunk), with urllib3's errors as the requests ones."""
    import requests  # lazy: see download()
    import urllib3  # lazy: requests' transport

    try:
        return bytes(response.raw.read1(_CHUNK_BYTES, decode_content=True))
    except (urllib3.exceptions.ReadTimeoutError, TimeoutError) as exc:
        raise requests.exceptions.ReadTimeout(str(exc)) from None
    except urllib3.exceptions.ProtocolError as exc:
        raise requests.exceptions.ChunkedEncodingError(str(exc)) from None
    except urllib3.exceptions.DecodeError as exc:
        raise requests.exceptions.ContentDecodingError(str(exc)) from None


def _truncated(exc: BaseException) -> str:
    match = re.search(r"IncompleteRead\((\d+) bytes read, (\d+) more expected", str(exc))
    if match:
        got, more = int(match.group(1)), int(match.group(2))
        return f"truncated body: got {got} of {got + more} bytes"
    return f"truncated body ({_short(exc)})"


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 160 else text[:157] + "..."
