"""Interrupted runs (spot capacity): the optimum checkpoint interval and the
expected wall time of a job that is preempted at random and restarts from its last checkpoint."""

from __future__ import annotations

import math
from dataclasses import dataclass

from optimizer.units import GB, GIB, HOURS_PER_DAY, SECONDS_PER_HOUR

SECONDS_PER_DAY = HOURS_PER_DAY * SECONDS_PER_HOUR

__all__ = ["young_interval_s", "daly_interval_s", "expected_wall_s", "Preemption", "preemption"]


def young_interval_s(write_s: float, mtbf_s: float) -> float:
    """First-order optimum compute time between checkpoints, sqrt(2·δ·M) (Young 1974)."""
    return math.sqrt(2.0 * write_s * mtbf_s)


def daly_interval_s(write_s: float, mtbf_s: float) -> float:
    """Higher-order optimum (Daly 2006, eq. 37): sqrt(2δM)·[1 + ⅓·sqrt(δ/2M) + (δ/2M)/9] − δ
    for δ < 2M, else M."""
    if write_s >= 2.0 * mtbf_s:
        return mtbf_s
    x = write_s / (2.0 * mtbf_s)
    return young_interval_s(write_s, mtbf_s) * (1 + math.sqrt(x) / 3 + x / 9) - write_s


def expected_wall_s(
    work_s: float, interval_s: float, write_s: float, restart_s: float, mtbf_s: float
) -> float:
    """Expected wall time of `work_s` of computation checkpointed every `interval_s` (writes of
    `write_s`), exponential failures of mean `mtbf_s`, `restart_s` per restart:
    T_w = M·e^(R/M)·(e^((τ+δ)/M) − 1)·T_s/τ (Daly 2006, eq. 13)."""
    m = mtbf_s
    return m * math.exp(restart_s / m) * math.expm1((interval_s + write_s) / m) * work_s / interval_s


@dataclass(frozen=True)
class Preemption:
    """What interruptions cost one run: the rates, the checkpoint policy and the wall time."""

    interruptions_per_instance_day: float
    instances: int
    checkpoint_gib: float
    checkpoint_write_s: float
    checkpoint_interval_s: float
    restart_s: float
    work_s: float
    expected_wall_s: float

    @property
    def mtbf_s(self) -> float:
        """Mean time between interruptions of the job (any of its instances)."""
        return SECONDS_PER_DAY / (self.interruptions_per_instance_day * self.instances)

    @property
    def expected_interruptions(self) -> float:
        return self.expected_wall_s / self.mtbf_s

    @property
    def checkpoint_interval_h(self) -> float:
        return self.checkpoint_interval_s / SECONDS_PER_HOUR

    @property
    def work_h(self) -> float:
        """Hours of computation, without interruptions."""
        return self.work_s / SECONDS_PER_HOUR

    @property
    def expected_wall_h(self) -> float:
        """Expected wall-clock hours with the interruptions (what the plan's `hours` is)."""
        return self.expected_wall_s / SECONDS_PER_HOUR


def preemption(
    work_s: float,
    instances: int,
    interruptions_per_instance_day: float,
    ckpt_bytes: float,
    write_gb_s_per_instance: float,
    restart_s: float,
) -> Preemption:
    """The expected cost of interruptions for one run: each instance is reclaimed at
    `interruptions_per_instance_day`; any reclaim stops the job (rates add over instances);
    every instance writes its shard at `write_gb_s_per_instance`; the interval is Daly's."""
    per_day = interruptions_per_instance_day * instances
    write_s = ckpt_bytes / (write_gb_s_per_instance * GB * instances)
    if per_day <= 0:
        return Preemption(0.0, instances, ckpt_bytes / GIB, write_s, math.inf, restart_s, work_s, work_s)
    mtbf_s = SECONDS_PER_DAY / per_day
    tau = daly_interval_s(write_s, mtbf_s)
    return Preemption(
        interruptions_per_instance_day,
        instances,
        ckpt_bytes / GIB,
        write_s,
        tau,
        restart_s,
        work_s,
        expected_wall_s(work_s, tau, write_s, restart_s, mtbf_s),
    )
