"""Plausibility limit of a training prediction: no GPU is predicted above the best measured run.

An optimizer buys wherever its model is most optimistic, so a prediction above what any
published run of that GPU generation × precision reached is clipped to it and flagged. The
ceiling is the best model-FLOPs utilisation (MFU: model FLOPs per token × tokens/s ÷ dense peak
of the run's precision, Chowdhery et al. 2022 App. B, no recompute counted) among the
full-training runs of the validation set on that generation × precision, when it holds at least
MIN_CEILING_RUNS of them (benchmarks/fit_constants.py writes it with the case it comes from);
otherwise a stated guess below every data-backed 16-bit ceiling
(PerfAssumptions.mfu_ceiling_unmeasured, _fp8).
A calibrated GPU (`ccopt calibrate`) or an explicit efficiency is the user's own measurement:
it is not clipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from optimizer.model.efficiency import fitted_constants
from optimizer.model.fitted import band_key
from optimizer.model.hardware import GpuSpec

if TYPE_CHECKING:  # setup.py is above this module
    from optimizer.model.setup import PerfAssumptions

__all__ = ["MfuCeiling", "mfu_ceiling", "MIN_CEILING_RUNS"]

#: full-training runs a generation × precision needs for its measured ceiling (fewer: the guess)
MIN_CEILING_RUNS = 10


@dataclass(frozen=True)
class MfuCeiling:
    mfu: float
    measured: bool  # True: the best published run (case_id); False: the stated guess
    runs: int
    case_id: str

    def describe(self, gpu: GpuSpec, precision: str) -> str:
        where = f"{gpu.generation} {precision}"
        if self.measured:
            return f"the best of {self.runs} published runs on {where} ({self.case_id})"
        return f"the guessed ceiling of {where}: fewer than {MIN_CEILING_RUNS} published runs"


def mfu_ceiling(gpu: GpuSpec, precision: str, assumptions: PerfAssumptions) -> MfuCeiling:
    """The MFU no prediction of `precision` training on `gpu` may exceed (module doc)."""
    fit = fitted_constants(assumptions)
    found = fit.ceilings.get(band_key(gpu.generation, precision)) if fit is not None else None
    if found is not None and found[1] >= MIN_CEILING_RUNS:
        return MfuCeiling(found[0], True, found[1], found[2])
    guess = (
        assumptions.mfu_ceiling_unmeasured_fp8 if precision == "fp8" else assumptions.mfu_ceiling_unmeasured
    )
    return MfuCeiling(guess, False, found[1] if found else 0, "")
