"""The calibration of stored runs (optimizer.model.calibrated): kriging of log(base efficiency /
uncalibrated) in log size factor, numbers worked out by hand from the stated covariance."""

from __future__ import annotations

import math
import random
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optimizer.inputs.calibration_store import curves_of
from optimizer.model.calibrated import (
    COMPONENTS,
    Components,
    PowerCurve,
    comm_objective,
    fit_curve,
)

PRIOR = 0.5  # the uncalibrated base efficiency the corrections are relative to
#: a line alone (no own term, no noise): two runs determine it exactly
LINE = Components(shared=0.04, slope=0.5, own=0.0, length=0.02, noise=0.0)


def _run(level: float, exponent: float, size: float) -> tuple[float, float]:
    """(size factor, base efficiency) of a run on the curve achieved = level × size^exponent:
    the base efficiency calibrate stores is the achieved one divided by the size factor."""
    return size, level * size**exponent / size


def test_one_run_is_exact_for_itself_and_shares_tau2_over_tau2_plus_sigma2_elsewhere() -> None:
    c = Components(shared=0.03, slope=0.0, own=0.01, length=0.02, noise=0.0)
    curve = fit_curve([(0.8, 0.4)], c)  # base 0.4 vs the prior 0.5: log correction log(0.8)
    assert curve.points == 1 and c.transfer == pytest.approx(0.75)
    assert curve.efficiency(0.8, PRIOR) == pytest.approx(0.4 * 0.8)  # its own layout: exact
    # a layout of another size factor (|Δ log size| ≫ ℓ): 0.03/(0.03 + 0.01) = 3/4 of log(0.8)
    assert curve.efficiency(0.5, PRIOR) == pytest.approx(PRIOR * 0.5 * 0.8**0.75)
    # one run cannot tell a slope: the shared part is the model's own size curve
    level, exponent = curve.line(PRIOR)
    assert exponent == 1.0 and level == pytest.approx(PRIOR * 0.8**0.75)


@pytest.mark.parametrize(("level", "exponent"), [(0.6, 1.5), (0.5, 0.4), (0.7, 1.0), (0.3, 2.5)])
def test_two_runs_of_a_known_curve_give_that_curve_back_without_an_own_term(level, exponent) -> None:
    # τ² + β² u u' is of rank 2: the posterior mean is the line through both runs
    curve = fit_curve([_run(level, exponent, 0.45), _run(level, exponent, 0.9)], LINE)
    fitted_level, fitted_exponent = curve.line(PRIOR)
    assert fitted_level == pytest.approx(level, rel=1e-9)
    assert fitted_exponent == pytest.approx(exponent, rel=1e-9)
    for size in (0.45, 0.9, 0.7):  # both runs reproduced, a third size on the same curve
        assert curve.efficiency(size, PRIOR) == pytest.approx(level * size**exponent, rel=1e-9)


def test_outside_the_runs_span_the_slope_is_held_and_the_model_size_curve_continues() -> None:
    curve = fit_curve([_run(0.6, 3.0, 0.5), _run(0.6, 3.0, 0.9)], LINE)  # steep, exact inside
    assert curve.efficiency(0.7, PRIOR) == pytest.approx(0.6 * 0.7**3, rel=1e-9)
    # beyond the largest run: its base efficiency × size (slope 1), not 0.6 × size^3
    assert curve.efficiency(1.0, PRIOR) == pytest.approx(0.6 * 0.9**3 / 0.9, rel=1e-9)
    assert curve.efficiency(0.25, PRIOR) == pytest.approx(0.6 * 0.5**3 * 0.25 / 0.5, rel=1e-9)


def test_runs_of_one_size_average_in_log_space() -> None:
    # τ² = 1 ≫ ν² = 1e-6: the posterior level is the mean log correction × 2/(2 + 1e-6)
    c = Components(shared=1.0, slope=0.5, own=0.0, length=0.02, noise=1e-6)
    curve = fit_curve([(0.8, 0.4), (0.8, 0.6)], c)
    assert curve.efficiency(0.8, PRIOR) == pytest.approx(math.sqrt(0.4 * 0.6) * 0.8, rel=1e-6)


@pytest.mark.parametrize(
    "runs",
    [
        [(0.7, 0.3), (0.92, 0.62)],
        [(0.5, 0.7), (0.55, 0.4), (0.9, 0.45)],  # two close sizes that disagree
        [(0.6, 0.35), (0.75, 0.5), (0.8, 0.44), (0.95, 0.52)],
    ],
)
def test_the_packaged_rule_reproduces_every_run_within_1pct_and_the_ceiling_bounds_all(runs) -> None:
    curve = fit_curve(runs)
    assert curve.components == COMPONENTS
    for size, eff in runs:  # disagreeing runs 10% apart in size (5 ℓ) are still told apart
        assert curve.efficiency(size, PRIOR) == pytest.approx(size * eff, rel=0.01)
    sizes = [i / 200 for i in range(1, 201)] + [s for s, _ in runs]
    assert max(curve.efficiency(s, PRIOR) for s in sizes) <= curve.ceiling(PRIOR) + 1e-12


def test_a_known_power_curve_and_the_peak() -> None:
    truth = PowerCurve(level=0.5, size_exponent=1.8)
    assert truth.efficiency(0.5, PRIOR) == pytest.approx(0.5 * 0.5**1.8)
    assert PowerCurve(level=1.4).efficiency(0.9, PRIOR) == 1.0
    assert fit_curve([(0.9, 3.0)]).efficiency(0.9, PRIOR) == 1.0  # never above the peak


def test_bad_runs_are_refused() -> None:
    with pytest.raises(ValueError, match="no runs"):
        fit_curve([])
    with pytest.raises(ValueError, match="> 0"):
        fit_curve([(0.5, 0.0)])


def test_the_communication_objective_by_hand() -> None:
    # two runs of one size factor: K = A·11ᵀ + ν²I with A = 100 (the free level) + σ², the slope
    # term 0 (both at the mean); yᵀK⁻¹y = (y1 + y2)²/(2(2A + ν²)) + (y1 − y2)²/(2ν²)
    y1, y2, nu2 = math.log(0.5), math.log(0.4), COMPONENTS.noise
    big = 100.0 + COMPONENTS.own
    quad = (y1 + y2) ** 2 / (2 * (2 * big + nu2)) + (y1 - y2) ** 2 / (2 * nu2)
    expected = 0.5 * quad + 0.1**2 / (2 * 0.09)  # + (log μ)² / 2ω², ω² = 0.09
    assert comm_objective(0.1, [(0.8, 0.5), (0.8, 0.4)]) == pytest.approx(expected, rel=1e-9)
    # runs that agree cost only the prior: the objective is smallest at log μ = 0
    assert comm_objective(0.0, [(0.8, 0.5), (0.8, 0.5)]) < comm_objective(0.2, [(0.8, 0.5), (0.8, 0.5)])


def _direct(runs: list[tuple[float, float]], size: float, c: Components = COMPONENTS) -> tuple[float, float]:
    """The rule of the module doc solved as written: one n×n system over every run (the
    implementation before runs of one size factor were grouped); (correction, ceiling)."""
    xs = np.log([s for s, _ in runs])
    ys = np.log(np.array([e for _, e in runs]) / PRIOR)
    mid, lo, hi = xs.mean(), xs.min(), xs.max()

    def kernel(x: np.ndarray) -> np.ndarray:
        u = np.clip(x, lo, hi)[:, None] - mid
        near = np.exp(-(((x[:, None] - xs[None, :]) / c.length) ** 2))
        return c.shared + c.slope * u * (xs[None, :] - mid) + c.own * near

    alpha = np.linalg.solve(kernel(xs) + c.noise * np.eye(len(runs)), ys)
    ends = np.array([x for x in (lo, hi, 0.0) if x <= 0.0])
    shared = kernel(ends) - c.own * np.exp(-(((ends[:, None] - xs[None, :]) / c.length) ** 2))
    own = c.own * sum(abs(sum(alpha[xs == x])) for x in np.unique(xs))  # own term per size factor
    top = max(x + float(row @ alpha) for x, row in zip(ends, shared, strict=True))
    return float(kernel(np.array([math.log(size)]))[0] @ alpha), math.exp(
        min(0.0, math.log(PRIOR) + top + own)
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([0.3, 0.45, 0.6, 0.61, 0.8, 0.95]), st.floats(0.2, 0.7)),
        min_size=1,
        max_size=12,
    ),
    st.floats(0.05, 1.0),
)
def test_grouped_runs_give_the_curve_of_the_full_system(runs, size) -> None:
    """Runs of one size factor solved as one (their mean and count) give the corrections,
    levels and ceilings of the full n×n system, on small stores with and without repeats."""
    curve = fit_curve(runs)
    correction, ceiling = _direct(runs, size)
    assert curve.correction(size, PRIOR) == pytest.approx(correction, rel=1e-7, abs=1e-9)
    assert curve.ceiling(PRIOR) == pytest.approx(ceiling, rel=1e-7)
    assert curve.efficiency(size, PRIOR) <= curve.ceiling(PRIOR) + 1e-12


def test_ten_thousand_stored_runs_fit_in_well_under_5_s() -> None:
    """A store of 10,000 runs (4 hidden sizes × 6 micro-batch token counts, measured again and
    again, 0.5% noise): every curve, correction and ceiling an estimate asks for, < 5 s (the
    full 10,000 × 10,000 system took ~20 s and 2.4 GB in `ccopt estimate`)."""
    rng = random.Random(3)
    points = []
    for k in range(10_000):
        hidden, tokens = (
            rng.choice([2048, 4096, 5120, 8192]),
            rng.choice([512, 1024, 2048, 4096, 8192, 16384]),
        )
        size = hidden / (hidden + 1000) / (1 + 256 / tokens)
        eff = (0.3 + 0.2 * size) * (1 + rng.gauss(0, 0.005))
        gpu = ("H100-80GB", "A100-80GB")[k % 2]
        points.append(
            {"gpu": gpu, "precision": "bf16", "stack": "generic", "size_factor": size, "efficiency": eff}
        )
    started = time.perf_counter()
    curves = curves_of(points)
    for curve in curves.values():
        assert curve.points == 5_000
        for prior in (0.4, 0.5):
            assert 0 < curve.ceiling(prior) <= 1
            for s in np.linspace(0.05, 1.0, 200):
                assert 0 < curve.efficiency(float(s), prior) <= curve.ceiling(prior) + 1e-12
            curve.line(prior)
    assert time.perf_counter() - started < 5.0
