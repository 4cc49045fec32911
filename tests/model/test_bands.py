"""Prediction bands (relative to a point that carries their P50; the calibrated band shrunk toward
a wide prior) and the MFU ceiling, against hand arithmetic."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optimizer.inputs.gpus import get_gpu
from optimizer.model.bands import band_for, calibrated_band, quantile_multiplier
from optimizer.model.ceilings import mfu_ceiling
from optimizer.model.cluster import Cluster
from optimizer.model.fitted import FittedConstants
from optimizer.model.presets import get_preset
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.step_time import training_step_time

# standard normal quantiles from a printed table (Abramowitz & Stegun 26.2): z(0.8), z(0.9)
Z80, Z90 = 0.8416, 1.2816


def _a(**fit: object) -> PerfAssumptions:
    # the shrinkage stated here (C = 5 cases per source, K = 10 prior cases), not the defaults
    return PerfAssumptions(
        fitted=FittedConstants(**fit),  # type: ignore[arg-type]
        band_cases_per_source=5.0,
        band_prior_cases=10.0,
    )


def test_a_generation_without_measured_runs_gets_the_prior_not_a_borrowed_band() -> None:
    a = _a(bands={"hopper/16": (0.95, 1.0, 1.05, 500, 20)})
    band = band_for(get_gpu("mi300x"), "bf16", "torchtitan", a)
    assert (band.p10, band.p50, band.p90) == (0.7, 1.0, 1.6)  # PerfAssumptions.band_prior
    assert (band.cases, band.sources, band.basis) == (0, 0, "prior")


def test_a_generation_without_its_own_band_gets_the_pooled_thin_band_when_fitted() -> None:
    a = _a(bands={"hopper/16": (0.8, 1.0, 1.2, 100, 6), "any": (0.4, 0.9, 2.7, 50, 3)})
    band = band_for(get_gpu("mi300x"), "bf16", "torchtitan", a)
    # relative to the point, which already carries the pooled centre 0.9
    assert (band.p10, band.p50, band.p90) == pytest.approx((0.4 / 0.9, 1.0, 3.0))
    # no run of this generation backs it: 0 cases, 0 sources (the output says so)
    assert (band.centre, band.basis, band.cases, band.sources) == (0.9, "any", 0, 0)


def test_a_band_is_relative_to_the_point_which_carries_its_p50() -> None:
    a = _a(bands={"hopper/16": (0.72, 0.9, 1.17, 100, 6)})
    band = band_for(get_gpu("h100"), "bf16", "fsdp", a)  # the stack is not a band group
    assert (band.p10, band.p50, band.p90) == pytest.approx((0.8, 1.0, 1.3))
    assert band.centre == 0.9 and band.multiplier(0.5) == 1.0


def _h100_step(a: PerfAssumptions):  # type: ignore[no-untyped-def]
    setup = TrainingSetup(seq_len=2048, precision="bf16", stack="fsdp")
    layout = Layout(dp=8, micro_batch=2, zero_stage=3, grad_accum=4)
    return training_step_time(get_preset("llama-2-7b"), setup, layout, Cluster(get_gpu("h100"), 8, 1), a)


@given(st.floats(0.3, 0.99), st.floats(0.5, 2.0), st.floats(1.01, 3.0))
def test_the_point_is_the_p50_of_its_band(p10: float, p50: float, p90: float) -> None:
    # no ceiling in the way: the point step is the unfitted-band step × the band's P50, and the
    # band's own P50 of that point is the point itself (issue 44: point == P50 in every group)
    base = replace(_a(ceilings={}), mfu_ceiling_unmeasured=1.0)
    plain = _h100_step(base)
    fitted = replace(base, fitted=FittedConstants(bands={"hopper/16": (p10 * p50, p50, p90 * p50, 10, 5)}))
    point = _h100_step(fitted)
    assert point.time_s == pytest.approx(plain.time_s * p50, rel=1e-9)
    band = band_for(get_gpu("h100"), "bf16", "fsdp", fitted)
    assert point.time_s * band.multiplier(0.5) == pytest.approx(plain.time_s * p50, rel=1e-9)
    assert (band.p10, band.p90) == pytest.approx((p10, p90), rel=1e-9)


def test_quantiles_follow_a_split_lognormal_through_the_three_points() -> None:
    band = (0.8, 1.0, 1.5)
    assert quantile_multiplier(band, 0.9) == pytest.approx(1.5)
    assert quantile_multiplier(band, 0.1) == pytest.approx(0.8)
    assert quantile_multiplier(band, 0.5) == pytest.approx(1.0)
    assert quantile_multiplier(band, 0.8) == pytest.approx(1.5 ** (Z80 / Z90), rel=1e-3)
    assert quantile_multiplier(band, 0.2) == pytest.approx(0.8 ** (Z80 / Z90), rel=1e-3)


@given(st.floats(0.3, 0.99), st.floats(1.0, 3.0), st.floats(0.5, 0.98), st.floats(0.001, 0.01))
def test_a_higher_confidence_never_plans_a_shorter_run(p10: float, p90: float, q: float, dq: float) -> None:
    band = (p10, 1.0, p90)
    assert quantile_multiplier(band, q + dq) >= quantile_multiplier(band, q) - 1e-12


def test_the_ceiling_is_the_best_measured_run_when_there_are_enough() -> None:
    a = _a(ceilings={"hopper/16": (0.6, 115, "dgx-run"), "ada/16": (0.48, 1, "one-run")})
    c = mfu_ceiling(get_gpu("h100"), "bf16", a)
    assert (c.mfu, c.measured, c.case_id) == (0.6, True, "dgx-run")
    thin = mfu_ceiling(get_gpu("rtx4090"), "bf16", a)  # one run: the guess, not that run
    assert (thin.mfu, thin.measured) == (0.5, False)
    assert mfu_ceiling(get_gpu("b200"), "fp8", a).mfu == 0.4
    assert mfu_ceiling(get_gpu("b200"), "fp8", replace(a, mfu_ceiling_unmeasured_fp8=0.3)).mfu == 0.3


def _step(a: PerfAssumptions):  # type: ignore[no-untyped-def]
    gpu = get_gpu("rtx3090")
    setup = TrainingSetup(seq_len=2048, precision="bf16", method="lora", lora_rank=8)
    return training_step_time(
        get_preset("llama-2-7b"), setup, Layout(micro_batch=4), Cluster(gpu, 1, 1, 0.0), a
    )


def test_a_prediction_above_the_ceiling_is_slowed_to_it_and_flagged() -> None:
    fast = _a(ceilings={}, train={"all": 2.0})  # a fit that makes the card look very fast
    free = _step(replace(fast, mfu_ceiling_unmeasured=1.0))
    assert free.mfu > 0.5 and free.mfu_unclipped is None
    clipped = _step(replace(fast, mfu_ceiling_unmeasured=0.25))
    assert clipped.mfu == pytest.approx(0.25)
    assert clipped.mfu_unclipped == pytest.approx(free.mfu)
    assert clipped.time_s == pytest.approx(free.time_s * free.mfu / 0.25)
    assert clipped.tokens_per_s * clipped.time_s == pytest.approx(free.tokens_per_s * free.time_s)
    assert "clipped to 25%" in clipped.ceiling_note


def test_a_users_own_efficiency_is_never_clipped() -> None:
    a = replace(_a(), efficiency=0.95, mfu_ceiling_unmeasured=0.1)
    step = _step(a)
    assert step.mfu > 0.1 and step.mfu_unclipped is None and not step.ceiling_note


def test_the_calibrated_band_is_shrunk_toward_the_prior_once() -> None:
    # 12 cases from 2 sources: n = min(12, 5 × 2) = 10, w = 10 / (10 + 10) = 1/2
    band = calibrated_band(_a(bands={"calibrated": (0.9, 1.1, 1.2, 12, 2)}))
    # half-way between data and prior (0.7, 1.0, 1.6) in log space: geometric means
    assert band.p10 == pytest.approx(math.sqrt(0.9 * 0.7))  # 0.7937
    assert band.p50 == pytest.approx(math.sqrt(1.1 * 1.0))  # 1.0488
    assert band.p90 == pytest.approx(math.sqrt(1.2 * 1.6))  # 1.3856
    # shrinking twice would weigh the data 1 - (1 - 1/2)^2 = 3/4: a narrower P90 of 1.2^0.75 × 1.6^0.25
    assert band.p90 > 1.2**0.75 * 1.6**0.25 + 0.05
    assert (band.cases, band.sources, band.basis) == (12, 2, "calibrated")
    prior = calibrated_band(_a())
    assert (prior.p10, prior.p50, prior.p90, prior.basis) == (0.7, 1.0, 1.6, "prior")
