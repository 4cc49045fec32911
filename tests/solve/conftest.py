"""Fixtures shared by the planner tests: the bundled catalog rows and an isolated user state."""

from __future__ import annotations

import pytest

from optimizer.pricing.catalog import load_offering_rows


@pytest.fixture(scope="session")
def rows():
    """The bundled price catalog as typed rows (offline: never the user's cache)."""
    return load_offering_rows(offline=True)[0]


@pytest.fixture
def no_user_state(monkeypatch, tmp_path):
    """No stored calibration and an empty price cache for this test."""
    monkeypatch.setenv("CCOPT_CALIBRATION", str(tmp_path / "none.json"))
    monkeypatch.setenv("CCOPT_CACHE_DIR", str(tmp_path / "cache"))
