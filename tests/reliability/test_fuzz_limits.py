"""Fuzzing the limits of issue 29 items 4 and 5 on fast in-process paths, EXAMPLES (≥ 500)
derandomized examples per family:

* solver scale — any float through the cents/seconds conversions: an integer within 2^40 or a
  ScaleError (exit 2), never a wrapped or unbounded integer;
* price overlays — `[[prices]]` / `[[rows]]` numbers (huge, tiny, NaN, negative, giant
  integers) in a prices file: a ConfigError naming the file and the field, or prices within
  the stated caps;
* price tables — the bundled rows in many regions with one field replaced by a hostile value,
  streamed with a random reduction threshold: a CatalogError naming the file and row, or
  exactly the cheapest KEEP_REGIONS rows of each machine (checked against the whole table);
* refresh redirects — a local server redirecting to any target (malformed, other schemes,
  non-ASCII, loops, any path bytes): one RefreshError line, never another exception or a
  hang, and the cache byte-identical;
* SkyPilot catalog files — any vms.csv (columns missing, hostile values, non-ASCII): a
  converted table or one RefreshError line, never another exception;
* refresh metadata — any ETag / Last-Modified bytes from a server or text in a hand-edited
  meta file: kept and sent back only when requests can send it (the round trip through a
  real server is tests/reliability/test_refresh_redirects.py).
"""

from __future__ import annotations

import csv
import io
import math
import shutil
import tempfile
from pathlib import Path

import pytest
import requests
from hypothesis import given
from hypothesis import strategies as st

from optimizer.errors import CatalogError, ConfigError, RefreshError
from optimizer.inputs.jobs.limits import MAX_GPUS_PER_INSTANCE, MAX_INSTANCES, MAX_USD_PER_GPU_HOUR
from optimizer.inputs.jobs.pricing import load_overlay
from optimizer.pricing.catalog import bundled_path
from optimizer.pricing.refresh import MAX_HEADER_CHARS, header_safe, refresh_prices
from optimizer.pricing.schema import KEEP_REGIONS, OfferingRow, stream_rows
from optimizer.pricing.skypilot import CATALOG_VERSIONS, REQUIRED_COLUMNS, convert
from optimizer.solve.cpsat.scale import (
    MAX_SOLVER_INT,
    ScaleError,
    budget_cents,
    deadline_seconds,
    to_cents,
    to_seconds,
)
from tests.reliability.refresh_support import RawServer, snapshot
from tests.reliability.test_fuzz import FUZZ

HEADER, *ROWS = bundled_path().read_text(encoding="utf-8").splitlines(keepends=True)
FIELDS = next(csv.reader([HEADER]))
HUGE = st.sampled_from(
    ["1e300", "1e15", "9" * 40, "-1", "0", "nan", "inf", "-inf", "1e-320", "", " ", "1_000", "0x10", "2e2"]
)
NUMBER = st.one_of(
    HUGE,
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers(-(10**25), 10**25).map(str),
)


@FUZZ
@given(value=st.floats(allow_nan=True, allow_infinity=True), what=st.sampled_from(["cents", "seconds"]))
def test_fuzz_solver_scale(value: float, what: str) -> None:
    convert = to_cents if what == "cents" else to_seconds
    try:
        out = convert(value)
    except ScaleError as exc:
        assert "2^40" in str(exc) and "\n" not in str(exc)
        assert (
            not math.isfinite(value)
            or abs(value) * (100 if what == "cents" else 3600) > MAX_SOLVER_INT * 0.999
        )
    else:
        assert isinstance(out, int) and abs(out) <= MAX_SOLVER_INT
    if math.isfinite(value) and value >= 0:  # a limit above the scale is the scale, never more
        assert 0 <= budget_cents(value) <= MAX_SOLVER_INT and 0 <= deadline_seconds(value) <= MAX_SOLVER_INT


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return tmp_path


@FUZZ
@given(
    kind=st.sampled_from(["prices-gpu", "prices-instance", "rows"]),
    field=st.sampled_from(["usd_per_hour", "usd_per_gpu_hour", "max_instances", "gpus_per_instance"]),
    value=NUMBER,
)
def test_fuzz_overlay_numbers(work: Path, kind: str, field: str, value: str) -> None:
    if kind == "rows":
        base = {"provider": '"me"', "instance": '"box"', "gpu": '"H100"', "gpus_per_instance": "8"}
        section = "[[rows]]"
    elif kind == "prices-gpu":
        base, section = {"gpu": '"H100"'}, "[[prices]]"
    else:
        base, section = {"provider": '"aws"', "instance": '"p5.48xlarge"'}, "[[prices]]"
    entry = dict(base)
    if field not in ("usd_per_hour", "usd_per_gpu_hour"):
        entry["usd_per_gpu_hour"] = "2.0"
    entry[field] = value if value.strip() else '""'
    path = Path(tempfile.mkstemp(suffix=".toml", dir=work)[1])
    path.write_text(section + "\n" + "".join(f"{k} = {v}\n" for k, v in entry.items()))
    try:
        overlay = load_overlay(path)
    except ConfigError as exc:
        text = str(exc)
        assert "\n" not in text and str(path) in text, text
        return
    finally:
        path.unlink()
    for item in (*overlay.prices, *overlay.rows):
        if item.usd_per_gpu_hour is not None:
            assert 0 < item.usd_per_gpu_hour <= MAX_USD_PER_GPU_HOUR
        if item.usd_per_hour is not None:
            assert 0 < item.usd_per_hour <= MAX_USD_PER_GPU_HOUR * MAX_GPUS_PER_INSTANCE
    for row in overlay.rows:
        assert row.max_instances is None or 1 <= row.max_instances <= MAX_INSTANCES


_PER_REGION = {"region", "usd_per_hour", "usd_per_gpu_hour", "as_of", "source"}


def _machine(row: OfferingRow) -> tuple[object, ...]:
    return tuple(v for k, v in row.model_dump().items() if k not in _PER_REGION)


@FUZZ
@given(
    rows=st.lists(st.sampled_from(range(len(ROWS))), min_size=1, max_size=4, unique=True),
    regions=st.integers(1, 12),
    threshold=st.integers(1, 40),
    field=st.sampled_from(FIELDS),
    value=st.one_of(NUMBER, st.text(max_size=20), st.just("x" * 5000)),
    at=st.integers(0, 100),
    prices=st.lists(st.sampled_from([1.0, 2.0, 3.0, 5.0, 8.0]), min_size=12, max_size=12),
)
def test_fuzz_price_tables(
    rows: list[int], regions: int, threshold: int, field: str, value: str, at: int, prices: list[float]
) -> None:
    records = []
    for i in rows:
        base = next(csv.DictReader(io.StringIO(HEADER + ROWS[i])))
        gpus = int(base["gpus_per_instance"])
        for k in range(regions):
            usd = prices[k] * gpus
            records.append({**base, "region": f"z{k}", "usd_per_hour": usd, "usd_per_gpu_hour": usd / gpus})
    records[at % len(records)][field] = value  # one hostile field
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    lines = out.getvalue().splitlines(keepends=True)
    try:
        whole = stream_rows(lines, "t.csv").rows
    except CatalogError as exc:
        assert str(exc).startswith("t.csv: row ") and "\n" not in str(exc), exc
        with pytest.raises(CatalogError, match=str(exc).split(":")[1]):  # the same row, reduced or not
            stream_rows(lines, "t.csv", reduce_over=threshold)
        return
    table = stream_rows(lines, "t.csv", reduce_over=threshold)
    assert table.read == len(whole)
    if len(whole) <= threshold:
        assert table.rows == tuple(whole)
        return
    want: dict[tuple[object, ...], list[tuple[float, str]]] = {}
    for row in whole:
        want.setdefault(_machine(row), []).append((row.usd_per_hour, row.region))
    got: dict[tuple[object, ...], list[tuple[float, str]]] = {}
    for row in table.rows:
        got.setdefault(_machine(row), []).append((row.usd_per_hour, row.region))
    assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v)[:KEEP_REGIONS] for k, v in want.items()}


HEADER_BYTES = st.one_of(
    st.binary(max_size=60),
    st.text(max_size=40).map(lambda t: t.encode("utf-8")),
    st.sampled_from(
        [b"\xc3\xa9t\xc3\xa9", b"\xff\xfe", b'W/"x"', b"x" * 5000, b"\x00\x01", b"a\r\nX-Evil: 1", b""]
    ),
)
TARGET = st.one_of(
    st.sampled_from(
        [
            b"http://[::1",
            b"http://",
            b"ftp://127.0.0.1/x",
            b"file:///etc/passwd",
            b"//",
            b"/loop",
            b"http://127.0.0.1:1/",
            b"http://127.0.0.1:99999/",
            b"http://127.0.0.1:1/\xff\xfe",
            b"javascript:x",
            b"%zz",
            b"/" + b"a" * 10000,
        ]
    ),
    # path-only targets (no host name to look up: no network)
    st.binary(max_size=40).map(lambda b: b"/" + b.replace(b"\r", b"").replace(b"\n", b"").lstrip(b"/")),
)


@FUZZ
@given(target=TARGET)
def test_fuzz_refresh_redirect_targets(work: Path, raw: RawServer, target: bytes) -> None:
    """Every redirect ends in an answer or one RefreshError line; the cache is unchanged."""
    cache = Path(tempfile.mkdtemp(dir=work))
    try:
        (cache / "offerings.csv").write_bytes(BUNDLED_BYTES)
        raw.redirect("/loop", b"/loop")
        raw.redirect("/p.csv", target)
        before = snapshot(cache)
        with pytest.raises(RefreshError) as err:  # nothing on this server answers 200
            refresh_prices(url=raw.url("/p.csv"), cache_dir=cache, retries=0, deadline_s=5, timeout_s=2)
        assert "\n" not in str(err.value) and "keeping previous tables" in str(err.value)
        assert snapshot(cache) == before
    finally:
        shutil.rmtree(cache, ignore_errors=True)


@FUZZ
@given(value=HEADER_BYTES, source=st.sampled_from(["server", "meta file"]))
def test_fuzz_refresh_metadata(value: bytes, source: str) -> None:
    """An ETag / Last-Modified as a server sends it (bytes read as latin-1) or as a hand-edited
    meta file holds it (any text): what is kept or sent back is printable ASCII within
    MAX_HEADER_CHARS, which requests sends without an error; anything else is dropped."""
    text = value.decode("latin-1") if source == "server" else value.decode("utf-8", "replace")
    kept = header_safe(text)
    if kept is None:
        return
    assert kept == text and kept.isascii() and kept.isprintable() and len(kept) <= MAX_HEADER_CHARS
    request = requests.models.PreparedRequest()
    request.prepare_headers({"If-None-Match": kept, "If-Modified-Since": kept})
    assert request.headers["If-None-Match"] == kept


BUNDLED_BYTES = bundled_path().read_bytes()


CLOUD_VALUE = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        ["H100", "A100", "8", "0", "-1", "nan", "inf", "1e308", "caf\u00e9 \u2603", "x" * 3000, ""]
    ),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


@FUZZ
@given(
    cloud=st.sampled_from(sorted(CATALOG_VERSIONS)),
    drop=st.one_of(st.none(), st.sampled_from([*REQUIRED_COLUMNS, "AvailabilityZone"])),
    records=st.lists(st.lists(CLOUD_VALUE, min_size=11, max_size=11), min_size=0, max_size=4),
)
def test_fuzz_skypilot_catalog_files(
    work: Path, cloud: str, drop: str | None, records: list[list[str]]
) -> None:
    """Any vms.csv text (columns missing, hostile values, non-ASCII): converted reference rows
    (validated later with the table, as every download is) or one RefreshError line."""
    columns = [*REQUIRED_COLUMNS, "AvailabilityZone", "GpuInfo", "InstanceType2"]
    columns = [c for c in columns if c != drop]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for rec in records:
        writer.writerow(rec[: len(columns)])
    try:
        converted = convert({cloud: out.getvalue()}, "2026-12-04", {cloud: f"{cloud}/vms.csv"})
    except RefreshError as exc:
        assert "\n" not in str(exc)
        return
    for row in converted.rows:  # reference rows, validated with the table as every download is
        assert all(isinstance(v, str) for v in row.values()), row
