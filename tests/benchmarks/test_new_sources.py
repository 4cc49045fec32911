"""The new-source widening of the training bands (benchmarks/new_sources.py), by hand."""

from __future__ import annotations

import math

import pytest

from benchmarks.new_sources import Scored, coverage, load_once_scored, widen, widening


def test_widening_is_the_smallest_exponent_reaching_the_coverage() -> None:
    # source A: one run 1.5x the point in a band 0.8..1.25 -> inside from w = ln 1.5 / ln 1.25
    # = 1.8171; source B: inside at w = 1. Source-weighted: 50% below 1.8171, 100% from it.
    a = Scored("x", "A", 1.5, 0.8, 1.0, 1.25)
    b = Scored("x", "B", 1.1, 0.8, 1.0, 1.25)
    assert math.log(1.5) / math.log(1.25) == pytest.approx(1.8171, abs=1e-4)
    assert coverage([a, b], 1.81) == 0.5 and coverage([a, b], 1.82) == 1.0
    assert widening([a, b], 0.8) == pytest.approx(1.82)
    assert widening([a, b], 0.5) == 1.0  # never narrowed


def test_a_source_weighs_one_whatever_its_runs() -> None:
    # A has 3 runs (2 inside), B one run (outside): (2/3 + 0) / 2 = 1/3, not 2/4
    runs = [Scored("x", "A", r, 0.8, 1.0, 1.25) for r in (1.0, 1.1, 2.0)] + [
        Scored("x", "B", 3.0, 0.8, 1.0, 1.25)
    ]
    assert coverage(runs, 1.0) == pytest.approx(1 / 3)


def test_widen_scales_the_log_width_of_training_bands_only() -> None:
    bands = {
        "hopper/16": (0.8, 0.9, 1.2, 10, 5),
        "serve:hopper": (0.8, 1.0, 1.2, 4, 4),
        "memory": (0.85, 1.0, 1.15, 80, 9),
    }
    out = widen(bands, 2.0)
    p10, p50, p90, n, k = out["hopper/16"]
    assert p50 == 0.9 and (n, k) == (10, 5)
    assert p10 == pytest.approx(0.9 * (0.8 / 0.9) ** 2) and p90 == pytest.approx(0.9 * (1.2 / 0.9) ** 2)
    assert out["serve:hopper"] == bands["serve:hopper"] and out["memory"] == bands["memory"]


def test_the_packaged_widening_is_the_once_scored_collections() -> None:
    from optimizer.model.fitted import load_fitted

    scored = load_once_scored()
    assert len({(s.collection, s.source) for s in scored}) >= 15
    assert load_fitted().meta["new_source_widening"] == widening(scored)
    assert coverage(scored, 1.0) < 0.8 <= coverage(scored, widening(scored))


def test_a_band_scored_already_widened_is_unwidened_first() -> None:
    # scored with w = 1.21 in force: the band 0.8..1.25 it was scored in is the base band
    # widened by 1.21; a ratio at 1.25 is inside at w = 1.21 and outside at w = 1.2
    s = Scored("x", "A", 1.25, 0.8, 1.0, 1.25, scored_widening=1.21)
    assert s.inside(1.21) and not s.inside(1.2)
