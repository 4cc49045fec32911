"""A row beyond the solver's integer scale (cpsat/scale.py: 2^40 cents or seconds) is left out
of the single-job model instead of failing the whole plan (issue 29 item 4): any row within the
scale is cheaper; only when every row is beyond it is the plan a ScaleError (exit 2)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from optimizer.inputs.jobs.train import load_job
from optimizer.solve.cpsat.scale import MAX_SOLVER_HOURS, MAX_SOLVER_USD, ScaleError, within_scale
from optimizer.solve.train.model import solve_table
from optimizer.solve.train.prepare import prepare_job

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def table(rows):
    job, base = load_job(EXAMPLES / "llama7b_10days.toml")
    return prepare_job(job, rows, base).table.candidates


def test_within_scale_is_the_two_limits() -> None:
    assert within_scale(MAX_SOLVER_USD, MAX_SOLVER_HOURS)
    assert not within_scale(MAX_SOLVER_USD * 1.001, 1.0)
    assert not within_scale(1.0, MAX_SOLVER_HOURS * 1.001)
    assert not within_scale(float("nan"), 1.0)


def test_a_row_over_the_scale_is_left_out_and_the_rest_still_plan(table) -> None:
    cheapest = min((c for c in table if c.hours <= 240), key=lambda c: c.cost_usd)
    huge = replace(table[0], cost_usd=2 * MAX_SOLVER_USD)  # $2.2e10: beyond 2^40 cents
    endless = replace(table[1], hours=2 * MAX_SOLVER_HOURS)
    result, chosen, _ = solve_table([huge, endless, *table], 240.0, None)
    assert chosen is not None and chosen.cost_usd == cheapest.cost_usd


def test_every_row_over_the_scale_is_a_scale_error(table) -> None:
    over = [replace(c, cost_usd=2 * MAX_SOLVER_USD + i) for i, c in enumerate(table[:3])]
    with pytest.raises(ScaleError, match="2\\^40 cents"):
        solve_table(over, None, None)


def test_cheaper_if_later_skips_rows_past_the_scale(table) -> None:
    """The 'cheaper if later' search never converts a row past the scale (it would raise
    after the plan was solved): such a row is never cheaper."""
    from optimizer.solve.train.plan import cheaper_than

    plan = max(table, key=lambda c: c.cost_usd)
    huge = replace(table[0], cost_usd=2 * MAX_SOLVER_USD)
    cheap = min(table, key=lambda c: c.cost_usd)
    assert cheaper_than(plan, [huge, cheap], None) is cheap
    assert cheaper_than(plan, [huge], None) is None
