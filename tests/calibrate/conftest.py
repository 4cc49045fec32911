"""Every calibration test runs isolated: its own calibration store, no price cache, offline."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated(isolated):
    """Every calibration test runs as `isolated` (tests/conftest.py)."""
