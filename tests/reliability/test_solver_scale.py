"""In-range values that would overflow the solver's integers (issue 29 item 4): the largest
scale is stated (optimizer/solve/cpsat/scale.py: 2^40 cents or seconds) and every number that
could pass it is refused at input (exit 2, the file, the field and the allowed maximum) or,
when only the product of in-range values passes it, before the model is built (exit 2 naming
the value and the limit), never a wrapped integer or an internal error."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from optimizer.pricing.catalog import bundled_path
from optimizer.solve.cpsat.scale import (
    MAX_SOLVER_INT,
    MAX_SOLVER_USD,
    ScaleError,
    budget_cents,
    deadline_seconds,
    to_cents,
    to_seconds,
)

LORA = (
    'name = "x"\n[model]\npreset = "llama-3-8b"\n[workload]\nkind = "lora"\ntokens = 1e9\n'
    "seq_len = 2048\nglobal_batch = 16\n[constraints]\ndeadline_days = 10\n"
)


def test_the_scale_is_2_to_the_40_and_checked_both_ways() -> None:
    # 2^40 = 1,099,511,627,776 cents = $10,995,116,277.76; in seconds 34,841 years
    assert MAX_SOLVER_INT == 1_099_511_627_776
    assert to_cents(10_995_116_277.76) == MAX_SOLVER_INT
    assert to_seconds(1_099_511_627_776 / 3600) == MAX_SOLVER_INT
    for bad in (10_995_116_278.0, 1e300, math.inf, math.nan):
        with pytest.raises(ScaleError, match=r"at most 10,995,116,278 USD \(2\^40 cents\)"):
            to_cents(bad)
    with pytest.raises(ScaleError, match="2\\^40 seconds"):
        to_seconds(1e12)
    # limits above the scale are the scale (every cost in a model is within it already)
    assert budget_cents(1e30) == MAX_SOLVER_INT
    assert deadline_seconds(1e30) == MAX_SOLVER_INT
    assert MAX_SOLVER_USD > 1e10  # the largest budget a job file takes (limits.MAX_USD) fits


@pytest.mark.parametrize(
    ("section", "field", "allowed"),
    [
        (
            '[[pricing.prices]]\ngpu = "H100"\nusd_per_gpu_hour = 1e15\n',
            "pricing.prices[0].usd_per_gpu_hour",
            "≤ 200",
        ),
        (
            '[[pricing.prices]]\ngpu = "H100"\nusd_per_hour = 1e300\n',
            "pricing.prices[0].usd_per_hour",
            "≤ 12800",
        ),
        (
            '[[pricing.rows]]\nprovider = "me"\ninstance = "box"\ngpu = "H100"\ngpus_per_instance = 8\n'
            "usd_per_gpu_hour = 2.0\nmax_instances = 10000000000000000000000\n",
            "pricing.rows[0].max_instances",
            "≤ 1,000,000",
        ),
    ],
)
def test_huge_prices_and_counts_in_a_job_file_are_bad_input(ccopt, tmp_path, section, field, allowed) -> None:
    job = tmp_path / "job.toml"
    job.write_text(LORA + section)
    run = ccopt("plan", str(job), "--alternatives", "0")
    assert run.code == 2, run.err
    assert run.err.count("\n") == 1 and str(job) in run.err and field in run.err and allowed in run.err, (
        run.err
    )


@pytest.mark.parametrize(
    ("column", "value", "allowed"),
    [("max_instances", "10000000", "1000000"), ("usd_per_hour", "1e300", "12800")],
)
def test_huge_numbers_in_a_prices_csv_are_bad_input(ccopt, tmp_path, column, value, allowed) -> None:
    with bundled_path().open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    rows[0][column] = value
    path = tmp_path / "prices.csv"
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    job = tmp_path / "job.toml"
    job.write_text(LORA)
    run = ccopt("plan", str(job), "--prices", str(path), "--alternatives", "0")
    assert run.code == 2, run.err
    assert run.err.count("\n") == 1 and str(path) in run.err and column in run.err and allowed in run.err, (
        run.err
    )


def test_a_plan_past_the_scale_is_named_before_the_model_is_built(ccopt, tmp_path: Path) -> None:
    """Llama 3.1 405B on 10^15 tokens on H100s at the largest price a job file takes ($200 a
    GPU-hour; each value in range): the cheapest plan is about 6 × 405e9 × 1e15 FLOPs / (~1e15
    FLOP/s × ~0.4) ≈ 1.7e9 GPU-hours ≈ $3e11 — every row over the scale ($1.1e10): exit 2
    naming the cost and the limit. (At catalog prices the cheapest rows, ~$8e9, are within
    it: they plan, the rows over it left out: tests/solve/test_scale_rows.py.)"""
    job = tmp_path / "job.toml"
    job.write_text(
        '[model]\npreset = "llama-3.1-405b"\n[workload]\nkind = "pretrain"\ntokens = 1e15\n'
        'seq_len = 4096\nglobal_batch = 1024\n[constraints]\ngpu_types = ["H100-80GB"]\n'
        '[[pricing.prices]]\ngpu = "H100"\nusd_per_gpu_hour = 200\n'
    )
    run = ccopt("plan", str(job), "--alternatives", "0")
    assert run.code == 2, run.err
    assert "beyond the solver's integer scale" in run.err and "10,995,116,278 USD" in run.err, run.err
