"""`prices refresh` against misbehaving servers: bounded time, refused half tables, the cache
byte-identical on every failure, and every fallback stated."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from tests.reliability.refresh_support import BUNDLED, snapshot


@pytest.fixture
def trickling_url() -> Iterator[str]:
    """A server on 127.0.0.1 that sends HTTP headers, then one body byte every 0.5 s."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def serve_one(conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/csv\r\nContent-Length: 100000\r\n\r\n")
            for byte in BUNDLED[:1000]:
                if stop.wait(0.5):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=serve_one, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/offerings.csv"
    stop.set()
    server.close()


def test_trickling_server_ends_within_the_deadline(ccopt, cache, trickling_url) -> None:
    before = snapshot(cache)
    start = time.monotonic()
    run = ccopt(
        "prices", "refresh", "--url", trickling_url, "--timeout-s", "5", "--deadline-s", "2", "--retries", "0"
    )
    elapsed = time.monotonic() - start
    assert run.code == 2, run.err
    assert "total deadline of 2 s" in run.err and "keeping previous tables" in run.err
    assert elapsed < 3.5  # the deadline, plus at most one 0.5 s trickle and start-up
    assert snapshot(cache) == before


def _serve(httpserver, body: bytes) -> str:
    httpserver.expect_request("/p.csv").respond_with_data(body, content_type="text/csv")
    return httpserver.url_for("/p.csv")


def _half_table() -> bytes:
    lines = BUNDLED.splitlines(keepends=True)
    return b"".join(lines[: 1 + (len(lines) - 1) // 2])  # header + half the rows, cut at a row


def test_half_table_is_refused_unless_allowed(ccopt, cache, httpserver) -> None:
    url = _serve(httpserver, _half_table())
    before = snapshot(cache)
    run = ccopt("prices", "refresh", "--url", url, "--retries", "0")
    assert run.code == 2 and run.err.count("\n") == 1, run.err
    assert "rows against 262 in the cached table" in run.err and "--allow-shrink" in run.err
    assert snapshot(cache) == before
    ok = ccopt("prices", "refresh", "--url", url, "--retries", "0", "--allow-shrink")
    assert ok.code == 0, ok.err
    assert (cache / "offerings.csv").read_bytes() == _half_table()


def test_table_losing_a_provider_is_refused(ccopt, cache, httpserver) -> None:
    lines = BUNDLED.splitlines(keepends=True)
    header = lines[0].decode().strip().split(",")
    col = header.index("provider")
    kept = [ln for ln in lines[1:] if ln.decode().split(",")[col] != "oci"]
    assert len(kept) > 0.8 * (len(lines) - 1)  # few rows lost: only the provider rule fires
    url = _serve(httpserver, lines[0] + b"".join(kept))
    before = snapshot(cache)
    run = ccopt("prices", "refresh", "--url", url, "--retries", "0")
    assert run.code == 2 and "no rows of provider oci" in run.err, run.err
    assert snapshot(cache) == before


def test_corrupt_cache_fallback_is_stated(ccopt, cache, tmp_path) -> None:
    (cache / "offerings.csv").write_text("provider,junk\nx,y\n")
    job = tmp_path / "job.toml"
    job.write_text(
        '[model]\npreset = "llama-3-8b"\n[workload]\nkind = "lora"\ntokens = 1e8\n'
        "global_batch = 16\n[constraints]\ndeadline_days = 3\n"
    )
    run = ccopt("plan", str(job), "--json")
    assert run.code == 0, run.err
    catalog = json.loads(run.out)["catalog"]
    assert catalog["source"] == "bundled" and catalog["note"].startswith("ignored invalid cache")
    human = ccopt("plan", str(job))
    first = human.out.splitlines()[0]
    assert "(bundled); NOTE: ignored invalid cache" in first
