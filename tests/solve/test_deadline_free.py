"""The deadline-free table (PreparedJob.deadline_free) reuses the evaluations of the pruned
enumeration (EnumerationMemo) and equals a table enumerated from scratch without the deadline:
same candidates, rejection reasons, slowed offerings; `cheaper_if_later` is unchanged."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from optimizer.inputs.jobs.train import load_job
from optimizer.solve.train import enumerate as enumeration
from optimizer.solve.train.enumerate import CandidateTable
from optimizer.solve.train.plan import cheaper_if_later, plan_job
from optimizer.solve.train.prepare import PreparedJob, prepare_from_offerings, prepare_job

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _prepared(name: str, rows, pareto: bool = False) -> PreparedJob:
    job, base = load_job(EXAMPLES / f"{name}.toml")
    return prepare_job(job, rows, base, pareto=pareto)


def _fresh(prep: PreparedJob) -> CandidateTable:
    return prepare_from_offerings(prep.job, prep.model, prep.offerings, prep.assumptions, prune=False).table


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
    calls: list[int] = []
    best_layout = enumeration._best_layout

    def counted(*args, **kwargs):
        calls.append(1)
        return best_layout(*args, **kwargs)

    monkeypatch.setattr(enumeration, "_best_layout", counted)
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
