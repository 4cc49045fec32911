"""Re-planning a job under way (issue 45): a job 40% done and 10% behind schedule, its options
(keep, grow, switch) and their costs derived by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from optimizer.inputs.gpus import load_gpus
from optimizer.model.goodput import Goodput
from optimizer.model.memory import MemoryBreakdown
from optimizer.model.setup import Layout
from optimizer.model.step_time import StepTime
from optimizer.pricing.offering import Offering
from optimizer.solve.train.enumerate import Candidate
from optimizer.solve.train.replan import (
    Remaining,
    SwitchCosts,
    best_per_kind,
    choose,
    replan_options,
    slowness,
)

GPUS = load_gpus()


def _offering(gpu: str, provider: str, usd_per_hour: float) -> Offering:
    return Offering(
        key=f"{provider}-{gpu}",
        kind="cloud",
        provider=provider,
        instance=f"{gpu}-8x",
        region="r",
        pricing="on_demand",
        gpu=GPUS[gpu],
        gpus_per_instance=8,
        inter_node_gbps=400.0,
        usd_per_hour=usd_per_hour,
    )


def _row(off: Offering, instances: int, hours: float) -> Candidate:
    """`instances` of `off` finishing the REST of the job in `hours` (point prediction, no start-up)."""
    step = StepTime(2.0, 2.0, 0.0, 0.0, 1.0, 1.0, 0.5, 0.5, 0.5, calibrated=False)
    return Candidate(
        off,
        instances,
        Layout(dp=8 * instances),
        MemoryBreakdown(10, 10, 20, 5, 0, 1),
        step,
        steps=1000,
        hours=hours,
        cost_usd=off.usd_per_hour * instances * hours,
    )


# The job: 100 h predicted on 1× H100 box at $10/h; deadline 100 h; budget $1,000. After 44 h it
# has done 40% of its tokens: the model predicted 40 h for them, so it runs 10% behind (r = 1.1).
# The rows are for the remaining 60%.
HERE = _offering("H100-80GB", "p", 10.0)
CURRENT = _row(HERE, 1, 60.0)  # the rest on the current box: 60 h predicted
GROWN = _row(HERE, 2, 30.0)  # two boxes: 30 h predicted
B200 = _row(_offering("B200", "q", 12.0), 1, 40.0)  # another GPU type elsewhere: 40 h at its band
H100_ELSEWHERE = _row(_offering("H100-80GB", "q", 9.0), 1, 60.0)  # the same GPU type, cheaper
# a 98 GB checkpoint (7e9 params × 14 bytes: bf16 weights + fp32 master + Adam m, v) at 5 Gbit/s,
# a 20-minute restart, egress at $0.09/GB (AWS's first 10 TB tier, provider_storage.csv)
COSTS = SwitchCosts(checkpoint_gb=98.0, transfer_gbps=5.0, restart_minutes=20.0, egress_usd_per_gb=0.09)
# 100 − 44 = 56 h left; $1,000 − 44 h × $10 = $560 left
LEFT = Remaining(deadline_h=56.0, budget_usd=560.0)


def test_forty_percent_done_ten_percent_behind_by_hand() -> None:
    # r = (44 h elapsed) / (60 h × 0.4/0.6 = 40 h predicted for the tokens done) = 1.1
    r = slowness(CURRENT, 0.4 / 0.6, 44.0)
    assert r == pytest.approx(1.1)
    options = replan_options([CURRENT, GROWN, B200, H100_ELSEWHERE], CURRENT, r, COSTS)
    by = {(o.kind, o.row.offering.provider, o.row.offering.gpu_id, o.row.instances): o for o in options}
    keep = by[("keep", "p", "H100-80GB", 1)]
    # keep: 60 h × 1.1 = 66 h, $660: past the 56 h left (and over the $560)
    assert (keep.hours, keep.cost_usd) == (pytest.approx(66.0), pytest.approx(660.0))
    assert not keep.fits(LEFT)
    grow = by[("grow", "p", "H100-80GB", 2)]
    # grow: 20 min restart + 30 h × 1.1 = 33.333 h; 2 × $10 × 33.333 h = $666.67: in time, over budget
    assert grow.hours == pytest.approx(33.3333, abs=1e-4)
    assert grow.cost_usd == pytest.approx(666.67, abs=0.01)
    assert not grow.fits(LEFT)
    # transfer: 98e9 B × 8 / 5e9 bit/s = 156.8 s = 0.043556 h
    assert COSTS.transfer_h == pytest.approx(0.043556, abs=1e-6)
    switch = by[("switch", "q", "B200", 1)]
    # switch to B200: 0.33333 + 0.043556 + 40 h (its band, unmeasured) = 40.3769 h;
    # $12 × 40.3769 = $484.52, + egress 98 GB × $0.09 = $8.82 → $493.34: fits
    assert switch.hours == pytest.approx(40.3769, abs=1e-4)
    # switching: the egress + the B200 box's 0.376889 h while nothing trains × $12 = $4.52
    assert switch.egress_usd == pytest.approx(8.82)
    assert switch.switch_usd == pytest.approx(8.82 + 4.5227, abs=1e-3)
    # the grow's switching: its two boxes idle through the 20-minute restart, 2 × $10 × 1/3 h
    assert grow.switch_usd == pytest.approx(6.6667, abs=1e-4) and grow.egress_usd == 0.0
    assert switch.cost_usd == pytest.approx(493.34, abs=0.01)
    assert switch.fits(LEFT)
    same_gpu = by[("switch", "q", "H100-80GB", 1)]
    # the same GPU type elsewhere runs at the job's own measured speed: 0.377 + 60 × 1.1 = 66.377 h, late
    assert same_gpu.hours == pytest.approx(66.3769, abs=1e-4) and same_gpu.measured
    assert not same_gpu.fits(LEFT)
    assert choose(options, LEFT) is switch
    best = best_per_kind(options, LEFT)
    assert set(best) == {"keep", "grow", "switch"} and best["switch"] is switch


def test_keep_wins_when_the_limits_allow_it() -> None:
    # a 70 h deadline left and no budget: keep (66 h, $660) is cheapest with no switching
    # ($660 < grow's $666.67; the B200 switch ($493.34) is cheaper still, so remove it)
    r = 1.1
    options = replan_options([CURRENT, GROWN], CURRENT, r, COSTS)
    choice = choose(options, Remaining(deadline_h=70.0, budget_usd=None))
    assert choice is not None and choice.kind == "keep" and choice.cost_usd == pytest.approx(660.0)


def _with_fixed(row: Candidate, startup_h: float, conversion_h: float) -> Candidate:
    """`row` with a start-up before and a checkpoint conversion after its running hours."""
    running_h = row.hours
    goodput = Goodput(running_h, 0.0, 0.0, startup_h, 0.0, row.gpus, 0.0, 1.0, conversion_h=conversion_h)
    hours = startup_h + running_h + conversion_h
    return replace(
        row, hours=hours, cost_usd=row.offering.usd_per_hour * row.instances * hours, goodput=goodput
    )


def test_near_the_end_the_fixed_hours_do_not_bias_the_slowness() -> None:
    # 90% done, on time: the rest's row is 0.5 h start-up + 10 h running + 2 h conversion. The
    # tokens done took 9 × 10 h = 90 h after the 0.5 h start-up, so r = 90 / (10 × 9) = 1.0.
    # Scaling the conversion with the tokens would give 90 / (12 × 9) = 0.83 (wrongly fast).
    current = _with_fixed(_row(HERE, 1, 10.0), 0.5, 2.0)
    assert slowness(current, 9.0, 90.5) == pytest.approx(1.0)


def test_a_grow_pays_its_added_instances_start_up() -> None:
    # rest on 1 box: 0.5 + 10 + 2 h; on 2 boxes: 0.5 + 5 + 2 h; $10 per box-hour, r = 1.
    current = _with_fixed(_row(HERE, 1, 10.0), 0.5, 2.0)
    grown = _with_fixed(_row(HERE, 2, 5.0), 0.5, 2.0)
    options = replan_options([current, grown], current, 1.0, COSTS)
    grow = next(o for o in options if o.kind == "grow")
    # wall: 1/3 h restart + 5 h running + 2 h conversion (the added box starts up while the
    # first keeps training); cost: 2 × $10 × 7.3333 h + the added box's 0.5 h start-up × $10
    assert grow.hours == pytest.approx(7.3333, abs=1e-4)
    assert grow.cost_usd == pytest.approx(146.667 + 5.0, abs=1e-3)
    assert grow.switch_usd == pytest.approx(6.6667 + 5.0, abs=1e-3)
    keep = next(o for o in options if o.kind == "keep")
    # keep: 10 h running + 2 h conversion, no restart, no start-up (it is running)
    assert keep.hours == pytest.approx(12.0) and keep.switch_usd == 0.0
