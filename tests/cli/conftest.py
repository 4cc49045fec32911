"""Every CLI test runs isolated: no user calibration or price cache leaks in, and offline."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated(isolated):
    """Every CLI test runs as `isolated` (tests/conftest.py)."""
