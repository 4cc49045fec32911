"""constraints.memory_confidence: a plan's device peak must fit at a quantile of the memory band.

The memory band is measured ÷ predicted peak memory per GPU: conformal across the development
sources (leave-one-source-out: P10 ×0.8717, P50 ×0.9982, P90 ×1.1432 in fitted.toml before
this widening), then widened in quadrature by the once-scored kept-aside rows' d = 0.43
(benchmarks/new_sources.py, the rule of the training bands): P90 = 0.9982 · exp(hypot(ln(1.1432
/ 0.9982), 0.43)) = 0.9982 · exp(hypot(0.13565, 0.43)) = 0.9982 · exp(0.45089) = ×1.5669.

The job is the LitGPT Phi-3-mini LoRA on one A10G of tests/solve/test_plan_memory_fit_litgpt.py
(22.49 GiB as nvidia-smi reports the card, 1 GiB headroom, no fraction): at the point its
published layout (micro-batch 4, no recompute) fits; asked to fit at P90, the device peak may
use (22.49 − 1) / 1.5669 = 13.71 GiB.
"""

from __future__ import annotations

import math

import pytest

from optimizer import api
from optimizer.errors import ConfigError
from optimizer.solve.train.search_space import Headroom
from tests.solve.test_plan_memory_fit_litgpt import CARD_GIB, HEADROOM_GIB, _job

pytestmark = pytest.mark.usefixtures("isolated")

P90 = 0.9982 * math.exp(math.hypot(math.log(1.1432 / 0.9982), 0.43))


def test_the_headroom_divides_what_is_left_by_the_band_multiplier() -> None:
    # an 80 GiB card, 1 GiB + 5% kept: 75 GiB left; at ×1.5 the prediction may use 50 GiB
    assert Headroom(1.0, 0.05, 1.5).usable_gib(80.0) == pytest.approx(50.0)
    assert Headroom(1.0, 0.05, 1.5).kept_gib(80.0) == pytest.approx(30.0)
    assert Headroom(1.0, 0.05).usable_gib(80.0) == pytest.approx(75.0)  # the point, as before


def test_at_p90_the_plan_fits_the_p90_peak() -> None:
    assert P90 == pytest.approx(1.5669, abs=1e-4)
    point = api.plan(_job(512, 8), offline=True, alternatives=0)["plan"]
    job = _job(512, 8)
    job["constraints"]["memory_confidence"] = 0.9
    safe = api.plan(job, offline=True, alternatives=0)["plan"]
    usable = (CARD_GIB - HEADROOM_GIB) / P90  # 13.71 GiB
    assert usable == pytest.approx(13.71, abs=0.01)
    assert point["memory_gib"]["device"] > usable  # the published layout does not fit at P90
    assert safe["memory_gib"]["device"] <= usable + 0.01
    assert safe["memory_headroom_required_gib"] == pytest.approx(CARD_GIB - usable, abs=0.02)
    assert safe["memory_device_gib_p90"] <= CARD_GIB - HEADROOM_GIB + 0.02
    assert (safe["layout"]["micro_batch"], safe["layout"]["activation_checkpointing"]) != (4, "none")
    assert safe["cost_usd"] >= point["cost_usd"]  # fitting at P90 never makes a plan cheaper


def test_every_plan_reports_its_peak_at_the_band_edges() -> None:
    plan = api.plan(_job(512, 8), offline=True, alternatives=0)["plan"]
    device = plan["memory_gib"]["device"]
    assert plan["memory_device_gib_p90"] == pytest.approx(device * P90, abs=0.02)
    low = 0.9982 * math.exp(-math.hypot(math.log(0.9982 / 0.8717), 0.43))  # ×0.6360
    assert plan["memory_device_gib_p10"] == pytest.approx(device * low, abs=0.02)


@pytest.mark.parametrize("bad", [0.3, 1.0, "high"])
def test_a_confidence_outside_the_range_is_refused(bad: object) -> None:
    job = _job(512, 8)
    job["constraints"]["memory_confidence"] = bad
    with pytest.raises(ConfigError, match="memory_confidence"):
        api.plan(job, offline=True, alternatives=0)
