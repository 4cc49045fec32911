"""The one place where floats become the integers CP-SAT needs, and the largest they may be.

Money is scaled to integer cents and time to integer seconds. Both are rounded up, so a plan
the solver accepts never violates a budget or a deadline by a rounding error.

Scale: every cost, duration, budget or deadline handed to the solver is at most
MAX_SOLVER_INT = 2^40 (cents: $10,995,116,277; seconds: 34,841 years). CP-SAT refuses a model
whose linear sums could pass int64 (2^63); with every coefficient ≤ 2^40, a sum over one-of-many
choices (each 0 or 1) stays below 2^63 up to 2^23 (8 million) rows. The job-file ranges
(inputs/jobs/limits.py: budgets ≤ $10^10, ten years, prices ≤ $200 a GPU-hour, ≤ 10^6
instances) keep each input inside; a derived value past it (a plan costing more than
$1.1e10) is a ScaleError naming the value and the limit (exit 2), never a wrapped integer.
"""

from __future__ import annotations

import math

from optimizer.errors import ConfigError
from optimizer.units import CENTS_PER_USD, SECONDS_PER_HOUR

__all__ = [
    "CENTS_PER_USD",
    "MAX_SOLVER_INT",
    "MAX_SOLVER_USD",
    "MAX_SOLVER_HOURS",
    "ScaleError",
    "to_cents",
    "to_seconds",
    "within_scale",
    "from_cents",
    "budget_cents",
    "deadline_seconds",
]

#: the largest integer a cost (cents) or a duration (seconds) may be in a model (module doc)
MAX_SOLVER_INT = 2**40
MAX_SOLVER_USD = MAX_SOLVER_INT / CENTS_PER_USD
MAX_SOLVER_HOURS = MAX_SOLVER_INT / SECONDS_PER_HOUR


class ScaleError(ConfigError):
    """A cost or a duration beyond the solver's integer scale (bad input: exit 2)."""


def _checked(value: float, what: str, limit: float, unit: str) -> float:
    if not math.isfinite(value) or abs(value) > limit:
        raise ScaleError(
            f"{what} of {value:.6g} {unit} is beyond the solver's integer scale: at most {limit:,.0f} "
            f"{unit} (2^40 {'cents' if unit == 'USD' else 'seconds'}); the job is past the supported "
            "size (fewer tokens, a smaller model or lower prices)"
        )
    return value


def to_cents(usd: float, what: str = "a plan's cost") -> int:
    """Cost in integer cents, rounded up.

    Raises:
        ScaleError: `usd` is not finite or above MAX_SOLVER_USD.
    """
    _checked(usd, what, MAX_SOLVER_USD, "USD")
    return int(math.ceil(round(usd * CENTS_PER_USD, 6)))


def within_scale(usd: float, hours: float) -> bool:
    """Whether a row's cost and duration both fit the solver's integers (to_cents and
    to_seconds would not raise)."""
    # spelled out, not a generator over the pairs: the planners ask this of every row (~4x faster)
    return (
        math.isfinite(usd)
        and abs(usd) <= MAX_SOLVER_USD
        and math.isfinite(hours)
        and abs(hours) <= MAX_SOLVER_HOURS
    )


def from_cents(cents: int) -> float:
    return cents / CENTS_PER_USD


def to_seconds(hours: float, what: str = "a plan's duration") -> int:
    """Duration in integer seconds, rounded up.

    Raises:
        ScaleError: `hours` is not finite or above MAX_SOLVER_HOURS.
    """
    _checked(hours, what, MAX_SOLVER_HOURS, "hours")
    return int(math.ceil(round(hours * SECONDS_PER_HOUR, 6)))


def budget_cents(usd: float) -> int:
    """A budget limit in cents, rounded down (never allow more than the user said); a budget
    above the scale is the scale (every cost the model holds is within it: the same limit)."""
    return int(math.floor(round(min(usd, MAX_SOLVER_USD) * CENTS_PER_USD, 6)))


def deadline_seconds(hours: float) -> int:
    """A deadline in seconds, rounded down (a deadline above the scale is the scale)."""
    return int(math.floor(round(min(hours, MAX_SOLVER_HOURS) * SECONDS_PER_HOUR, 6)))
