"""A GPU type × precision × stack's efficiency curve fitted to measured runs (`ccopt calibrate`).

Model (least squares in log space over the n stored runs of one GPU × precision × stack):

    log(achieved efficiency) = a + b · log(size factor)     for size factors the runs span,

where the size factor is optimizer.model.efficiency.size_factor of a run (hidden/(hidden +
half) × 1/(1 + 256/tokens per micro-batch), ≤ 1) and the achieved efficiency is the fraction
of the dense peak that reproduces the measured step (the base efficiency `calibrate` bisects
for × that size factor). Outside the span of the runs the model's own size curve (slope 1)
continues from the nearest end, so a fitted slope never extrapolates. One run: b = 1 and
a = log(its base efficiency): the uncalibrated curve's shape scaled to the run, exact for it.
Two runs of different sizes: the line through both (both exact). Three or more: ordinary
least squares.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["CalibratedCurve", "fit_curve", "MIN_LOG_SIZE_SPREAD", "CURVE_MODEL"]

#: GUESS: runs whose log size factors spread less than this (1%) cannot tell the slope:
#: b stays 1 and a is the mean of log base efficiency (a geometric mean)
MIN_LOG_SIZE_SPREAD = 0.01
#: the fitted model in words (output and docs)
CURVE_MODEL = (
    "log(efficiency) = a + b·log(size factor), least squares over the stored runs, within the "
    "size factors they span (outside: the model's own size curve from the nearest end)"
)


@dataclass(frozen=True)
class CalibratedCurve:
    """Achieved efficiency = level × size^size_exponent for sizes in [size_low, size_high]
    (the runs' span), × size/the nearest end outside it; never above 1. From `points` runs."""

    level: float
    size_exponent: float = 1.0
    points: int = 1
    size_low: float = 1.0
    size_high: float = 1.0

    def efficiency(self, size: float) -> float:
        """The achieved fraction of the dense peak of a layout with size factor `size`."""
        end = min(max(size, self.size_low), self.size_high)
        return min(1.0, self.level * end**self.size_exponent * size / end)

    @property
    def base(self) -> float:
        """The efficiency before the size factor: the curve at size factor 1."""
        return min(1.0, self.efficiency(1.0))

    @property
    def ceiling(self) -> float:
        """The highest efficiency of any size factor in (0, 1] (an upper bound of every layout)."""
        return min(1.0, max(self.base, self.level * self.size_low**self.size_exponent))


def fit_curve(runs: Sequence[tuple[float, float]]) -> CalibratedCurve:
    """The curve through `runs` = [(size factor, base efficiency)] (see the module docstring).

    Raises ValueError when `runs` is empty or holds a value that is not a positive number.
    """
    if not runs:
        raise ValueError("fit_curve: no runs")
    if any(not (math.isfinite(s) and math.isfinite(e) and s > 0 and e > 0) for s, e in runs):
        raise ValueError(f"fit_curve: size factors and efficiencies must be > 0: {list(runs)}")
    xs = [math.log(s) for s, _ in runs]
    ys = [math.log(s * e) for s, e in runs]  # log achieved efficiency
    n = len(runs)
    mx, my = sum(xs) / n, sum(ys) / n
    if max(xs) - min(xs) < MIN_LOG_SIZE_SPREAD:
        b = 1.0
    else:
        b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
        b /= sum((x - mx) ** 2 for x in xs)
    a = my - b * mx
    sizes = [s for s, _ in runs]
    return CalibratedCurve(math.exp(a), b, n, min(sizes), max(sizes))
