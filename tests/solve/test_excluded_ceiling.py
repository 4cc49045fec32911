"""The excluded-offering lines (solve/train/excluded.py) search the added offerings under a cost
ceiling that falls to the cheapest added row meeting the job; the line must name the same plan
as a search of every added offering with no ceiling at all, solved afterwards."""

from __future__ import annotations

from pathlib import Path

import pytest

from optimizer.api.job_files import rows_if_cloud
from optimizer.inputs.jobs.train import load_job
from optimizer.pricing.offerings import job_offerings
from optimizer.solve.cpsat.scale import MAX_SOLVER_HOURS
from optimizer.solve.train.excluded import SAME_COST_USD, _cheapest_added, _relaxations
from optimizer.solve.train.model import solve_table
from optimizer.solve.train.plan import plan_job
from optimizer.solve.train.prepare import prepare_from_offerings, prepare_job
from optimizer.solve.train.scan import CostCeiling

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("name", ["llama7b_10days.toml", "llama7b_10days_capacity_block.toml"])
def test_excluded_lines_match_an_uncapped_search(name: str) -> None:
    job, base = load_job(EXAMPLES / name)
    rows, _ = rows_if_cloud(job, job.constraints.cloud, None, True)
    prep = prepare_job(job, rows, base)
    best = plan_job(job, rows, base, alternatives=0, prepared=prep).plan
    assert best is not None and rows is not None
    relaxations = _relaxations(job.constraints)
    assert relaxations  # both examples exclude spot at least
    for update, _ in relaxations:
        capped = _cheapest_added(prep, rows, update, None, best.cost_usd)
        constraints = job.constraints.model_copy(update=update)
        have = {(o.key, o.max_instances) for o in prep.offerings}
        added = [o for o in job_offerings(rows, constraints) if (o.key, o.max_instances) not in have]
        if not added:
            assert capped is None
            continue
        relaxed = job.model_copy(update={"constraints": constraints})
        table = prepare_from_offerings(relaxed, prep.model, added, prep.assumptions, slack_stop=True).table
        full = (
            solve_table(table.candidates, prep.deadline_h, prep.budget_usd)[1] if table.candidates else None
        )
        if full is None or full.cost_usd >= best.cost_usd - SAME_COST_USD:
            assert capped is None
        else:
            assert capped is not None
            assert (capped.offering.key, capped.instances, capped.layout) == (
                full.offering.key,
                full.instances,
                full.layout,
            )
            assert capped.cost_usd == pytest.approx(full.cost_usd, abs=0.01)


def test_a_meeting_ceiling_falls_only_on_rows_the_solver_takes() -> None:
    # deadline 10 h = 36,000 s, budget $100 = 10,000 cents (solve/cpsat/scale.py rounding)
    ceiling = CostCeiling(500.0, deadline_h=10.0, budget_usd=100.0, meeting=True)
    ceiling.lower(50.0, 11.0)  # late
    ceiling.lower(150.0, 9.0)  # over the budget
    ceiling.lower(60.0, 10.0 + 0.5 / 3600)  # 36,001 s: past the deadline in whole seconds
    assert ceiling.usd == 500.0
    ceiling.lower(80.0, 10.0)  # exactly on time and within budget: its cost plus one cent
    assert ceiling.usd == pytest.approx(80.01)
    ceiling.lower(90.0, 5.0)  # a dearer row that meets the job leaves it where it is
    assert ceiling.usd == pytest.approx(80.01)


def test_a_late_ceiling_falls_only_on_rows_the_cheaper_plan_can_be() -> None:
    # plan.cheaper_than takes a late row within the budget and the solver's scale only
    ceiling = CostCeiling(500.0, deadline_h=10.0, budget_usd=100.0)
    ceiling.lower(50.0, 9.0)  # on time
    ceiling.lower(150.0, 11.0)  # over the budget
    ceiling.lower(60.0, 2 * MAX_SOLVER_HOURS)  # past the solver's scale in hours
    assert ceiling.usd == 500.0
    ceiling.lower(80.0, 11.0)
    assert ceiling.usd == 80.0
