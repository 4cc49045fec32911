"""Fixtures shared by the planner tests: the bundled catalog rows (no_user_state: tests/conftest.py)."""

from __future__ import annotations

import pytest

from optimizer.pricing.catalog import load_offering_rows


@pytest.fixture(scope="session")
def rows():
    """The bundled price catalog as typed rows (offline: never the user's cache)."""
    return load_offering_rows(offline=True)[0]
