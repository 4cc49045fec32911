"""Why each scheduled job of a batch runs where it runs, in words.

A job sent to the cloud when owned boxes or a reservation could have carried it is explained
by the jobs that occupied them during its window ("owned boxes busy with j3, j7 from day 4.0
to 9.0"); a job on owned hardware by what it saves against its cheapest cloud row.
"""

from __future__ import annotations

from optimizer.solve.batch.problem import BatchResult, JobRows, Row, ScheduledJob
from optimizer.units import HOURS_PER_DAY

__all__ = ["placements"]

_LOCAL_KINDS = ("owned", "reserved")


def _day(hours: float) -> str:
    return f"day {hours / HOURS_PER_DAY:.1f}"


def _local_rows(job: JobRows) -> list[Row]:
    return [r for r in job.rows if r.candidate.offering.kind in _LOCAL_KINDS]


def _why_cloud(result: BatchResult, s: ScheduledJob) -> str:
    """A cloud job: no local row, a local row dearer than the cloud, or the local resources
    busy with other jobs for its whole window."""
    assert s.row is not None
    local = _local_rows(s.job)
    cost = s.row.candidate.cost_usd
    if not local:
        return (
            "cloud: no owned box or reservation can finish it by its deadline (too slow or too little memory)"
        )
    cheapest = min(local, key=lambda r: r.candidate.cost_usd)
    if cheapest.candidate.cost_usd >= cost:
        return (
            f"cloud: cheaper than its best owned/reserved option "
            f"(${cost:,.2f} vs ${cheapest.candidate.cost_usd:,.2f})"
        )
    keys = {k for r in local for k, _ in r.usage}
    release = s.job.spec.release_h
    due = s.job.spec.deadline_h if s.job.spec.deadline_h is not None else result.problem.horizon_h
    busy = [
        o
        for o in result.jobs
        if o is not s
        and o.row is not None
        and {k for k, _ in o.row.usage} & keys
        and (o.start_h or 0.0) < due
        and (o.slot_end_h or 0.0) > release
    ]
    labels = sorted({result.problem.resources[k].label for k in keys})
    if not busy:
        return (
            f"cloud: finishing by its deadline on {', '.join(labels)} would cost more "
            f"overall (its cheapest local option ${cheapest.candidate.cost_usd:,.2f})"
        )
    busy.sort(key=lambda o: (o.start_h or 0.0, o.name))
    start = max(release, min(o.start_h or 0.0 for o in busy))  # within the job's window
    end = min(due, max(o.slot_end_h or 0.0 for o in busy))
    return (
        f"cloud: {', '.join(labels)} busy with {', '.join(o.name for o in busy)} from "
        f"{_day(start)} to {_day(end)} (its window: {_day(release)} to {_day(due)}; "
        f"locally it would cost ${cheapest.candidate.cost_usd:,.2f} instead of "
        f"${cost:,.2f})"
    )


def _why_local(s: ScheduledJob) -> str:
    assert s.row is not None
    cloud = [r for r in s.job.rows if r.candidate.offering.kind == "cloud"]
    kind = s.row.candidate.offering.kind
    where = "owned box" if kind == "owned" else "reservation" if kind == "reserved" else kind
    if not cloud:
        return f"{where}: no allowed cloud offering finishes it in time"
    best = min(cloud, key=lambda r: r.candidate.cost_usd)
    return (
        f"{where}: ${s.row.candidate.cost_usd:,.2f} vs ${best.candidate.cost_usd:,.2f} "
        f"for its cheapest cloud option"
    )


def placements(result: BatchResult) -> dict[str, str]:
    """Job name -> why it runs where it runs (scheduled jobs only)."""
    out: dict[str, str] = {}
    for s in result.jobs:
        if s.row is None:
            continue
        kind = s.row.candidate.offering.kind
        out[s.name] = _why_cloud(result, s) if kind == "cloud" else _why_local(s)
    return out
