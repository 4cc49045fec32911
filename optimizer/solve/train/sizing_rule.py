"""How long a sizing run's reading takes: warm-up, then enough steps to pin the step time.

The reading averages step times after the warm-up. The steps needed to know a mean to within a
relative margin E at confidence level L, with the step times' coefficient of variation CV, are
n = ⌈(z · CV / E)²⌉, z the two-sided normal quantile of L (the sample size of a mean with a
stated margin of error: derekogle.com/NCMTH107/modules/Explanations/Calc_n, read 2026-12-05).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from optimizer.units import SECONDS_PER_MINUTE

__all__ = ["SizingRule", "steps_for_precision", "measured_steps", "reading_minutes"]


@dataclass(frozen=True)
class SizingRule:
    """How long a reading takes (all GUESSES, overridable from `ccopt sizing`'s flags)."""

    #: steps run before the reading starts (allocator warm-up, cuDNN autotuning, torch.compile,
    #: data-loader fill): excluded from the measurement
    warmup_steps: int = 10
    #: steps averaged at least, and seconds measured at least (whichever is longer)
    min_steps: int = 20
    min_measure_s: float = 120.0
    #: minutes to boot an instance, install and load the model before the first step
    startup_minutes: float = 15.0
    #: step-to-step coefficient of variation of a steady training step (GUESS: data-loader,
    #: collective and host jitter of a few percent)
    step_time_cv: float = 0.05
    #: the relative margin the mean step time is pinned to, and at what confidence level
    reading_precision: float = 0.02
    reading_level: float = 0.95


def steps_for_precision(cv: float, precision: float, level: float) -> int:
    """n = ⌈(z · CV / E)²⌉ steps pin a mean to ±E (relative) at level L (module doc)."""
    z = NormalDist().inv_cdf(0.5 + level / 2)
    return math.ceil((z * cv / precision) ** 2 - 1e-9)


def measured_steps(rule: SizingRule, step_time_s: float) -> int:
    """Steps averaged: the precision's count, at least `min_steps` and `min_measure_s` seconds."""
    precise = steps_for_precision(rule.step_time_cv, rule.reading_precision, rule.reading_level)
    return max(rule.min_steps, precise, math.ceil(rule.min_measure_s / step_time_s))


def reading_minutes(rule: SizingRule, step_time_s: float) -> float:
    """Wall minutes of a reading: start-up, then warm-up and measured steps."""
    steps = rule.warmup_steps + measured_steps(rule, step_time_s)
    return steps * step_time_s / SECONDS_PER_MINUTE + rule.startup_minutes
