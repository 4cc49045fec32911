"""A refresh must be complete and sane against the table in use (issue 47, files): an empty
--url is not "the default source", a body cut mid-row with no Content-Length is refused, and a
uniform price collapse (every price ÷ 1000) is refused unless --allow-shrink. Each failure is
one line, exit 2, and the cache stays byte-identical."""

from __future__ import annotations

import pandas as pd
import pytest

from optimizer.pricing.shrink import median_price_ratio
from tests.reliability.refresh_support import BUNDLED, snapshot


def _raw_csv(body: bytes, with_length: bool) -> bytes:
    length = f"Content-Length: {len(body)}\r\n".encode() if with_length else b""
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/csv\r\n" + length + b"Connection: close\r\n\r\n" + body


@pytest.mark.parametrize("flag", ["--url", "--catalog-url"])
def test_an_empty_url_is_bad_input_not_the_default_source(ccopt, cache, flag) -> None:
    before = snapshot(cache)
    run = ccopt("prices", "refresh", flag, "")
    assert (
        run.code == 2
        and run.err.strip() == f"error: {flag}: empty; allowed: an http(s) URL (or leave {flag} out)"
    )
    assert snapshot(cache) == before


def test_a_body_cut_mid_row_without_content_length_is_refused(ccopt, cache, raw) -> None:
    cut = BUNDLED[: len(BUNDLED) - 40]  # the last row loses its tail (its source column)
    assert not cut.endswith(b"\n")
    raw.routes["/p.csv"] = _raw_csv(cut, with_length=False)
    before = snapshot(cache)
    run = ccopt("prices", "refresh", "--url", raw.url("/p.csv"), "--retries", "0", "--allow-shrink")
    assert run.code == 2, run.err
    assert "ended mid-line" in run.err and "keeping previous tables" in run.err and run.err.count("\n") == 1
    assert snapshot(cache) == before


def test_a_whole_table_without_content_length_is_accepted(ccopt, cache, raw) -> None:
    raw.routes["/p.csv"] = _raw_csv(BUNDLED, with_length=False)
    run = ccopt("prices", "refresh", "--url", raw.url("/p.csv"), "--retries", "0")
    assert run.code == 0, run.err


def _scaled(factor: float) -> bytes:
    from io import BytesIO

    frame = pd.read_csv(BytesIO(BUNDLED), dtype=str, keep_default_na=False)
    for column in ("usd_per_hour", "usd_per_gpu_hour"):
        frame[column] = (frame[column].astype(float) * factor).map(lambda v: f"{v:.9g}")
    out = BytesIO()
    frame.to_csv(out, index=False)
    return out.getvalue()


def test_every_price_divided_by_1000_is_refused_and_accepted_with_consent(ccopt, cache, raw) -> None:
    raw.routes["/p.csv"] = _raw_csv(_scaled(0.001), with_length=True)
    before = snapshot(cache)
    run = ccopt("prices", "refresh", "--url", raw.url("/p.csv"), "--retries", "0")
    assert run.code == 2 and "prices 0.001× those of the cached table" in run.err, run.err
    assert snapshot(cache) == before
    agreed = ccopt("prices", "refresh", "--url", raw.url("/p.csv"), "--retries", "0", "--allow-shrink")
    assert agreed.code == 0, agreed.err


def test_the_median_price_ratio_by_hand() -> None:
    key = {"provider": ["a", "a", "b"], "instance_type": ["x", "y", "z"], "region": ["r"] * 3}
    old = pd.DataFrame({**key, "pricing_model": ["on_demand"] * 3, "usd_per_hour": [10.0, 20.0, 40.0]})
    new = old.assign(usd_per_hour=[11.0, 10.0, 40.0])  # ratios 1.1, 0.5, 1.0: median 1.0
    assert median_price_ratio(old, new) == pytest.approx(1.0)
    assert median_price_ratio(old, new.assign(provider="c")) is None  # nothing in common
