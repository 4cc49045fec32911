"""The one place where floats become the integers CP-SAT needs.

Money is scaled to integer cents and time to integer seconds. Both are rounded up, so a plan
the solver accepts never violates a budget or a deadline by a rounding error. Totals stay well
inside int64 (a $1e9 plan is 1e11 cents; a year is 3.2e7 seconds).
"""

from __future__ import annotations

import math

from optimizer.units import CENTS_PER_USD, SECONDS_PER_HOUR

__all__ = ["CENTS_PER_USD", "to_cents", "to_seconds", "from_cents", "budget_cents", "deadline_seconds"]


def to_cents(usd: float) -> int:
    """Cost in integer cents, rounded up."""
    return int(math.ceil(round(usd * CENTS_PER_USD, 6)))


def from_cents(cents: int) -> float:
    return cents / CENTS_PER_USD


def to_seconds(hours: float) -> int:
    """Duration in integer seconds, rounded up."""
    return int(math.ceil(round(hours * SECONDS_PER_HOUR, 6)))


def budget_cents(usd: float) -> int:
    """A budget limit in cents, rounded down (never allow more than the user said)."""
    return int(math.floor(round(usd * CENTS_PER_USD, 6)))


def deadline_seconds(hours: float) -> int:
    """A deadline in seconds, rounded down."""
    return int(math.floor(round(hours * SECONDS_PER_HOUR, 6)))
