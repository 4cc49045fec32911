"""Owned / purchasable boxes: defaults, overrides and hand-checked costs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optimizer.errors import ConfigError
from optimizer.inputs.gpus import get_gpu
from optimizer.pricing.offering import cost_usd
from optimizer.pricing.offerings import box_offering
from optimizer.pricing.owned import (
    HardwareSpec,
    capital_usd,
    default_hardware,
    effective_usd_per_gpu_hour,
    hardware_from_overrides,
    power_usd_per_hour,
)

# 8 × RTX 4090 at $1,650 each (r/LocalLLaMA, Nov 2024) + $6,000 host (guess), 450 W per GPU
# (TDP) + 500 W host, $0.15/kWh, PUE 1.0, 36 months, 25 % resale.
BOX = HardwareSpec(
    gpu="RTX4090",
    gpus_per_box=8,
    price_per_gpu_usd=1650,
    host_price_usd=6000,
    gpu_power_w=450,
    host_power_w=500,
    electricity_usd_per_kwh=0.15,
    pue=1.0,
    amortisation_months=36,
    resale_fraction=0.25,
    accounting="amortised",
)


def test_hand_checked_8x4090_per_gpu_hour():
    # box price = 8 × 1,650 + 6,000 = 19,200 USD; net of 25 % resale = 14,400 USD
    # amortisation = 36 months × 730 h = 26,280 h -> 14,400 / 26,280 = 0.547945 $/box-hour
    #   = 0.068493 $/GPU-hour when busy 100 % of the time, 0.136986 at 50 %
    # power = (8 × 450 + 500) W = 4.1 kW × 0.15 $/kWh = 0.615 $/box-hour = 0.076875 $/GPU-hour
    # 100 %: 0.068493 + 0.076875 = 0.145368 ; 50 %: 0.136986 + 0.076875 = 0.213861
    assert effective_usd_per_gpu_hour(BOX, 1.0) == pytest.approx(0.145368, abs=1e-6)
    assert effective_usd_per_gpu_hour(BOX, 0.5) == pytest.approx(0.213861, abs=1e-6)
    assert power_usd_per_hour(BOX, 1) == pytest.approx(0.615)
    assert power_usd_per_hour(BOX, 2, utilisation=0.5) == pytest.approx(0.615)
    # in a colocation facility at the Uptime 2023 average PUE 1.58: 4.1 × 1.58 × 0.15 = 0.9717
    colo = BOX.model_copy(update={"pue": 1.58})
    assert power_usd_per_hour(colo, 1) == pytest.approx(0.9717)


def _bought(spec: HardwareSpec):
    return box_offering("buy", spec, get_gpu("RTX4090"), boxes=4)


def test_hand_checked_job_cost_amortised_and_upfront():
    # 2 boxes for 100 h, amortised: capital 2 × 0.547945 × 100 = 109.589 ; power 2 × 0.615 × 100
    cost = cost_usd(_bought(BOX), 2, 100)
    assert cost.capital_usd == pytest.approx(109.589041, abs=1e-5)
    assert cost.running_usd == pytest.approx(123.0)
    assert cost.total_usd == pytest.approx(232.589041, abs=1e-5)
    # upfront: the whole net purchase 2 × 14,400 = 28,800 is charged to the job
    upfront = cost_usd(_bought(BOX.model_copy(update={"accounting": "upfront"})), 2, 100)
    assert (upfront.capital_usd, upfront.running_usd) == pytest.approx((28_800.0, 123.0))
    assert upfront.total_usd == pytest.approx(28_923.0)
    assert capital_usd(BOX, 2) == pytest.approx(28_800.0)


def test_defaults_from_reference():
    rtx4090 = default_hardware("rtx-4090")
    assert (rtx4090.gpus_per_box, rtx4090.price_per_gpu_usd, rtx4090.gpu_power_w) == (8, 1650, 450)
    rtx3090 = default_hardware("3090")
    # host = $4,314 pro build (thinksmart.life) − 4 × $750 used cards = $1,314
    assert (rtx3090.gpus_per_box, rtx3090.price_per_gpu_usd, rtx3090.host_price_usd) == (4, 750, 1314)
    assert rtx3090.gpu_power_w == 350 and rtx3090.accounting == "amortised"
    with pytest.raises(ConfigError, match="no default box for 'A6000'"):
        default_hardware("A6000")


def test_overrides():
    spec = hardware_from_overrides("RTX4090", price_per_gpu_usd=2000, accounting="upfront")
    assert (spec.price_per_gpu_usd, spec.accounting, spec.gpus_per_box) == (2000, "upfront", 8)
    a6000 = hardware_from_overrides("A6000", gpus_per_box=4, price_per_gpu_usd=4500, host_price_usd=3000)
    assert a6000.gpu_power_w == 300  # TDP from the GPU catalog
    with pytest.raises(ConfigError, match="hardware.price_per_gpu: unknown field"):
        hardware_from_overrides("RTX4090", price_per_gpu=1)
    with pytest.raises(ConfigError, match="hardware.gpus_per_box: required for 'A6000'"):
        hardware_from_overrides("A6000", price_per_gpu_usd=4500)
    with pytest.raises(ConfigError, match=r"hardware.resale_fraction: .*less than 1"):
        hardware_from_overrides("RTX4090", resale_fraction=1.5)
    with pytest.raises(ConfigError, match="boxes: 3 exceeds max_boxes = 2"):
        power_usd_per_hour(hardware_from_overrides("RTX4090", max_boxes=2), 3)


@pytest.mark.parametrize("utilisation", [0.0, 1.5, -0.1])
def test_bad_utilisation(utilisation):
    with pytest.raises(ConfigError, match="utilisation"):
        effective_usd_per_gpu_hour(BOX, utilisation)


@given(st.floats(0.01, 1.0), st.floats(0.01, 1.0))
def test_effective_cost_falls_as_utilisation_rises(low, high):
    low, high = sorted((low, high))
    assert effective_usd_per_gpu_hour(BOX, high) <= effective_usd_per_gpu_hour(BOX, low) + 1e-12
