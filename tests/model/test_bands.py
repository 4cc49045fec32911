"""Prediction bands (shrinkage toward a wide prior) and the MFU ceiling, against hand arithmetic."""

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


def test_thin_evidence_is_shrunk_toward_the_prior_then_the_stack_toward_its_generation() -> None:
    a = _a(
        bands={
            "hopper/16": (0.8, 1.0, 1.2, 100, 2),  # n = min(100, 5 × 2) = 10 → w = 10/(10+10) = 1/2
            "hopper/16/fsdp": (0.9, 1.1, 1.3, 5, 1),  # n = min(5, 5) = 5 → w = 5/(5+10) = 1/3
        }
    )
    gen10, gen50, gen90 = math.sqrt(0.8 * 0.7), 1.0, math.sqrt(1.2 * 1.6)
    band = band_for(get_gpu("h100"), "bf16", "fsdp", a)
    assert band.p10 == pytest.approx(0.9 ** (1 / 3) * gen10 ** (2 / 3), rel=1e-12)
    assert band.p50 == pytest.approx(1.1 ** (1 / 3) * gen50 ** (2 / 3), rel=1e-12)
    assert band.p90 == pytest.approx(1.3 ** (1 / 3) * gen90 ** (2 / 3), rel=1e-12)
    assert (band.cases, band.sources, band.basis) == (5, 1, "hopper/16/fsdp")
    other = band_for(get_gpu("h100"), "bf16", "megatron-core", a)  # no cell: the generation's
    assert (other.p10, other.p90) == pytest.approx((gen10, gen90), rel=1e-12)
    assert other.basis == "hopper/16" and other.cases == 100


def test_more_evidence_narrows_the_band_toward_the_data() -> None:
    thin = band_for(get_gpu("h100"), "bf16", "x", _a(bands={"hopper/16": (0.9, 1.0, 1.1, 3, 1)}))
    thick = band_for(get_gpu("h100"), "bf16", "x", _a(bands={"hopper/16": (0.9, 1.0, 1.1, 300, 30)}))
    assert thick.p90 / thick.p10 < thin.p90 / thin.p10 < 1.6 / 0.7
    assert thick.p90 == pytest.approx(math.exp((150 * math.log(1.1) + 10 * math.log(1.6)) / 160))


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
