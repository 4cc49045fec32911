"""`refresh_prices` against a real HTTP server on 127.0.0.1; failures leave the cache intact."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from werkzeug import Request, Response

from optimizer.errors import ConfigError, RefreshError
from optimizer.pricing.catalog import load_catalog
from optimizer.pricing.refresh import META_FILE, refresh_prices

FAST = {"timeout_s": 2.0, "retries": 2, "backoff_s": 0.01}


@pytest.fixture
def body(tiny_rows, make_csv) -> bytes:
    return make_csv(tiny_rows).encode()


@pytest.fixture
def previous(isolated_env: Path, tiny_rows, make_csv) -> dict[str, bytes]:
    """A valid cache (2 rows) with metadata, as left by an earlier refresh; returns its bytes."""
    isolated_env.mkdir()
    (isolated_env / "offerings.csv").write_text(make_csv(tiny_rows[:2]), encoding="utf-8")
    (isolated_env / META_FILE).write_text(json.dumps({"url": "http://old.invalid/x.csv"}), encoding="utf-8")
    return _snapshot(isolated_env)


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_success_then_304(httpserver, isolated_env, body):
    httpserver.expect_ordered_request("/prices.csv").respond_with_data(
        body,
        content_type="text/csv",
        headers={"ETag": '"v1"', "Last-Modified": "Tue, 01 Dec 2026 00:00:00 GMT"},
    )
    httpserver.expect_ordered_request(
        "/prices.csv",
        headers={"If-None-Match": '"v1"', "If-Modified-Since": "Tue, 01 Dec 2026 00:00:00 GMT"},
    ).respond_with_data(b"", status=304)
    url = httpserver.url_for("/prices.csv")

    result = refresh_prices(url, **FAST)
    assert (result.status, result.rows, result.as_of, result.bytes) == ("updated", 3, "2026-12-01", len(body))
    assert (isolated_env / "offerings.csv").read_bytes() == body
    meta = json.loads((isolated_env / META_FILE).read_text())
    assert (meta["url"], meta["etag"], meta["rows"]) == (url, '"v1"', 3)
    assert load_catalog().source == "cache"

    before = _snapshot(isolated_env)
    again = refresh_prices(url, **FAST)
    assert (again.status, again.rows) == ("not_modified", 3)
    assert _snapshot(isolated_env) == before
    httpserver.check_assertions()


def test_server_error_after_retries(httpserver, isolated_env, previous):
    httpserver.expect_request("/prices.csv").respond_with_data("boom", status=500)
    with pytest.raises(RefreshError) as info:
        refresh_prices(httpserver.url_for("/prices.csv"), **FAST)
    assert "HTTP 500" in str(info.value) and "(3 attempts)" in str(info.value)
    assert "keeping previous tables" in str(info.value)
    assert len(httpserver.log) == 3  # first try + 2 retries
    assert _snapshot(isolated_env) == previous


def test_client_error_is_not_retried(httpserver, isolated_env, previous):
    httpserver.expect_request("/prices.csv").respond_with_data("no", status=404)
    with pytest.raises(RefreshError, match="HTTP 404"):
        refresh_prices(httpserver.url_for("/prices.csv"), **FAST)
    assert len(httpserver.log) == 1
    assert _snapshot(isolated_env) == previous


def test_timeout(httpserver, isolated_env, previous, body):
    def slow(request: Request) -> Response:
        time.sleep(0.4)
        return Response(body, content_type="text/csv")

    httpserver.expect_request("/prices.csv").respond_with_handler(slow)
    started = time.monotonic()
    with pytest.raises(RefreshError, match=r"timed out after 0.1 s \(2 attempts\)"):
        refresh_prices(httpserver.url_for("/prices.csv"), timeout_s=0.1, retries=1, backoff_s=0.01)
    assert time.monotonic() - started < 2.0
    assert _snapshot(isolated_env) == previous


def test_truncated_body(httpserver, isolated_env, previous, body):
    def short(request: Request) -> Response:
        response = Response(body[: len(body) // 2], content_type="text/csv")
        response.headers["Content-Length"] = str(len(body))  # promises more than it sends
        return response

    httpserver.expect_request("/prices.csv").respond_with_handler(short)
    with pytest.raises(RefreshError, match=r"truncated body: got \d+ of \d+ bytes"):
        refresh_prices(httpserver.url_for("/prices.csv"), **FAST)
    assert _snapshot(isolated_env) == previous


def test_wrong_columns(httpserver, isolated_env, previous, tiny_rows, make_csv):
    renamed = make_csv(
        [dict(r, price=r["usd_per_hour"]) for r in tiny_rows],
        [c if c != "usd_per_hour" else "price" for c in tiny_rows[0]],
    )
    httpserver.expect_request("/prices.csv").respond_with_data(renamed, content_type="text/csv")
    url = httpserver.url_for("/prices.csv")
    with pytest.raises(RefreshError) as info:
        refresh_prices(url, **FAST)
    message = str(info.value)
    assert "downloaded table is invalid" in message
    assert f"{url}: row 1, column 'usd_per_hour': missing column" in message
    assert "\n" not in message
    assert _snapshot(isolated_env) == previous  # and no temp file left behind


def test_bad_row_in_download(httpserver, isolated_env, previous, tiny_rows, make_csv):
    tiny_rows[2]["usd_per_hour"] = "-1"
    httpserver.expect_request("/prices.csv").respond_with_data(make_csv(tiny_rows))
    with pytest.raises(RefreshError, match=r"row 4, column 'usd_per_hour'"):
        refresh_prices(httpserver.url_for("/prices.csv"), **FAST)
    assert _snapshot(isolated_env) == previous


def test_size_limit(httpserver, isolated_env, previous, body):
    httpserver.expect_request("/prices.csv").respond_with_data(body)
    with pytest.raises(RefreshError, match="exceeds the 100-byte limit"):
        refresh_prices(httpserver.url_for("/prices.csv"), max_bytes=100, **FAST)
    assert _snapshot(isolated_env) == previous


def test_connection_refused(isolated_env, previous):
    with pytest.raises(RefreshError, match=r"connection failed \(\[Errno \d+\] .*\(3 attempts\)"):
        refresh_prices("http://127.0.0.1:9/prices.csv", **FAST)  # port 9 (discard): closed
    assert _snapshot(isolated_env) == previous


def test_url_from_env_and_missing_url(httpserver, isolated_env, body, monkeypatch):
    # no URL: the SkyPilot catalog (conftest points it at a closed local port)
    with pytest.raises(
        RefreshError, match=r"^refresh from the SkyPilot catalog failed: http://127\.0\.0\.1:9/"
    ):
        refresh_prices(**FAST)
    with pytest.raises(ConfigError, match="--catalog-url: 'ftp://x' is not an http"):
        refresh_prices(catalog_url="ftp://x")
    with pytest.raises(ConfigError, match="--url and --catalog-url: give one"):
        refresh_prices("http://127.0.0.1:9/x.csv", catalog_url="http://127.0.0.1:9/c")
    with pytest.raises(ConfigError, match="not an http"):
        refresh_prices("ftp://example.invalid/x.csv")
    httpserver.expect_request("/env.csv").respond_with_data(body)
    monkeypatch.setenv("CCOPT_PRICES_URL", httpserver.url_for("/env.csv"))
    assert refresh_prices(**FAST).status == "updated"


def _refreshed(httpserver, body: bytes) -> str:
    httpserver.expect_ordered_request("/prices.csv").respond_with_data(
        body, content_type="text/csv", headers={"ETag": '"v1"'}
    )
    url = httpserver.url_for("/prices.csv")
    assert refresh_prices(url, **FAST).status == "updated"
    return url


def test_a_cache_edited_after_refresh_is_never_used(httpserver, isolated_env, body):
    url = _refreshed(httpserver, body)
    cached = isolated_env / "offerings.csv"
    # still a valid table, edited by hand: only the recorded SHA-256 can tell
    text = cached.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    lines.pop()  # drop the last offering: a valid, smaller table
    cached.write_text("".join(lines), encoding="utf-8")
    catalog = load_catalog()
    assert catalog.source == "bundled"
    assert "ignored invalid cache" in catalog.note and "SHA-256" in catalog.note
    # and refresh asks for the whole file again (no If-None-Match for a damaged cache)
    httpserver.expect_ordered_request("/prices.csv").respond_with_data(body, content_type="text/csv")
    assert refresh_prices(url, **FAST).status == "updated"
    assert "If-None-Match" not in httpserver.log[-1][0].headers
    assert load_catalog().source == "cache"


def test_a_cache_whose_row_count_differs_from_its_metadata_is_never_used(httpserver, isolated_env, body):
    _refreshed(httpserver, body)
    meta_path = isolated_env / META_FILE
    meta = json.loads(meta_path.read_text())
    meta["rows"] = meta["rows"] + 1  # the checksum still matches: the count alone must catch it
    meta_path.write_text(json.dumps(meta))
    catalog = load_catalog()
    assert catalog.source == "bundled" and "rows read" in catalog.note
