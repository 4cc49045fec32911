"""The arithmetic of benchmarks/calibration_ceiling.py (one-point ceilings and transfer kernels),
on hand-made runs with numbers derived by hand."""

from __future__ import annotations

import math

import pytest

from benchmarks.calibration_ceiling import Kernel, Sample, fit_kernel, scalar, score
from optimizer.model.calibrated import COMPONENTS

NU2 = COMPONENTS.noise


def _sample(y: float, x: float = 0.0, group: str = "g", share: float = 1.0, model: str = "a") -> Sample:
    # an uncalibrated log residual of a fully compute-bound run is −y (y = log(e_fitted/e_prior))
    features: dict[str, float | str] = {"x": x, "model": model}
    return Sample((group, "gpu", "bf16"), group, -y, y, share, features)


def test_error_after_a_correction_is_linear_in_the_compute_share() -> None:
    # half the step is compute; the efficiency doubles: the step becomes 0.5/2 + 0.5 = 0.75
    run = Sample(("g", "gpu", "bf16"), "g", 0.0, 0.0, 0.5, {"x": 0.0})
    assert run.error(math.log(2)) == pytest.approx(1 / 0.75 - 1)
    assert run.error(0.0) == 0.0


def test_one_point_transfers_by_feature_distance() -> None:
    # τ² = 0.03, σ_f² = 0.02, σ_0² + ν² = 0.05: denominator 0.1
    kernel = Kernel(("x",), 0.03, 0.02, 0.05 - NU2, (0.5,))
    point = _sample(0.2, x=0.0)
    same, near, far = _sample(0.0, x=0.0), _sample(0.0, x=0.5), _sample(0.0, x=5.0)
    assert kernel.correction(same, [point]) == pytest.approx(0.2 * 0.5)  # (0.03 + 0.02) / 0.1
    assert kernel.correction(near, [point]) == pytest.approx(0.2 * (0.3 + 0.2 / math.e))
    assert kernel.correction(far, [point]) == pytest.approx(0.2 * 0.3, abs=1e-12)


def test_categorical_feature_counts_one_unit_of_difference() -> None:
    kernel = Kernel(("model",), 0.0, 0.1, 0.1 - NU2, (1.0,))
    point = _sample(0.4, model="a")
    assert kernel.correction(_sample(0.0, model="a"), [point]) == pytest.approx(0.4 * 0.5)
    assert kernel.correction(_sample(0.0, model="b"), [point]) == pytest.approx(0.4 * 0.5 / math.e)


def test_first_point_protocol_by_hand() -> None:
    # corrections 0.0 (the point), 0.05, 0.3: copying the point (nothing) leaves errors
    # |e^−0.05 − 1| = 4.9% (inside ±10%) and |e^−0.3 − 1| = 25.9% (outside), as uncalibrated
    runs = [_sample(0.0), _sample(0.05), _sample(0.3)]
    first = score({runs[0].group: runs}, scalar(1.0), every=False)
    assert first.share == pytest.approx(0.5)
    assert first.median == pytest.approx((1 - math.exp(-0.05) + 1 - math.exp(-0.3)) / 2)
    assert (first.worse, first.groups) == (0, 1)
    # every point: point 0.05 leaves |e^0.05 − 1| = 5.1% and |e^−0.25 − 1| = 22% (1 of 2 in);
    # point 0.3 leaves e^0.3 − 1 = 35% and e^0.25 − 1 = 28% (0 of 2)
    every = score({runs[0].group: runs}, scalar(1.0), every=True)
    assert every.share == pytest.approx((0.5 + 0.5 + 0.0) / 3)


def test_maximum_likelihood_tells_shared_from_own() -> None:
    # groups constant within (a shared offset each): a point transfers almost whole
    shared = [
        _sample(m, x=0.1 * i, group=f"s{g}") for g, m in enumerate((0.3, -0.2, 0.25, -0.35)) for i in range(4)
    ]
    k = fit_kernel(shared, ("x",))
    assert k.correction(_sample(0.0, x=3.0), [_sample(1.0, x=0.0)]) > 0.95
    # groups scattered around 0 (nothing shared): a point transfers little
    scatter = [
        _sample(v, x=0.1 * i, group=f"o{g}") for g in range(4) for i, v in enumerate((0.3, -0.3, 0.2, -0.2))
    ]
    k = fit_kernel(scatter, ("x",))
    assert k.correction(_sample(0.0, x=3.0), [_sample(1.0, x=0.0)]) < 0.2
