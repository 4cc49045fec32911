"""Owning a box at the work it really does: cost per job, verdict, break-even, flip (by hand)."""

from __future__ import annotations

import pytest

from optimizer.errors import ConfigError
from optimizer.inputs.gpus import get_gpu
from optimizer.pricing.offering import cost_usd
from optimizer.pricing.offerings import box_offering, ownership_terms
from optimizer.pricing.owned import HardwareSpec
from optimizer.pricing.ownership import OwnershipTerms, Usage
from optimizer.pricing.verdict import own_cost_per_job, rent_or_buy

# One 8× RTX 4090 box: 8 × $1,650 + $6,000 host = $19,200; resale 25 % after 36 months
# -> net capital $14,400 = $400 a month; power (8 × 450 W + 500 W) × PUE 1.0 = 4.1 kW
# × $0.15/kWh = $0.615 per busy hour. A job takes 30 h on the box; renting it costs $113.
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
)
TERMS = ownership_terms("buy", BOX)
HOURS, RENT = 30.0, 113.0
POWER = 0.615 * HOURS  # 18.45


def test_terms_of_the_box():
    assert TERMS.net_capital_usd == pytest.approx(14_400)
    assert TERMS.fixed_usd_per_month == pytest.approx(400)
    assert TERMS.power_usd_per_hour == pytest.approx(0.615)


def test_eight_jobs_a_month_by_hand():
    # $400 a month over 8 jobs = $50.00 a job + $18.45 power = $68.45; 8 × 30 h = 240 h of 730
    own = own_cost_per_job(TERMS, 1, HOURS, Usage(jobs_per_month=8))
    assert own.fixed_usd == pytest.approx(50.0)
    assert own.total_usd == pytest.approx(68.45)
    assert own.utilisation == pytest.approx(240 / 730)
    # the planners' one cost function charges the same
    off = box_offering("buy", BOX, get_gpu("RTX4090"), boxes=1, usage=Usage(jobs_per_month=8))
    cost = cost_usd(off, 1, HOURS)
    assert (cost.capital_usd, cost.running_usd) == pytest.approx((50.0, 18.45))


def test_verdict_at_eight_jobs_a_month_by_hand():
    v = rent_or_buy(TERMS, 1, HOURS, POWER, RENT, 4.0, Usage(jobs_per_month=8))
    assert v.choice == "own"
    assert v.own_usd_per_job == pytest.approx(68.45)
    # break-even: 14,400 / (113 − 18.45) = 152.30 jobs = 19.04 months at 8 a month
    assert v.break_even_jobs == pytest.approx(152.301, abs=1e-3)
    assert v.break_even_months == pytest.approx(19.0376, abs=1e-3)
    # over 36 months: own 14,400 + 288 × 18.45 = 19,713.60; rent 288 × 113 = 32,544
    assert v.own_usd_holding == pytest.approx(19_713.60)
    assert v.rent_usd_holding == pytest.approx(32_544.0)
    # flip: 400 / (113 − 18.45) = 4.23057 jobs a month × 30 h / 730 h = 17.386 %
    assert v.flip_utilisation == pytest.approx(0.173859, abs=1e-6)
    # just below the flip rent wins, just above owning does
    low = rent_or_buy(TERMS, 1, HOURS, POWER, RENT, 4.0, Usage(duty_cycle=0.17))
    high = rent_or_buy(TERMS, 1, HOURS, POWER, RENT, 4.0, Usage(duty_cycle=0.18))
    assert (low.choice, high.choice) == ("rent", "own")


def test_table_at_ten_to_hundred_percent_by_hand():
    v = rent_or_buy(TERMS, 1, HOURS, POWER, RENT, 4.0, Usage(jobs_per_month=8))
    rows = {r.utilisation: r for r in v.table}
    assert set(rows) == {0.10, 0.25, 0.50, 1.00}
    # 10 %: 73 h / 30 h = 2.43333 jobs; 400 / 2.43333 = 164.3836 + 18.45 = 182.8336 a job
    assert rows[0.10].own_usd_per_job == pytest.approx(182.8336, abs=1e-3)
    assert rows[0.10].own_usd_per_month == pytest.approx(400 + 2.43333 * 18.45, abs=1e-3)
    assert rows[0.10].rent_usd_per_month == pytest.approx(2.43333 * 113, abs=1e-3)
    assert rows[0.10].choice == "rent"
    # 100 %: 24.333 jobs; 400 / 24.333 = 16.438 + 18.45 = 34.888 a job
    assert rows[1.00].own_usd_per_job == pytest.approx(34.888, abs=1e-3)
    assert rows[1.00].choice == "own"


def test_back_to_back_buying_wins_and_breaks_even_to_the_dollar():
    # no workload stated: 100 %, 730 / 30 = 24.333 jobs a month
    v = rent_or_buy(TERMS, 1, HOURS, POWER, RENT, 4.0, Usage())
    assert v.utilisation == pytest.approx(1.0) and v.choice == "own"
    # 14,400 / (24.3333 × (113 − 18.45)) = 6.25892 months; 152.30 jobs (as at 8 a month)
    assert v.break_even_months == pytest.approx(6.25892, abs=1e-4)
    assert v.break_even_jobs == pytest.approx(152.30, abs=0.01)
    # at the break-even both have cost 152.30 × 113 = $17,210 (to the dollar)
    jobs = v.break_even_jobs
    assert round(14_400 + jobs * POWER) == round(jobs * RENT) == 17_210


def test_ops_fee_and_duty_cycle_by_hand():
    hosted = ownership_terms("buy", BOX.model_copy(update={"ops_usd_per_month": 200.0}))
    # (400 + 200) / 8 = 75 a job; break-even 14,400 / (8 × 94.55 − 200) = 25.881 months
    v = rent_or_buy(hosted, 1, HOURS, POWER, RENT, 4.0, Usage(jobs_per_month=8))
    assert v.own_fixed_usd_per_job == pytest.approx(75.0)
    assert v.break_even_months == pytest.approx(25.8807, abs=1e-4)
    # duty cycle 25 %: 6.0833 jobs a month -> 400 / 6.0833 = 65.753 a job
    own = own_cost_per_job(TERMS, 1, HOURS, Usage(duty_cycle=0.25))
    assert own.fixed_usd == pytest.approx(65.7534, abs=1e-4)
    off = box_offering("buy", BOX, get_gpu("RTX4090"), boxes=1, usage=Usage(duty_cycle=0.25))
    assert cost_usd(off, 1, HOURS).capital_usd == pytest.approx(own.fixed_usd)


def test_more_jobs_than_the_box_can_run_are_capped_and_said():
    # 40 jobs of 30 h = 1,200 h > 730 h: the box does 24.33 of them (100 %), each carrying $16.44
    v = rent_or_buy(TERMS, 1, HOURS, POWER, RENT, 4.0, Usage(jobs_per_month=40))
    assert v.saturated and v.utilisation == pytest.approx(1.0)
    assert v.own_fixed_usd_per_job == pytest.approx(400 * 30 / 730)


def test_rent_when_power_alone_costs_more_than_renting():
    v = rent_or_buy(TERMS, 1, HOURS, POWER, 10.0, 4.0, Usage(jobs_per_month=8))
    assert v.choice == "rent" and v.flip_utilisation is None and v.break_even_jobs is None


def test_owned_box_is_power_only_and_needs_no_price():
    owned = ownership_terms("owned", BOX)
    v = own_cost_per_job(owned, 2, HOURS, Usage(jobs_per_month=8))
    assert v.fixed_usd == 0.0 and v.power_usd == pytest.approx(2 * POWER)
    assert ownership_terms("owned", BOX, charge_capital=True).charged


def test_upfront_with_a_stated_rate_is_bad_input():
    upfront = OwnershipTerms(14_400, 36, 0.615, upfront=True)
    # upfront alone: the job carries the whole net capital
    assert own_cost_per_job(upfront, 1, HOURS, Usage()).fixed_usd == pytest.approx(14_400)
    with pytest.raises(ConfigError, match="upfront"):
        own_cost_per_job(upfront, 1, HOURS, Usage(jobs_per_month=8))


def test_both_rate_and_duty_cycle_is_bad_input():
    with pytest.raises(ConfigError, match="not both"):
        Usage(jobs_per_month=8, duty_cycle=0.5)


def test_upfront_verdict_breaks_even_at_back_to_back():
    # upfront: this job carries 14,400 + 18.45 = 14,418.45 -> rent; break-even still 152.30
    # jobs, in months at back to back (730 / 30 = 24.333 a month): 6.2589
    upfront = OwnershipTerms(14_400, 36, 0.615, upfront=True)
    v = rent_or_buy(upfront, 1, HOURS, POWER, RENT, 4.0, Usage())
    assert v.choice == "rent" and v.own_usd_per_job == pytest.approx(14_418.45)
    assert v.break_even_jobs == pytest.approx(152.30, abs=0.01)
    assert v.break_even_jobs_per_month == pytest.approx(730 / 30)
    assert v.break_even_months == pytest.approx(6.25892, abs=1e-4)
