"""The new-source discrepancy of the training bands (benchmarks/new_sources.py), by hand."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from benchmarks.new_sources import (
    Scored,
    coverage,
    discrepancy,
    load_once_scored,
    load_once_scored_memory,
    prequential,
    prequential_coverage,
    widen,
    widen_memory,
)

ROOT = Path(__file__).resolve().parents[2]


def test_the_discrepancy_is_the_smallest_reaching_the_coverage() -> None:
    # source A: one run 1.5x the point in a band 0.8..1.25 (half-width ln 1.25 = 0.2231): inside
    # once hypot(0.2231, d) >= ln 1.5 = 0.4055, d >= sqrt(0.4055² - 0.2231²) = 0.3386; source
    # B inside at d = 0. Source-weighted: 50% below d = 0.3386, 100% from it.
    a = Scored("x", "A", 1.5, 0.8, 1.0, 1.25)
    b = Scored("x", "B", 1.1, 0.8, 1.0, 1.25)
    assert math.sqrt(math.log(1.5) ** 2 - math.log(1.25) ** 2) == pytest.approx(0.3386, abs=1e-4)
    assert coverage([a, b], 0.33) == 0.5 and coverage([a, b], 0.34) == 1.0
    assert discrepancy([a, b], 0.8) == pytest.approx(0.34)
    assert discrepancy([a, b], 0.5) == 0.0  # never narrowed


def test_a_source_weighs_one_whatever_its_runs() -> None:
    # A has 3 runs (2 inside), B one run (outside): (2/3 + 0) / 2 = 1/3, not 2/4
    runs = [Scored("x", "A", r, 0.8, 1.0, 1.25) for r in (1.0, 1.1, 2.0)] + [
        Scored("x", "B", 3.0, 0.8, 1.0, 1.25)
    ]
    assert coverage(runs, 0.0) == pytest.approx(1 / 3)


def test_widen_adds_the_discrepancy_in_quadrature_to_training_bands_only() -> None:
    bands = {
        "hopper/16": (0.8, 0.9, 1.2, 10, 5),
        "serve:hopper": (0.8, 1.0, 1.2, 4, 4),
        "memory": (0.85, 1.0, 1.15, 80, 9),
    }
    out = widen(bands, 0.3)
    p10, p50, p90, n, k = out["hopper/16"]
    assert p50 == 0.9 and (n, k) == (10, 5)
    # ln(0.9/0.8) = 0.1178 -> sqrt(0.1178² + 0.09) = 0.3223; ln(1.2/0.9) = 0.2877 -> 0.4157
    assert p10 == pytest.approx(0.9 * math.exp(-0.3223), rel=1e-3)
    assert p90 == pytest.approx(0.9 * math.exp(0.4157), rel=1e-3)
    assert out["serve:hopper"] == bands["serve:hopper"] and out["memory"] == bands["memory"]


def test_a_band_scored_already_widened_is_unwidened_first() -> None:
    # scored with the earlier rule's x1.21 in force: the band 0.8..1.25 it was scored in is the
    # base band's log-width x 1.21; at d = 0 a ratio at the base edge is inside, past it not
    base_high = math.log(1.25) / 1.21
    assert Scored("x", "A", math.exp(base_high - 1e-6), 0.8, 1.0, 1.25, 1.21).inside(0.0)
    assert not Scored("x", "A", math.exp(base_high + 1e-3), 0.8, 1.0, 1.25, 1.21).inside(0.0)
    # scored with a discrepancy 0.3 in force: the half-width was hypot(base, 0.3)
    scored_half = math.hypot(0.2, 0.3)
    s = Scored("x", "A", math.exp(0.2 - 1e-6), math.exp(-scored_half), 1.0, math.exp(scored_half), 1.0, 0.3)
    assert s.halves() == (pytest.approx(0.2), pytest.approx(0.2)) and s.inside(0.0)


def test_the_packaged_discrepancy_is_the_once_scored_collections() -> None:
    from optimizer.model.fitted import load_fitted

    scored = load_once_scored()
    assert len({(s.collection, s.source) for s in scored}) >= 20
    d = discrepancy(scored)
    assert load_fitted().meta["new_source_discrepancy"] == d
    assert coverage(scored, 0.0) < 0.8 <= coverage(scored, d)


def test_widen_memory_widens_the_memory_band_alone() -> None:
    bands = {"hopper/16": (0.8, 0.9, 1.2, 10, 5), "memory": (0.8717, 0.9982, 1.1432, 84, 9)}
    out = widen_memory(bands, 0.43)
    assert out["hopper/16"] == bands["hopper/16"]
    p10, p50, p90, n, k = out["memory"]
    # ln(1.1432/0.9982) = 0.13565 -> hypot(0.13565, 0.43) = 0.45089; ln(0.9982/0.8717) = 0.13551
    assert (p50, n, k) == (0.9982, 84, 9)
    assert p90 == pytest.approx(0.9982 * math.exp(0.45089), rel=1e-4)
    assert p10 == pytest.approx(0.9982 * math.exp(-0.45085), rel=1e-4)


def test_prequential_scores_each_collection_with_the_d_of_the_ones_before() -> None:
    # band 0.8..1.25 (half-width ln 1.25 = 0.2231). c1: ten sources, nine at the point and one
    # at 1.5 (inside only from d = 0.3386): 90% inside at d = 0, so c1's d is 0. c2: two
    # sources at 1.5, both outside at d = 0 -> 0%. Had c2 been in its own calibration, the d
    # would be 0.34 (50% of c1 + c2's twelve sources outside below it) and c2 100% inside.
    c1 = [Scored("c1", f"s{i}", 1.0, 0.8, 1.0, 1.25) for i in range(9)] + [
        Scored("c1", "s9", 1.5, 0.8, 1.0, 1.25)
    ]
    c2 = [Scored("c2", "a", 1.5, 0.8, 1.0, 1.25), Scored("c2", "b", 1.5, 0.8, 1.0, 1.25)]
    scores = prequential(c1 + c2, ["c1", "c2"])
    assert scores == [("c2", 0.0, 0.0, 2)]  # c1 itself: no collection before it
    assert prequential_coverage(c1 + c2, scores) == (0.0, 2)
    assert discrepancy(c1 + c2) == pytest.approx(0.34)  # what scoring c2 with itself would give


def test_prequential_waits_for_enough_earlier_sources() -> None:
    # nine earlier sources (< PREQUENTIAL_MIN_SOURCES = 10): c2 is not scored
    c1 = [Scored("c1", f"s{i}", 1.0, 0.8, 1.0, 1.25) for i in range(9)]
    c2 = [Scored("c2", "a", 1.5, 0.8, 1.0, 1.25)]
    assert prequential(c1 + c2, ["c1", "c2"]) == []


def test_the_packaged_memory_discrepancy_is_the_once_scored_memory_rows() -> None:
    from optimizer.model.fitted import load_fitted

    scored = load_once_scored_memory()
    assert len({(s.collection, s.source) for s in scored}) >= 40
    d = discrepancy(scored)
    assert load_fitted().meta["memory_new_source_discrepancy"] == d
    assert coverage(scored, 0.0) < 0.8 <= coverage(scored, d)

    # the packaged band is the development sources' conformal band widened by that d
    import sys

    sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "benchmarks" / "validation")]
    from cases import build_cases
    from fit_constants import fitted_cases, memory_band
    from memory_accuracy import memory_loso

    unwidened = memory_band(memory_loso(fitted_cases(build_cases()[0])))
    expected = widen_memory(unwidened, d)["memory"]
    assert load_fitted().bands["memory"][:3] == pytest.approx(expected[:3], abs=1e-4)
