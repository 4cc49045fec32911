"""The curve fitted to stored runs (optimizer.model.calibrated): least squares of
log(achieved efficiency) = a + b·log(size factor), numbers worked out by hand."""

from __future__ import annotations

import math

import pytest

from optimizer.model.calibrated import CalibratedCurve, fit_curve


def _run(level: float, exponent: float, size: float) -> tuple[float, float]:
    """(size factor, base efficiency) of a run on the curve level × size^exponent: the base
    efficiency calibrate stores is the achieved one divided by the size factor."""
    return size, level * size**exponent / size


def test_one_run_keeps_the_model_size_curve_and_is_exact_for_itself() -> None:
    curve = fit_curve([(0.8, 0.45)])
    assert (curve.level, curve.size_exponent, curve.points) == (pytest.approx(0.45), 1.0, 1)
    assert curve.efficiency(0.8) == pytest.approx(0.45 * 0.8)  # base × its size factor
    assert curve.efficiency(0.5) == pytest.approx(0.45 * 0.5)  # other sizes: the model's shape


@pytest.mark.parametrize(("level", "exponent"), [(0.6, 1.5), (0.5, 0.4), (0.7, 1.0), (0.3, 2.5)])
def test_two_runs_of_a_known_curve_give_that_curve_back(level, exponent) -> None:
    curve = fit_curve([_run(level, exponent, 0.45), _run(level, exponent, 0.9)])
    assert curve.level == pytest.approx(level, rel=1e-9)
    assert curve.size_exponent == pytest.approx(exponent, rel=1e-9)
    for size in (0.45, 0.9, 0.7):  # both runs reproduced, a third size on the same curve
        assert curve.efficiency(size) == pytest.approx(level * size**exponent, rel=1e-9)


def test_three_runs_are_a_least_squares_fit_in_log_space() -> None:
    # log-sizes x = log(0.4), log(0.6), log(0.9); log achieved y = log(0.2), log(0.33), log(0.5)
    runs = [(0.4, 0.2 / 0.4), (0.6, 0.33 / 0.6), (0.9, 0.5 / 0.9)]
    xs = [math.log(s) for s, _ in runs]
    ys = [math.log(0.2), math.log(0.33), math.log(0.5)]
    mx, my = sum(xs) / 3, sum(ys) / 3
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
    curve = fit_curve(runs)
    assert curve.size_exponent == pytest.approx(b, rel=1e-12)
    assert math.log(curve.level) == pytest.approx(my - b * mx, rel=1e-12)
    assert curve.points == 3


def test_outside_the_runs_span_the_model_size_curve_continues_from_the_nearest_end() -> None:
    curve = fit_curve([_run(0.6, 6.0, 0.5), _run(0.6, 6.0, 0.9)])  # a steep slope, exact inside
    assert curve.size_exponent == pytest.approx(6.0, rel=1e-9)
    assert curve.efficiency(0.7) == pytest.approx(0.6 * 0.7**6, rel=1e-9)
    # beyond the largest run: its efficiency × size/0.9 (slope 1), not 0.6 × size^6
    assert curve.efficiency(1.0) == pytest.approx(0.6 * 0.9**6 / 0.9, rel=1e-9)
    assert curve.efficiency(0.25) == pytest.approx(0.6 * 0.5**6 * 0.25 / 0.5, rel=1e-9)
    # the base (size factor 1) and the ceiling over every size bound every layout
    assert curve.base == pytest.approx(0.6 * 0.9**5, rel=1e-9)
    falling = fit_curve([_run(0.3, -1.0, 0.5), _run(0.3, -1.0, 0.9)])  # smaller runs faster
    assert falling.ceiling == pytest.approx(0.3 / 0.5, rel=1e-9)  # its smallest run's
    sizes = [i / 100 for i in range(1, 101)]
    for c in (curve, falling):
        assert max(c.efficiency(s) for s in sizes) <= c.ceiling + 1e-12


def test_runs_of_one_size_give_the_geometric_mean_of_their_base_efficiencies() -> None:
    curve = fit_curve([(0.8, 0.4), (0.8, 0.6)])
    assert curve.size_exponent == 1.0
    assert curve.level == pytest.approx(math.sqrt(0.4 * 0.6), rel=1e-12)


def test_the_curve_never_exceeds_the_peak_and_bad_runs_are_refused() -> None:
    assert CalibratedCurve(level=1.4, size_exponent=1.0).efficiency(0.9) == 1.0
    with pytest.raises(ValueError, match="no runs"):
        fit_curve([])
    with pytest.raises(ValueError, match="> 0"):
        fit_curve([(0.5, 0.0)])
