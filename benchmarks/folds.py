"""Cross-validation folds of the constants' fit (benchmarks/fitting.py): leave one source (loso)
or one source family (lofo) out, refit on the rest, predict the held-out cases. Shared by
fit_constants.py, calibration_points.py, calibration_ceiling.py and accuracy.py."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import Case, log_ratio, predict  # noqa: E402
from fitting import assumptions_for, fit_constants, source_family  # noqa: E402

from optimizer.model.fitted import FittedConstants  # noqa: E402

Folds = dict[str, tuple[FittedConstants, list[tuple[Case, float | None]]]]


def leave_out(
    cases: Sequence[Case], group: Callable[[Case], str], progress: Callable[[str], None] | None = None
) -> Folds:
    """Cross-validation: {group: (constants fitted without it, [(case, prediction)])}."""
    out = {}
    for name in sorted({group(c) for c in cases}):
        train = [c for c in cases if group(c) != name]
        fit = fit_constants(train)
        a = assumptions_for(fit)
        out[name] = (fit, [(c, predict(c, a)) for c in cases if group(c) == name])
        if progress:
            progress(name)
    return out


def loso(cases: Sequence[Case], progress: Callable[[str], None] | None = None) -> Folds:
    """Leave-one-source-out: {source: (constants fitted without it, [(case, prediction)])}."""
    return leave_out(cases, lambda c: c.source, progress)


def lofo(cases: Sequence[Case], progress: Callable[[str], None] | None = None) -> Folds:
    """Leave-one-family-out (SOURCE_FAMILIES): {family: (constants, [(case, prediction)])}."""
    return leave_out(cases, lambda c: source_family(c.source), progress)


def step_ratio(case: Case, predicted: float) -> float:
    """measured / predicted step time (inverse of the speed ratio)."""
    return math.exp(-log_ratio(case, predicted))
