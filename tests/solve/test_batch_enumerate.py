"""Batch enumeration from typed catalog rows: reservations, quotas, and the one cost function."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_batch_synth import RTX4090, candidate, offering, owned_resource

from optimizer.errors import ConfigError, Status
from optimizer.inputs.jobs.batch import Quota, Reservation
from optimizer.pricing.offering import cost_usd
from optimizer.solve.batch.enumerate import quota_resource, reservation_resource
from optimizer.solve.batch.grid import TimeGrid
from optimizer.solve.batch.problem import BatchProblem, BatchResult, JobSpec, ScheduledJob
from optimizer.solve.batch.validate import validate_batch

HORIZON_H = 30 * 24.0


def _p5(rows):
    return next(
        r
        for r in rows
        if r.provider == "aws" and r.instance_type == "p5.48xlarge" and r.pricing_model == "reserved_1y"
    )


@pytest.mark.parametrize("bill", ["term", "horizon"])
def test_reservation_commitment_is_cost_usd_of_the_row(rows, bill: str) -> None:
    """bill = term: usd_per_hour × the row's commitment_hours per instance; bill = horizon:
    usd_per_hour × the horizon; both through cost_usd, linear in the instances reserved."""
    r = Reservation(provider="aws", instance="p5.48xlarge", max_instances=3, bill=bill)
    run_on, res = reservation_resource(rows, r, 0, HORIZON_H)
    row = _p5(rows)
    billed_h = row.commitment_hours if bill == "term" else HORIZON_H
    assert res.commitment_usd == pytest.approx(row.usd_per_hour * billed_h)
    assert res.commitment_usd_for(3) == pytest.approx(3 * res.commitment_usd)
    assert res.commitment is not None
    assert res.commitment_usd_for(2) == cost_usd(res.commitment, 2, HORIZON_H).total_usd
    # jobs on the reservation pay nothing more, and carry no term of their own
    assert (run_on.kind, run_on.usd_per_hour, run_on.commitment_hours) == ("reserved", 0.0, 0.0)
    assert run_on.max_instances == 3 and res.offering_key == run_on.key
    assert run_on.key.startswith("reservation#0/aws/p5.48xlarge/")
    assert cost_usd(run_on, 2, 100.0).total_usd == 0.0


def test_reservation_errors_name_the_field(rows) -> None:
    with pytest.raises(ConfigError, match=r"capacity.reservation\[0\].instance.*did you mean"):
        reservation_resource(
            rows, Reservation(provider="aws", instance="p5.48xlarg", max_instances=1), 0, HORIZON_H
        )
    with pytest.raises(ConfigError, match=r"capacity.reservation\[1\].provider"):
        reservation_resource(rows, Reservation(provider="awz", gpu="H100", max_instances=1), 1, HORIZON_H)
    with pytest.raises(ConfigError, match="longer than the reserved_1y term"):
        reservation_resource(
            rows, Reservation(provider="aws", instance="p5.48xlarge", max_instances=1), 0, 9000.0
        )


def test_quota_provider_is_spelled_as_in_the_catalog(rows) -> None:
    q = quota_resource(rows, Quota(provider="LAMBDA", gpu="h100", max_gpus=8), 2)
    assert (q.key, q.provider, q.gpu_id, q.capacity) == ("quota#2", "lambda", "H100-80GB", 8)
    with pytest.raises(ConfigError, match="did you mean 'lambda'"):
        quota_resource(rows, Quota(provider="lamda", gpu="H100", max_gpus=8), 0)


def test_validate_batch_reprices_every_job_with_cost_usd() -> None:
    """A row whose cost is not cost_usd(offering, instances, hours) is a violation."""
    box = offering("box", "owned", "owned", gpu=RTX4090)
    good = candidate(box, 1, 3, 3.0)
    wrong = replace(good, cost_usd=2.0)  # says $2, the offering prices it at $3
    p = BatchProblem.build([JobSpec("a", [wrong])], [owned_resource(box, 1)], 8, TimeGrid(1.0))
    job = p.jobs[0]
    problems = validate_batch(BatchResult(Status.OPTIMAL, p, [ScheduledJob(job, job.rows[0], 0)]))
    assert any("recomputed by cost_usd" in e for e in problems)
