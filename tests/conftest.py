"""Fixtures shared by every test package."""

from __future__ import annotations

import pytest


@pytest.fixture
def no_user_state(monkeypatch, tmp_path):
    """No stored calibration and an empty price cache for this test."""
    monkeypatch.setenv("CCOPT_CALIBRATION", str(tmp_path / "none.json"))
    monkeypatch.setenv("CCOPT_CACHE_DIR", str(tmp_path / "cache"))
