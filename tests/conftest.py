"""Fixtures shared by every test package."""

from __future__ import annotations

import pytest


@pytest.fixture
def no_user_state(monkeypatch, tmp_path):
    """No stored calibration and an empty price cache for this test."""
    monkeypatch.setenv("CCOPT_CALIBRATION", str(tmp_path / "none.json"))
    monkeypatch.setenv("CCOPT_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """A user with no stored calibration, an empty price cache, and offline (bundled prices):
    what the CLI and planner tests run as (`pytestmark = pytest.mark.usefixtures("isolated")`)."""
    monkeypatch.setenv("CCOPT_CALIBRATION", str(tmp_path / "calibration.json"))
    monkeypatch.setenv("CCOPT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CCOPT_OFFLINE", "1")


@pytest.fixture(autouse=True)
def no_outside_state(monkeypatch):
    """No test reaches the published SkyPilot catalog (a closed local port instead) or reads
    the developer's own price overlay (~/.config/ccopt/prices.toml)."""
    monkeypatch.setenv("CCOPT_SKYPILOT_URL", "http://127.0.0.1:9/catalogs")
    monkeypatch.setenv("CCOPT_PRICES_OVERLAY", "")


@pytest.fixture(autouse=True)
def fresh_rename_warnings():
    """Old-name warnings are once per process; each test starts as a new process would, so a
    test that expects the warning does not depend on which tests ran before it."""
    from optimizer.inputs import aliases

    aliases._warned.clear()
    yield
