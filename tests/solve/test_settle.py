"""The measurement that settles a plan (issue 45): threshold, chance, saving and the sizing run's
cost of a small made-up case, derived by hand; the band's CDF inverts its quantiles."""

from __future__ import annotations

import math
from dataclasses import replace
from statistics import NormalDist

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optimizer.inputs.gpus import load_gpus
from optimizer.model.bands import Band
from optimizer.model.memory import MemoryBreakdown
from optimizer.model.setup import Layout
from optimizer.model.step_time import StepTime
from optimizer.pricing.offering import Offering
from optimizer.solve.train.enumerate import Candidate
from optimizer.solve.train.settle import SettleLimits, band_cdf, settle_runs, threshold_multiplier
from optimizer.solve.train.sizing_rule import SizingRule, steps_for_precision

GPUS = load_gpus()
POINT = Band(1.0, 1.0, 1.0, cases=0, sources=0, basis="none")
WIDE = Band(0.8, 1.0, 1.25, cases=0, sources=0, basis="prior")


def _row(gpu: str, usd_per_hour: float, hours: float, band: Band, step_s: float = 10.0) -> Candidate:
    """One instance of 8× `gpu` at `usd_per_hour`, `hours` at the point prediction (no start-up)."""
    off = Offering(
        key=gpu,
        kind="cloud",
        provider="p",
        instance=f"{gpu}-8x",
        region="r",
        pricing="on_demand",
        gpu=GPUS[gpu],
        gpus_per_instance=8,
        inter_node_gbps=400.0,
        usd_per_hour=usd_per_hour,
    )
    step = StepTime(
        time_s=step_s,
        compute_s=step_s,
        communication_s=0.0,
        bubble_s=0.0,
        tokens_per_s=1.0,
        tokens_per_s_per_gpu=1.0,
        mfu=0.5,
        hfu=0.5,
        efficiency=0.5,
        calibrated=False,
    )
    return Candidate(
        off,
        1,
        Layout(dp=8),
        MemoryBreakdown(10, 10, 20, 5, 0, 1),
        step,
        steps=1000,
        hours=hours,
        cost_usd=usd_per_hour * hours,
        band=band,
    )


# The plan: $1,000 on H100. The contender: 8× B200 at $40/h, 20 h at its point prediction, its band
# P10/P50/P90 = 0.8/1.0/1.25 (symmetric in log: ln 1.25 = −ln 0.8 = 0.22314). Deadline 24 h, P80.
PLAN = _row("H100-80GB", 50.0, 20.0, POINT)
CONTENDER = _row("B200", 40.0, 20.0, WIDE)
Z90 = 1.2815516  # the standard normal's 90% quantile


def _limits(calibrated: Band) -> SettleLimits:
    return SettleLimits(PLAN, deadline_h=24.0, budget_usd=None, confidence=0.8, calibrated=calibrated)


def test_threshold_chance_saving_and_run_cost_by_hand() -> None:
    # After calibration (a point band: K(0.8) = 1) at measured multiplier m the contender takes
    # 20·m h and costs $800·m. Deadline: 20·m ≤ 24 → m ≤ 1.2; cheaper: 800·m < 1000 → m < 1.25.
    # m* = 1.2 (the deadline binds).
    # P(holds) = Φ(z90 · ln 1.2 / ln 1.25) = Φ(1.28155 × 0.18232 / 0.22314) = Φ(1.04711) = 0.85247
    # m_h = the band's P(0.85247/2 = 0.42624): z = −0.18597, m_h = exp(−0.18597/1.28155 × 0.22314)
    #     = 0.96814; its cost $800 × 0.96814 = $774.51, saving $1,000 − $774.51 = $225.49
    # The reading, on the contender's own instance (10 s steps): 10 warm-up + max(20 steps,
    # ⌈(1.96 × 0.05 / 0.02)²⌉ = ⌈24.01⌉ = 25, ⌈120 s / 10 s⌉ = 12) = 25 steps; 35 × 10 s = 5.833 min
    # + 15 min start-up = 20.833 min; $40/h × 20.833/60 h = $13.889.
    # Expected saving: 0.85247 × $225.49 − $13.889 = $178.33.
    (s,) = settle_runs([PLAN, CONTENDER], _limits(POINT))
    assert s.gpu == "B200" and s.target is CONTENDER and s.probe is CONTENDER
    assert s.threshold == pytest.approx(1.2, rel=1e-6)
    assert s.p_holds == pytest.approx(0.85247, abs=5e-5)
    assert s.multiplier_if_holds == pytest.approx(0.96814, abs=5e-5)
    assert s.cost_if_holds_usd == pytest.approx(774.51, abs=0.05)
    assert s.saving_usd == pytest.approx(225.49, abs=0.05)
    assert (s.warmup_steps, s.measured_steps) == (10, 25)
    assert s.minutes == pytest.approx(20.833, abs=1e-3)
    assert s.cost_usd == pytest.approx(13.889, abs=1e-3)
    assert s.expected_saving_usd == pytest.approx(178.33, abs=0.05)
    assert not s.network_matters


def test_the_calibrated_band_tightens_the_threshold() -> None:
    # K = 0.9/1.0/1.2: K(0.8) = exp(z80/z90 · ln 1.2) = exp(0.84162/1.28155 × 0.18232) = 1.12720,
    # so the deadline needs 20 · m · 1.12720 ≤ 24: m* = 1.2 / 1.12720 = 1.06459
    k = Band(0.9, 1.0, 1.2, cases=10, sources=2, basis="calibrated")
    assert threshold_multiplier(CONTENDER, _limits(k)) == pytest.approx(1.06459, rel=1e-5)


def test_a_budget_and_a_dearer_contender_bind_instead() -> None:
    # budget $880: 800·m ≤ 880 → m* = 1.1 (below the deadline's 1.2)
    limits = replace(_limits(POINT), budget_usd=880.0)
    assert threshold_multiplier(CONTENDER, limits) == pytest.approx(1.1, rel=1e-6)
    # at $45/h it must cost less than $1,000 in the solver's whole cents (rounded up):
    # 900·m ≤ $999.99 → m* = 1.11110 (cheaper binds before the deadline's 1.2)
    dear = _row("B200", 45.0, 20.0, WIDE)
    assert threshold_multiplier(dear, _limits(POINT)) == pytest.approx(999.99 / 900, rel=1e-7)


def test_no_contender_when_it_cannot_hold_and_none_of_the_plans_own_type() -> None:
    # at $100/h, 2000·m < 1000 needs m < 0.5, below the band's 0.1% quantile
    # exp(−3.0902/1.28155 × 0.22314) = 0.584: it holds at no plausible speed, no record
    assert settle_runs([PLAN, _row("B200", 100.0, 20.0, WIDE)], _limits(POINT)) == []
    same_type = _row("H100-80GB", 10.0, 20.0, WIDE)
    assert settle_runs([PLAN, same_type], _limits(POINT)) == []


def test_reading_steps_from_the_sample_size_formula() -> None:
    # n = ⌈(z·CV/E)²⌉: (1.96 × 0.05 / 0.01)² = 96.04 → 97; (1.645 × 0.1 / 0.05)² = 10.82 → 11
    assert steps_for_precision(0.05, 0.01, 0.95) == 97
    assert steps_for_precision(0.1, 0.05, 0.90) == 11
    assert SizingRule().reading_precision == 0.02


@given(
    q=st.floats(0.01, 0.99),
    p10=st.floats(0.3, 0.99),
    p90=st.floats(1.01, 3.0),
)
def test_band_cdf_inverts_the_band_quantiles(q: float, p10: float, p90: float) -> None:
    band = Band(p10, 1.0, p90, cases=0, sources=0, basis="prior")
    assert band_cdf(band, band.multiplier(q)) == pytest.approx(q, abs=1e-9)


def test_band_cdf_by_hand() -> None:
    # m = 0.9 under 0.8/1.0/1.25: Φ(1.28155 × ln 0.9 / ln 1.25) = Φ(−0.60513) = 0.27255
    assert band_cdf(WIDE, 0.9) == pytest.approx(0.27255, abs=5e-5)
    assert NormalDist().cdf(Z90 * math.log(0.9) / math.log(1.25)) == pytest.approx(0.27255, abs=5e-5)
