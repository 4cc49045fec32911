"""`prices refresh` against servers that redirect badly or send odd metadata (issue 29 item 4):
a redirect to a malformed URL, to another scheme, in a loop, or to a non-ASCII target; ETag and
Last-Modified headers with non-ASCII bytes, control characters or 10 kB of garbage. Each is exit
0 (the table is fine: odd metadata is dropped) or exit 2 with one line, never exit 3, and a
failure leaves the cache byte-identical."""

from __future__ import annotations

import json

import pytest
from werkzeug import Response

from optimizer.pricing.cache_meta import META_FILE
from tests.reliability.refresh_support import BUNDLED, snapshot


@pytest.mark.parametrize(
    "location",
    [
        b"http://[::1",  # malformed: an unclosed IPv6 literal
        b"http://127.0.0.1:99999/x.csv",  # port out of range
        b"ftp://127.0.0.1/offerings.csv",  # another scheme
        b"file:///etc/passwd",
        b"javascript:alert(1)",
        b"http://\xc3\xa9\xff.invalid/x.csv",  # non-ASCII host
        b"http://",
        b"http://127.0.0.1:1/\xff\xfe",  # nothing listens there; a non-ASCII path
    ],
)
def test_bad_redirect_target_is_one_line_and_keeps_the_cache(ccopt, cache, raw, location) -> None:
    raw.redirect("/p.csv", location)
    before = snapshot(cache)
    run = ccopt("prices", "refresh", "--url", raw.url("/p.csv"), "--retries", "0", "--deadline-s", "10")
    assert run.code == 2, (run.code, run.err)
    assert run.err.count("\n") == 1 and "keeping previous tables" in run.err, run.err
    assert snapshot(cache) == before


def test_redirect_loop_is_one_line_and_keeps_the_cache(ccopt, cache, raw) -> None:
    raw.redirect("/a.csv", b"/b.csv")
    raw.redirect("/b.csv", b"/a.csv")
    before = snapshot(cache)
    run = ccopt("prices", "refresh", "--url", raw.url("/a.csv"), "--retries", "0")
    assert run.code == 2 and run.err.count("\n") == 1 and "redirect" in run.err.lower(), run.err
    assert snapshot(cache) == before


GARBAGE = [
    'W/"caf\xe9-\xff\xfe"',  # latin-1 bytes a server may send
    '"\u20ac\u2603"',  # characters outside latin-1 (only a hand-edited file has them)
    "x" * 10_000,
    '"a\x01b\x7f"',
    "",
]


@pytest.mark.parametrize("value", GARBAGE)
def test_odd_metadata_from_the_server_or_the_meta_file_never_breaks_a_refresh(
    ccopt, cache, httpserver, value
) -> None:
    """The first refresh stores what the server sent, as far as it can be sent back; the
    second sends only header-safe values (or none) and gets the table again."""
    url = httpserver.url_for("/p.csv")
    latin = value.encode("latin-1", "replace").decode("latin-1")
    headers = {"ETag": latin, "Last-Modified": latin} if value else {}
    httpserver.expect_request("/p.csv").respond_with_response(
        Response(BUNDLED, status=200, headers=headers, content_type="text/csv")
    )
    first = ccopt("prices", "refresh", "--url", url, "--retries", "0")
    assert first.code == 0, first.err
    meta_path = cache / META_FILE
    meta = json.loads(meta_path.read_text())
    for key in ("etag", "last_modified"):
        stored = meta.get(key)
        assert stored is None or (stored.isascii() and stored.isprintable() and len(stored) <= 1024), stored
    meta.update(etag=value, last_modified=value)  # a hand-edited (or older) meta file
    meta_path.write_text(json.dumps(meta))
    second = ccopt("prices", "refresh", "--url", url, "--retries", "0")
    assert second.code == 0, second.err
    assert (cache / "offerings.csv").read_bytes() == BUNDLED


def test_bad_redirect_of_the_skypilot_catalog_is_one_line(ccopt, cache, raw) -> None:
    raw.redirect("/aws/vms.csv", b"http://[::1")
    before = snapshot(cache)
    run = ccopt("prices", "refresh", "--catalog-url", raw.url("/"), "--retries", "0", "--deadline-s", "10")
    assert run.code == 2 and run.err.count("\n") == 1 and "keeping previous tables" in run.err, run.err
    assert snapshot(cache) == before


def test_a_redirect_from_https_to_http_is_refused() -> None:
    """The table would arrive unauthenticated: refused before the body is read."""
    from optimizer.errors import RefreshError
    from optimizer.pricing.download import _check_redirects

    class Response:
        url = "http://mirror.example/offerings.csv"

    with pytest.raises(RefreshError, match="refused a redirect from https"):
        _check_redirects("https://prices.example/offerings.csv", Response())
    _check_redirects("http://prices.example/offerings.csv", Response())  # http to http: fine


def test_an_http_hop_inside_a_redirect_chain_is_refused() -> None:
    """https → http → https: the final URL is https, but the request crossed plain http."""
    from optimizer.errors import RefreshError
    from optimizer.pricing.download import _check_redirects

    class Hop:
        def __init__(self, url: str) -> None:
            self.url = url

    class Response:
        url = "https://cdn.example/offerings.csv"
        # requests: history[0] is the first request, each later one the URL redirected to
        history = [Hop("https://prices.example/offerings.csv"), Hop("http://mirror.example/offerings.csv")]

    with pytest.raises(RefreshError, match="http://mirror.example"):
        _check_redirects("https://prices.example/offerings.csv", Response())
    Response.history = [Hop("https://prices.example/offerings.csv"), Hop("https://mirror.example/o.csv")]
    _check_redirects("https://prices.example/offerings.csv", Response())  # all https: fine
