"""What a seller's terms bill: minimum term, billing increment, longest block, node range.

A 1-Click Cluster billed by the week, a capacity block of 1 to 14 whole days or an instance billed
by the second are one `OfferingTerms` each; `billed_hours` turns the hours a job runs into the
hours the terms charge (rounded up to the increment, at least the minimum term), so the cost of
a candidate stays a number computed in Python before the solver sees it.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

__all__ = ["OfferingTerms", "NO_TERMS", "billed_hours", "fits_term", "block_start_fits"]

#: hours within this of an increment count as that increment (floating-point noise, ~0.4 ms)
_EPS_HOURS = 1e-7


@dataclass(frozen=True)
class OfferingTerms:
    """The billing terms of one offering (pricing_data/clusters.csv; none for a plain row)."""

    min_nodes: int = 1
    max_nodes: int | None = None
    min_term_hours: float = 0.0  # billed at least this long
    billing_increment_hours: float = 0.0  # hours rounded up to a multiple of this (0: not rounded)
    max_term_hours: float | None = None  # a block: the longest one sold (a job must fit in it)
    booking_horizon_days: int | None = None  # a block starts at most this many days ahead
    access: str = "self_serve"  # self_serve | quote
    source: str = ""  # where the terms are read (page)

    @property
    def is_block(self) -> bool:
        """A block of capacity paid in full for its length (AWS EC2 Capacity Blocks)."""
        return self.max_term_hours is not None

    @property
    def any(self) -> bool:
        """The terms change what a job pays (otherwise the plan line says nothing of them)."""
        return bool(self.min_term_hours or self.billing_increment_hours or self.is_block)

    def billed(self, hours: float) -> float:
        """`billed_hours` of these terms (for callers that may not import pricing: report/)."""
        return billed_hours(self, hours)

    def describe(self) -> str:
        """Terms in words, e.g. 'billed in 168 h increments, at least 168 h'."""
        parts = []
        if self.is_block:
            step, longest = self.billing_increment_hours, self.max_term_hours or 0.0
            parts.append(
                f"a capacity block in steps of {_h(step)}, up to {longest / 24:g} days, paid in full"
            )
        elif self.billing_increment_hours:
            parts.append(f"billed in steps of {_h(self.billing_increment_hours)}")
        if self.min_term_hours and not self.is_block:
            parts.append(f"at least {_h(self.min_term_hours)}")
        if self.min_nodes > 1:
            parts.append(f"at least {self.min_nodes} nodes")
        if not parts and self.source.startswith("not read"):
            return "terms not read"
        return ", ".join(parts) or "billed per hour used"


NO_TERMS = OfferingTerms()


def _h(hours: float) -> str:
    if hours and hours % 168 == 0:
        weeks = int(hours // 168)
        return f"{weeks} week" + ("s" if weeks > 1 else "")
    if hours and hours % 24 == 0:
        days = int(hours // 24)
        return f"{days} day" + ("s" if days > 1 else "")
    return f"{hours:g} h"


def billed_hours(terms: OfferingTerms, hours: float) -> float:
    """Hours the terms charge for a job of `hours`: rounded up to the billing increment, at
    least the minimum term (a 5.8-day job on weekly billing pays 7 days)."""
    billed = max(hours, 0.0)
    step = terms.billing_increment_hours
    if step > 0:
        billed = math.ceil(billed / step - _EPS_HOURS) * step
    return max(billed, terms.min_term_hours)


def fits_term(terms: OfferingTerms, hours: float) -> bool:
    """A job of `hours` fits the terms: no block, or a block at most the longest one sold."""
    return terms.max_term_hours is None or billed_hours(terms, hours) <= terms.max_term_hours + _EPS_HOURS


def block_start_fits(
    terms: OfferingTerms, start_after: dt.date | None, start_before: dt.date | None, today: dt.date
) -> bool:
    """A block can start inside the job's window: some day in [start_after, start_before] lies
    within [today, today + booking horizon] (no horizon: any day from today). Plain offerings
    (no block) always fit."""
    if not terms.is_block:
        return True
    first = max(today, start_after or today)
    horizon = today + dt.timedelta(days=terms.booking_horizon_days) if terms.booking_horizon_days else None
    last = start_before if horizon is None else min(horizon, start_before or horizon)
    return last is None or first <= last
