"""A plan at a stated confidence: a candidate's hours and cost at any quantile of its band.

Enumeration plans every row at the job's confidence q (hours = the model's hours × the band's
q multiplier, optimizer/model/bands.py). Here a row is re-read at another quantile — the
P10/P50/P90 figures of a plan, and the P50 plan shown beside a confident one — by the same
multiplier of its point hours (spot rows: the interruption overhead scales with the hours).
"""

from __future__ import annotations

from dataclasses import replace

from optimizer.model.bands import Band, profile_band
from optimizer.pricing.offering import cost_usd
from optimizer.solve.train.enumerate import Candidate

__all__ = [
    "band_of",
    "startup_hours",
    "conversion_hours",
    "fixed_hours",
    "point_hours",
    "hours_at",
    "at_confidence",
    "POINT_BAND",
]

#: the band of a row built without one (a hand-made candidate): the point prediction only
POINT_BAND = Band(1.0, 1.0, 1.0, cases=0, sources=0, basis="none")


def band_of(c: Candidate) -> Band:
    """The row's band: its own, else its step's stated interval, else the point alone."""
    if c.band is not None:
        return c.band
    return profile_band(c.step.interval) if c.step.interval else POINT_BAND


def startup_hours(c: Candidate) -> float:
    """The row's start-up hours, once at the beginning (model/goodput.py; 0 without a goodput)."""
    return c.goodput.startup_h if c.goodput is not None else 0.0


def conversion_hours(c: Candidate) -> float:
    """The row's final checkpoint conversion, once at the end (model/goodput.py)."""
    return c.goodput.conversion_h if c.goodput is not None else 0.0


def fixed_hours(c: Candidate) -> float:
    """The row's hours that do not depend on its speed: the start-up and the final conversion.
    No band scales them (enumeration multiplies the work hours alone, solve/train/scan.py
    `_add_row`)."""
    return startup_hours(c) + conversion_hours(c)


def point_hours(c: Candidate) -> float:
    """The row's hours at the model's point prediction (its band factor divided out of the
    running hours; the fixed hours unchanged)."""
    fixed = fixed_hours(c)
    return fixed + (c.hours - fixed) / c.band_factor


def hours_at(c: Candidate, q: float) -> float:
    """The row's hours at quantile `q` of its band."""
    fixed = fixed_hours(c)
    return fixed + (point_hours(c) - fixed) * band_of(c).multiplier(q)


def at_confidence(c: Candidate, q: float) -> Candidate | None:
    """`c` planned at quantile `q` instead (hours, cost, confidence); None when those hours
    overrun the row's reserved commitment (as enumeration drops such rows)."""
    factor = band_of(c).multiplier(q)
    hours = hours_at(c, q)
    off = c.offering
    if off.commitment_hours and hours > off.commitment_hours:
        return None
    cost = cost_usd(off, c.instances, hours)
    return replace(
        c,
        hours=hours,
        cost_usd=cost.total_usd,
        capital_usd=cost.capital_usd,
        confidence=q,
        band_factor=factor,
        goodput=None if c.goodput is None else c.goodput.scaled(factor / c.band_factor),
        figures=None,
    )
