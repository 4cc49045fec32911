"""`prices refresh` without --url: the SkyPilot catalog's per-cloud vms.csv files, served from
127.0.0.1 (recorded copies in tests/pricing/data/skypilot, see its README), converted with the
code that built the bundled table; drift and partial failures keep the old tables."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import time
from pathlib import Path

import pytest
from werkzeug import Request, Response

from optimizer.errors import RefreshError
from optimizer.pricing.build_bundled import main as build_bundled_main
from optimizer.pricing.catalog import bundled_path, load_catalog_rows
from optimizer.pricing.refresh import refresh_prices
from optimizer.pricing.skypilot import CATALOG_VERSIONS, catalog_path

RECORDED = Path(__file__).parent / "data" / "skypilot"
READ_ON = dt.date(2026, 12, 2)
FAST = {"timeout_s": 2.0, "retries": 0, "backoff_s": 0.01, "today": READ_ON}


def _files() -> dict[str, bytes]:
    return {cloud: (RECORDED / catalog_path(cloud)).read_bytes() for cloud in CATALOG_VERSIONS}


def _serve(httpserver, files: dict[str, bytes], status: dict[str, int] | None = None) -> str:
    for cloud, body in files.items():
        code = (status or {}).get(cloud, 200)
        httpserver.expect_request(f"/catalogs/{catalog_path(cloud)}").respond_with_data(
            body if code == 200 else b"no", status=code, content_type="text/csv"
        )
    return httpserver.url_for("/catalogs")


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.fixture
def refreshed(httpserver, isolated_env) -> dict[str, bytes]:
    """A cache written by a successful catalog refresh; returns its files' bytes."""
    result = refresh_prices(catalog_url=_serve(httpserver, _files()), **FAST)
    assert (result.status, result.files) == ("updated", len(CATALOG_VERSIONS))
    httpserver.clear()
    return _snapshot(isolated_env)


def test_refresh_equals_the_bundled_build_of_the_same_files(refreshed, isolated_env, tmp_path):
    out = tmp_path / "built.csv"
    assert build_bundled_main(["--skypilot", str(RECORDED), READ_ON.isoformat(), str(out)]) == 0
    built = out.read_text(encoding="utf-8")
    cached = refreshed["offerings.csv"].decode()
    # the catalog's providers: the same rows, line for line, as the maintainer build
    catalog_part = [r for r in _rows(cached) if r["provider"] in CATALOG_VERSIONS]
    assert catalog_part == [r for r in _rows(built) if r["provider"] in CATALOG_VERSIONS]
    # providers the catalog does not carry (CoreWeave, and our own cluster table's Nebius,
    # Crusoe) keep the bundled rows unchanged, none repeated
    bundled = bundled_path().read_text(encoding="utf-8")
    others = sorted(
        (r for r in _rows(cached) if r["provider"] not in CATALOG_VERSIONS), key=lambda r: sorted(r.items())
    )
    assert others == sorted(
        (r for r in _rows(bundled) if r["provider"] not in CATALOG_VERSIONS), key=lambda r: sorted(r.items())
    )
    # the AWS capacity blocks of our own table are kept too (aws is a catalog provider)
    assert sum(r["pricing_model"] == "capacity_block" for r in _rows(cached)) == 3
    loaded = load_catalog_rows()
    # the newest row is our own table's Crusoe price, read 2026-12-05 (pricing_data/clusters.csv)
    assert loaded.age.source == "cache" and str(loaded.age.as_of) == "2026-12-05"


def test_converted_prices_match_the_hand_read_bundled_table(refreshed):
    """Every offering the bundled table has (read by hand from the same catalog files into the
    shared reference table) comes out of the converter with the same price, GPU and host."""
    bundled = {
        (r["provider"], r["instance_type"], r["pricing_model"]): r
        for r in _rows(bundled_path().read_text(encoding="utf-8"))
    }
    fresh = {
        (r["provider"], r["instance_type"], r["pricing_model"]): r
        for r in _rows(refreshed["offerings.csv"].decode())
    }
    columns = (
        "gpu_id",
        "gpus_per_instance",
        "vcpus",
        "ram_gib",
        "usd_per_hour",
        "usd_per_gpu_hour",
        "derived",
    )
    assert len(set(bundled) & set(fresh)) == len(bundled)  # nothing of the bundled table is lost
    for key, row in bundled.items():
        assert {c: fresh[key][c] for c in columns} == {c: row[c] for c in columns}, key
    # by hand: GCP a3-highgpu-8g = host row 9.46006 + 8xH100 row 78.37241 in us-east4 (the
    # us-central1 GPU row, 33.60609, is the known artefact and is not used)
    assert float(fresh[("gcp", "a3-highgpu-8g", "on_demand")]["usd_per_hour"]) == pytest.approx(87.83247)
    assert fresh[("gcp", "a3-highgpu-8g", "on_demand")]["region"] == "us-east4"
    # AWS spot = the lowest zone: g5.16xlarge zones 1.141 and 1.3117
    assert float(fresh[("aws", "g5.16xlarge", "spot")]["usd_per_hour"]) == 1.141
    # Azure's catalog says 12 GPUs for ND96isr_H100_v5 (8 in fact): 98.32 / 8 = 12.29 per GPU
    assert float(fresh[("azure", "Standard_ND96isr_H100_v5", "on_demand")]["usd_per_gpu_hour"]) == 12.29


def _drifted(files: dict[str, bytes], cloud: str, old: str, new: str | None) -> dict[str, bytes]:
    rows = list(csv.reader(io.StringIO(files[cloud].decode())))
    at = rows[0].index(old)
    for row in rows:
        if new is None:
            del row[at]
        elif row is rows[0]:
            row[at] = new
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return {**files, cloud: buf.getvalue().encode()}


@pytest.mark.parametrize(
    ("cloud", "old", "new"),
    [
        ("aws", "Price", "OnDemandPrice"),
        ("gcp", "SpotPrice", None),
        ("runpod", "AcceleratorCount", "GpuCount"),
    ],
)
def test_schema_drift_is_refused_in_one_line(httpserver, isolated_env, refreshed, cloud, old, new):
    base = _serve(httpserver, _drifted(_files(), cloud, old, new))
    with pytest.raises(RefreshError) as info:
        refresh_prices(catalog_url=base, **FAST)
    line = str(info.value)
    assert "\n" not in line
    assert f"{base}/{catalog_path(cloud)}: schema drift: column {old!r} is missing" in line
    assert line.endswith("keeping previous tables")
    assert _snapshot(isolated_env) == refreshed


@pytest.mark.parametrize(("cloud", "code"), [("azure", 404), ("vast", 503)])
def test_one_failed_file_keeps_the_old_tables(httpserver, isolated_env, refreshed, cloud, code):
    base = _serve(httpserver, _files(), status={cloud: code})
    with pytest.raises(RefreshError, match=rf"{base}/{catalog_path(cloud)}: HTTP {code}"):
        refresh_prices(catalog_url=base, **FAST)
    assert _snapshot(isolated_env) == refreshed


def test_a_provider_that_shrank_is_refused_per_file(httpserver, isolated_env, refreshed):
    # Lambda's file keeps its CPU rows and one GPU instance: its rows drop from 21 to 1 while
    # the whole table still has > 80 % of its rows (the per-file guard is what catches it)
    lines = _files()["lambda"].decode().splitlines(keepends=True)
    kept = [ln for ln in lines if not ln.startswith("gpu_") or ln.startswith("gpu_1x_a10,")]
    base = _serve(httpserver, {**_files(), "lambda": "".join(kept).encode()})
    with pytest.raises(
        RefreshError,
        match=r"1 rows against 21 in the cached table \(lambda rows from .*lambda/vms.csv\).*--allow-shrink",
    ):
        refresh_prices(catalog_url=base, **FAST)
    assert _snapshot(isolated_env) == refreshed
    refresh_prices(catalog_url=base, allow_shrink=True, **FAST)
    assert sum(r.provider == "lambda" for r in load_catalog_rows().rows) == 1


def test_the_deadline_is_per_file(httpserver, isolated_env, refreshed):
    files = _files()

    def slow(request: Request) -> Response:
        time.sleep(1.2)
        return Response(files["oci"], content_type="text/csv")

    for cloud, body in files.items():
        path = f"/catalogs/{catalog_path(cloud)}"
        if cloud == "oci":
            httpserver.expect_request(path).respond_with_handler(slow)
        else:
            httpserver.expect_request(path).respond_with_data(body)
    base = httpserver.url_for("/catalogs")
    with pytest.raises(RefreshError, match=rf"{base}/v8/oci/vms.csv: .*timed out"):
        refresh_prices(catalog_url=base, timeout_s=0.6, deadline_s=0.8, retries=0, today=READ_ON)
    assert _snapshot(isolated_env) == refreshed


def test_cli_refresh_from_the_catalog_then_prices_show_refreshed(httpserver, isolated_env):
    from typer.testing import CliRunner

    from optimizer.cli import app

    runner = CliRunner()
    base = _serve(httpserver, _files())
    done = runner.invoke(app, ["prices", "refresh", "--catalog-url", base, "--retries", "0"])
    assert done.exit_code == 0, done.stderr
    assert f"from the SkyPilot catalog at {base} ({len(CATALOG_VERSIONS)} files)" in done.stderr
    assert "catalog instances left out" in done.stderr  # OCI GB200/GB300/P100/RTX PRO: no network figure
    assert (
        "  left out: oci BM.GPU.GB200.4: no inter-node network figure in instance_network.csv" in done.stderr
    )
    assert "  left out: vast 2x-A40-32-65536: GPU 'A40' is not in the GPU catalog" in done.stderr
    listed = runner.invoke(app, ["prices", "--provider", "lambda", "--json"])
    rows = json.loads(listed.stdout)
    assert rows and {r["price_source"] for r in rows} == {"refreshed"}
