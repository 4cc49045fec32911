"""Fixtures for pricing tests: an isolated cache dir and a tiny valid offerings CSV."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from optimizer.pricing.catalog import COLUMNS

#: three offerings; numbers picked by hand (usd_per_gpu_hour = usd_per_hour / gpus)
TINY_ROWS = [
    {
        "provider": "aws",
        "instance_type": "p5.48xlarge",
        "region": "us-east-1",
        "gpu_id": "H100-80GB",
        "gpus_per_instance": "8",
        "vcpus": "192",
        "ram_gib": "2048",
        "intra_node_link": "nvlink",
        "intra_node_bw_gb_s": "450",
        "inter_node_gbps": "3200",
        "inter_node_kind": "efa",
        "inter_node_is_default": "false",
        "max_instances": "",
        "pricing_model": "on_demand",
        "usd_per_hour": "40",
        "usd_per_gpu_hour": "5",
        "commitment_hours": "0",
        "derived": "false",
        "as_of": "2026-11-30",
        "source": "test",
    },
    {
        "provider": "aws",
        "instance_type": "p5.48xlarge",
        "region": "us-east-1",
        "gpu_id": "H100-80GB",
        "gpus_per_instance": "8",
        "vcpus": "192",
        "ram_gib": "2048",
        "intra_node_link": "nvlink",
        "intra_node_bw_gb_s": "450",
        "inter_node_gbps": "3200",
        "inter_node_kind": "efa",
        "inter_node_is_default": "false",
        "max_instances": "",
        "pricing_model": "reserved_1y",
        "usd_per_hour": "24",
        "usd_per_gpu_hour": "3",
        "commitment_hours": "8760",
        "derived": "true",
        "as_of": "2026-11-30",
        "source": "test",
    },
    {
        "provider": "vast",
        "instance_type": "8x-RTX_4090",
        "region": "somewhere",
        "gpu_id": "RTX4090",
        "gpus_per_instance": "8",
        "vcpus": "32",
        "ram_gib": "64",
        "intra_node_link": "pcie",
        "intra_node_bw_gb_s": "31",
        "inter_node_gbps": "10",
        "inter_node_kind": "ethernet",
        "inter_node_is_default": "true",
        "max_instances": "2",
        "pricing_model": "on_demand",
        "usd_per_hour": "2.8",
        "usd_per_gpu_hour": "0.35",
        "commitment_hours": "0",
        "derived": "false",
        "as_of": "2026-12-01",
        "source": "test",
    },
]


def csv_text(rows: list[dict[str, str]], columns: list[str] | None = None) -> str:
    """CSV text of `rows` with `columns` (default: the catalog columns)."""
    out = io.StringIO()
    writer = csv.DictWriter(
        out, fieldnames=columns or list(COLUMNS), lineterminator="\n", extrasaction="ignore"
    )
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the user cache at an empty temp dir and clear the pricing env vars."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("CCOPT_CACHE_DIR", str(cache))
    monkeypatch.delenv("CCOPT_OFFLINE", raising=False)
    monkeypatch.delenv("CCOPT_PRICES_URL", raising=False)
    return cache


@pytest.fixture
def tiny_csv(tmp_path: Path) -> Path:
    """A valid three-row offerings CSV."""
    path = tmp_path / "tiny.csv"
    path.write_text(csv_text(TINY_ROWS), encoding="utf-8")
    return path


@pytest.fixture
def tiny_rows() -> list[dict[str, str]]:
    """A fresh copy of the three tiny rows (tests mutate it)."""
    return [dict(r) for r in TINY_ROWS]


@pytest.fixture
def make_csv():
    """The csv_text helper, as a fixture (test modules do not import conftest)."""
    return csv_text


@pytest.fixture(scope="session")
def httpserver_listen_address() -> tuple[str, int]:
    """pytest-httpserver on 127.0.0.1 (not 'localhost'), any free port."""
    return ("127.0.0.1", 0)
