"""A GPU type × precision × stack's efficiency curve fitted to measured runs (`ccopt calibrate`).

Model (least squares in log space over the n stored runs of one GPU × precision × stack):

    log(achieved efficiency) = a + b · log(size factor)

where the size factor is optimizer.model.efficiency.size_factor of the run (hidden/(hidden +
half) × 1/(1 + 256/tokens per micro-batch), ≤ 1) and the achieved efficiency is the fraction
of the dense peak that reproduces the measured step (the base efficiency `calibrate` bisects
for × that size factor). One run: b = 1, a = log(its base efficiency) — the uncalibrated
curve's shape scaled to the run, exact for it. Two or more runs of different sizes: ordinary
least squares for a and b (exact for two), b clamped to SIZE_EXPONENT_RANGE. The level
exp(a) is the efficiency at size factor 1, so it bounds every layout's (b ≥ 0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "CalibratedCurve",
    "fit_curve",
    "SIZE_EXPONENT_RANGE",
    "MIN_LOG_SIZE_SPREAD",
    "CURVE_MODEL",
]

#: GUESS: the fitted exponent b of the size factor stays in [0, 3]: 0 = efficiency does not
#: depend on size, 1 = the model's own size curve, 3 = three times as steep (no published
#: sweep of tensor-core efficiency over matmul size is steeper: stas00/ml-engineering MAMF)
SIZE_EXPONENT_RANGE = (0.0, 3.0)
#: GUESS: runs whose log size factors spread less than this (1%) cannot tell the slope:
#: b stays 1 and a is the mean of log base efficiency (a geometric mean)
MIN_LOG_SIZE_SPREAD = 0.01
#: the fitted model in words (output and docs)
CURVE_MODEL = "log(efficiency) = a + b·log(size factor), least squares over the stored runs"


@dataclass(frozen=True)
class CalibratedCurve:
    """Achieved efficiency = min(1, level × size_factor ** size_exponent), from `points` runs."""

    level: float
    size_exponent: float = 1.0
    points: int = 1

    def efficiency(self, size: float) -> float:
        """The achieved fraction of the dense peak of a layout with size factor `size`."""
        return min(1.0, self.level * size**self.size_exponent)


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
        b = min(max(b, SIZE_EXPONENT_RANGE[0]), SIZE_EXPONENT_RANGE[1])
    a = my - b * mx  # least squares of a for the (clamped) b
    return CalibratedCurve(level=math.exp(a), size_exponent=b, points=n)
