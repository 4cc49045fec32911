"""The batch time grid: integer steps of a fixed number of minutes (the one place batch times are scaled)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from optimizer.units import MINUTES_PER_HOUR

__all__ = ["TIME_UNITS_MINUTES", "MAX_TIME_STEPS", "TimeGrid", "choose_time_grid"]

#: grid steps tried, finest first (minutes); the first giving ≤ MAX_TIME_STEPS steps is used
TIME_UNITS_MINUTES = (1, 5, 10, 15, 30, 60, 120, 180, 240, 360, 720, 1440)
#: CHOICE: at most 1500 steps over the horizon (a 30-day horizon → 30-min steps, 1440 steps).
#: CP-SAT propagates cumulatives over these domains; the CP-SAT primer shows solve times
#: exploding when time is scaled much finer. Cost of the coarseness, stated: every duration is
#: rounded up (a job may be booked < 1 step longer than it runs), releases rounded up and
#: deadlines rounded down, so a plan on the grid is always feasible in continuous time.
MAX_TIME_STEPS = 1500


@dataclass(frozen=True)
class TimeGrid:
    """Integer time steps of `unit_h` hours."""

    unit_h: float

    def up(self, hours: float) -> int:
        """Steps covering `hours` (durations, release times), rounded up."""
        return int(math.ceil(round(hours / self.unit_h, 6)))

    def down(self, hours: float) -> int:
        """Whole steps within `hours` (deadlines, horizon), rounded down."""
        return int(math.floor(round(hours / self.unit_h, 6)))

    def hours(self, steps: int) -> float:
        """Hours of `steps` grid steps."""
        return steps * self.unit_h


def choose_time_grid(horizon_h: float, max_steps: int = MAX_TIME_STEPS) -> TimeGrid:
    """The finest step of TIME_UNITS_MINUTES with ≤ `max_steps` steps over the horizon.

    Args:
        horizon_h: planning horizon, hours.
        max_steps: most grid steps allowed over the horizon.

    Returns:
        The grid; whole hours per step when even a day per step gives too many steps.
    """
    for minutes in TIME_UNITS_MINUTES:
        if horizon_h * MINUTES_PER_HOUR / minutes <= max_steps:
            return TimeGrid(minutes / MINUTES_PER_HOUR)
    return TimeGrid(math.ceil(horizon_h / max_steps))
