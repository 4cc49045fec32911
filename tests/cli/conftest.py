"""Every CLI test runs isolated: no user calibration or price cache leaks in, and offline."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("CCOPT_CALIBRATION", str(tmp_path / "calibration.json"))
    monkeypatch.setenv("CCOPT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CCOPT_OFFLINE", "1")
