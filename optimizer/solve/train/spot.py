"""Wall time of a run on spot capacity: the interruption model (model/preemption.py) applied to
one offering and instance count, or the fixed extra wall time of the old rule."""

from __future__ import annotations

from optimizer.model.host import checkpoint_gb
from optimizer.model.preemption import Preemption, preemption
from optimizer.model.setup import PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.pricing.offering import Offering
from optimizer.units import GB, SECONDS_PER_HOUR

__all__ = ["spot_hours"]


def spot_hours(
    off: Offering, instances: int, work_h: float, model: ModelSpec, setup: TrainingSetup, a: PerfAssumptions
) -> tuple[float, Preemption | None]:
    """(expected wall hours, the interruption estimate or None) of `work_h` hours of training."""
    if off.pricing != "spot":
        return work_h, None
    if off.spot_interruptions_per_day is None:
        return work_h * (1.0 + off.spot_overhead), None
    p = preemption(
        work_h * SECONDS_PER_HOUR,
        instances,
        off.spot_interruptions_per_day,
        checkpoint_gb(model, setup, a) * GB,
        a.checkpoint_write_gb_s_per_instance,
        a.restart_s,
    )
    return p.expected_wall_s / SECONDS_PER_HOUR, p
