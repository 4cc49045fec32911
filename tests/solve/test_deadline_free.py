"""The deadline-free table (PreparedJob.deadline_free) reuses the evaluations of the pruned
enumeration (EnumerationMemo) and equals a table enumerated from scratch without the deadline:
same candidates, rejection reasons, slowed offerings; `cheaper_if_later` is unchanged."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from optimizer.inputs.jobs.train import load_job
from optimizer.model.bands import band_for
from optimizer.model.step_model import step_model_for
from optimizer.solve.train import enumerate as enumeration
from optimizer.solve.train import scan
from optimizer.solve.train.enumerate import CandidateTable
from optimizer.solve.train.plan import cheaper_if_later, cheaper_than, plan_job
from optimizer.solve.train.prepare import PreparedJob, prepare_from_offerings, prepare_job

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _prepared(name: str, rows, pareto: bool = False) -> PreparedJob:
    job, base = load_job(EXAMPLES / f"{name}.toml")
    return prepare_job(job, rows, base, pareto=pareto)


def _fresh(prep: PreparedJob) -> CandidateTable:
    return prepare_from_offerings(prep.job, prep.model, prep.offerings, prep.assumptions, prune=False).table


def _count_best_layout_searches(monkeypatch) -> list[int]:
    """A list that grows by one per fastest-layout search of one (offering, instance count)."""
    calls: list[int] = []
    best_layout = scan._best_layout

    def counted(*args, **kwargs):
        calls.append(1)
        return best_layout(*args, **kwargs)

    monkeypatch.setattr(scan, "_best_layout", counted)
    return calls


@pytest.mark.parametrize(
    ("name", "pareto"),
    [
        ("llama7b_10days", False),
        ("llama7b_10days", True),
        ("infeasible_70b_week", False),
        ("llama7b_data_in_s3", False),
    ],
)
def test_deadline_free_table_equals_a_fresh_enumeration(name: str, pareto: bool, rows) -> None:
    prep = _prepared(name, rows, pareto)
    assert prep._memos, "the pruned enumeration keeps its evaluations for the deadline-free table"
    reused, fresh = prep.deadline_free(), _fresh(prep)
    assert reused.candidates == fresh.candidates
    assert reused.rejected == fresh.rejected
    assert reused.slowed == fresh.slowed
    assert reused.pruned_by_deadline == fresh.pruned_by_deadline is False
    assert prep._memos is None and prep.deadline_free() is reused  # built once, memo released


def test_the_deadline_free_table_evaluates_only_what_the_pruned_one_did_not(rows, monkeypatch) -> None:
    """Counted by the fastest-layout search of one (offering, instance count)."""
    calls = _count_best_layout_searches(monkeypatch)
    prep = _prepared("llama7b_10days", rows)
    assert prep.table.pruned_by_deadline
    pruned = len(calls)
    prep.deadline_free()
    reused = len(calls) - pruned
    _fresh(prep)
    fresh = len(calls) - pruned - reused
    # only the counts the pruned table skipped or stopped before are evaluated again
    assert 0 < reused < fresh


@pytest.mark.parametrize("name", ["llama7b_10days", "llama7b_data_in_s3", "gpt3_175b_a100_90days"])
def test_cheaper_if_later_is_unchanged(name: str, rows) -> None:
    prep = _prepared(name, rows)
    result = plan_job(prep.job, prepared=prep)
    assert result.plan is not None and result.cheaper_if_later is not None
    from_scratch = replace(prep, _memos=None, _deadline_free=None)  # enumerates without a memo
    assert cheaper_if_later(from_scratch, result.plan) == result.cheaper_if_later
    assert from_scratch.deadline_free().candidates == prep.deadline_free().candidates


def _full_answer(prep: PreparedJob, plan) -> object:
    """cheaper_if_later over the whole deadline-free table (what the bounded search must equal)."""
    late = [
        c
        for t in (prep.table, prep.deadline_free())
        for c in t.candidates
        if prep.deadline_h is not None and c.hours > prep.deadline_h
    ]
    return cheaper_than(plan, late, prep.budget_usd)


def _with(prep_job, **constraints):
    return prep_job.model_copy(update={"constraints": prep_job.constraints.model_copy(update=constraints)})


@pytest.mark.parametrize(
    ("name", "constraints"),
    [
        ("llama7b_10days", {}),
        ("llama7b_10days", {"deadline_days": 3.0}),
        ("llama7b_10days", {"deadline_days": 30.0}),
        ("llama7b_10days", {"confidence": 0.5}),
        ("llama7b_10days", {"budget_usd": 31000.0}),
        ("llama7b_data_in_s3", {}),
        ("gpt3_175b_a100_90days", {}),
        ("lora_70b_budget", {}),
    ],
)
def test_the_cost_bounded_search_finds_the_full_tables_answer(name, constraints, rows) -> None:
    """cheaper_if_later searches the deadline-free offerings cheapest cost floor first and stops
    at the cheapest late row found (PreparedJob.deadline_free_below): the same row as the whole
    deadline-free table gives, for binding and non-binding deadlines, budgets and confidences."""
    job, base = load_job(EXAMPLES / f"{name}.toml")
    job = _with(job, **constraints)
    prep = prepare_job(job, rows, base)
    result = plan_job(job, prepared=replace(prep))
    assert result.plan is not None
    bounded = cheaper_if_later(prep, result.plan)
    assert prep._deadline_free is None  # the bounded table is not kept as the whole one
    assert bounded == _full_answer(prep, result.plan)


def test_the_cost_floor_bounds_every_row_and_is_the_same_at_every_count(rows) -> None:
    """A row's hours are at least the time lower bound (model FLOPs at the GPU's best
    efficiency, no communication) × the band's smallest multiplier, which falls as 1/count: an
    on-demand offering's floor (rate × count × hours) is the same at 1, 2 and 4 instances, and
    no row of the whole deadline-free table costs less than its offering's floor."""
    prep = _prepared("llama7b_10days", rows)
    setup = prep.job.workload.setup()
    tokens = prep.job.workload.total_tokens()
    table = prep.deadline_free()
    by_offering: dict[int, list] = {}
    for c in table.candidates:
        by_offering.setdefault(id(c.offering), []).append(c)
    q = prep.job.constraints.confidence
    checked = 0
    for cands in by_offering.values():
        off = cands[0].offering
        step = step_model_for(prep.model, cands[0].setup, off.gpu, prep.assumptions)
        band = band_for(off.gpu, setup.precision, setup.stack, prep.assumptions)
        floor = enumeration._floor_of(step, cands[0].setup, tokens, off, 1, q, band)
        assert floor is not None
        assert all(c.cost_usd >= floor * (1 - 1e-9) for c in cands)
        checked += len(cands)
        if off.pricing == "on_demand" and not off.capital_usd_per_instance_hour:
            factor = scan.time_factor(band, q)
            at = [enumeration.cost_floor_usd(step, setup, tokens, off, n, factor) for n in (1, 2, 4)]
            assert at[1] == pytest.approx(at[0], rel=1e-9) and at[2] == pytest.approx(at[0], rel=1e-9)
    assert checked == len(table.candidates) > 100


def test_the_efficiency_ceiling_bounds_every_rows_efficiency(rows) -> None:
    """The cost floors assume no layout beats base efficiency × the hidden-size term
    h / (h + half) of the size curve (efficiency.size_factor: the micro-batch term is < 1):
    every row of the whole deadline-free table achieves at most that, and for Llama-2-7B
    (h = 4096) the term is below 1, so the floor is tighter than at base efficiency."""
    prep = _prepared("llama7b_10days", rows)
    checked = 0
    for c in prep.deadline_free().candidates:
        step = step_model_for(prep.model, c.setup, c.offering.gpu, prep.assumptions)
        assert c.step.efficiency <= step.efficiency_ceiling < step.base_efficiency
        checked += 1
    assert checked > 100


def test_the_bounded_search_evaluates_fewer_offerings(rows, monkeypatch) -> None:
    plan = plan_job(_prepared("llama7b_10days", rows).job, rows).plan
    calls = _count_best_layout_searches(monkeypatch)
    prep = _prepared("llama7b_10days", rows)
    start = len(calls)
    prep.deadline_free_below(plan.cost_usd + 0.01)
    bounded = len(calls) - start
    prep = _prepared("llama7b_10days", rows)
    start = len(calls)
    prep.deadline_free()
    whole = len(calls) - start
    # after the same pruned enumeration, the bounded search skips every offering whose floor is
    # above the cheapest late row (9 fastest-layout searches against 221 at this commit)
    assert 0 < bounded < whole / 4
