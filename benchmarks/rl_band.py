"""The RL step band: split conformal across sources, made the way the training bands are
(benchmarks/folds.py, optimizer/model/bands.py), so that a new source's numbers fall between
P10 and P90 80% of the time on average.

A unit is a source (a publisher's versions once); its numbers share one unit of weight. The
band's centre is the sources' median log(measured / predicted) (folds.unit_quantile, each
source weighing one). Each source is scored against the centre of the other sources alone
(|r − centre|, the absolute residual of split conformal: one band group, so no spread to
normalise by, which one or two sources would estimate badly); the band is exp(centre ∓ q), q
the COVERAGE quantile of those held-out scores (Lei et al. 2018 JASA §2, sources as units:
Dunn, Wasserman & Ramdas 2022 JASA).

Widening with few sources (stated rule): with k held-out sources the 80% rank ⌈0.8 (k + 1)⌉ lies
among them only from k = MIN_GROUP_SOURCES (4) on. Below, q is the largest held-out score
widened as if the scores were uniform from 0 (k draws of Uniform(0, θ) have E[max] = θ k/(k + 1),
so θ ≈ max (k + 1)/k and its 80% quantile 0.8 (k + 1)/k × max): × 1.6 with one source scored,
× 1.2 with two, × 1.07 with three. No band from fewer than two sources.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from folds import COVERAGE, MIN_GROUP_SOURCES, unit_quantile  # noqa: E402

__all__ = ["Unit", "held_out_scores", "conformal_q", "conformal_band"]

Unit = tuple[str, float]  # (source, log measured / predicted)


def held_out_scores(units: Sequence[Unit]) -> list[Unit]:
    """(source, |r − centre|) of each source's numbers against the median of the other sources
    (none with fewer than two sources)."""
    sources = sorted({u for u, _ in units})
    if len(sources) < 2:
        return []
    out = []
    for name in sources:
        centre = unit_quantile([x for x in units if x[0] != name], 0.5)
        out += [(name, abs(r - centre)) for u, r in units if u == name]
    return out


def conformal_q(scores: Sequence[Unit]) -> float | None:
    """The COVERAGE quantile of the held-out scores, each source weighing one; with fewer than
    MIN_GROUP_SOURCES sources the widened largest score (module doc); None without scores."""
    k = len({u for u, _ in scores})
    if k == 0:
        return None
    if k >= MIN_GROUP_SOURCES:
        return unit_quantile(scores, COVERAGE)
    return max(s for _, s in scores) * COVERAGE * (k + 1) / k


def conformal_band(units: Sequence[Unit]) -> tuple[float, float, float] | None:
    """(P10, P50, P90) multipliers of the predicted step: exp(centre ∓ q), exp(centre) (None:
    fewer than two sources)."""
    q = conformal_q(held_out_scores(units))
    if q is None:
        return None
    centre = unit_quantile(units, 0.5)
    return math.exp(centre - q), math.exp(centre), math.exp(centre + q)
