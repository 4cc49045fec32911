"""A batch file as a BatchProblem: shared resources from [capacity], candidates per job.

Typed catalog rows (`optimizer.pricing.catalog.load_offering_rows`) in; every Offering is made
by `optimizer.pricing.offerings` and priced by `optimizer.pricing.offering.cost_usd`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from optimizer.errors import ConfigError
from optimizer.inputs.calibration import assumptions_for_job
from optimizer.inputs.gpus import resolve_gpu_id
from optimizer.inputs.jobs.batch import BatchFile, BatchJob, Block, Quota, Reservation
from optimizer.inputs.jobs.train import fit_job_to_model
from optimizer.pricing.offering import Offering
from optimizer.pricing.offerings import catalog_rows_named, cloud_offering, hardware_offerings, job_offerings
from optimizer.pricing.schema import OfferingRow
from optimizer.pricing.terms import NO_TERMS, OfferingTerms, billed_hours
from optimizer.solve.batch.problem import BatchProblem, JobSpec, Resource
from optimizer.solve.train.enumerate import EnumerationMemo
from optimizer.solve.train.prepare import PreparedJob, prepare_from_offerings
from optimizer.units import HOURS_PER_DAY

__all__ = ["reservation_resource", "block_resource", "quota_resource", "owned_resources", "build_problem"]


def _cheapest_named(
    rows: Sequence[OfferingRow],
    pricing: str,
    entry: Reservation | Block,
    where: str,
    none_field: str,
    gpu: str | None = None,
) -> OfferingRow:
    """The cheapest catalog row (per GPU-hour; then instance type, region) of pricing model
    `pricing` that a [capacity] entry names: its provider and instance (or `gpu`), and region.

    Raises:
        ConfigError: no row of that pricing model (under `where`.`none_field`), or no row of
            that provider, instance, GPU or region (catalog_rows_named).
    """
    priced = [row for row in rows if row.pricing_model == pricing]
    if not priced:
        raise ConfigError(f"{where}.{none_field}: the price catalog has no {pricing} rows")
    picked = catalog_rows_named(
        priced,
        entry.provider,
        entry.instance,
        f"{where}.provider",
        f"{where}.instance",
        gpu=gpu,
        gpu_field=f"{where}.gpu",
        region=entry.region,
        region_field=f"{where}.region",
        catalog=f"the price catalog's {pricing} rows",
    )
    return min(picked, key=lambda row: (row.usd_per_gpu_hour, row.instance_type, row.region))


def reservation_resource(
    rows: Sequence[OfferingRow], r: Reservation, i: int, horizon_h: float
) -> tuple[Offering, Resource]:
    """The offering jobs run on and the resource it draws from, for one reservation.

    Jobs on a reservation pay nothing per hour (`usd_per_hour=0`, no term of their own): the
    commitment is billed once for all of them, R × the row's price over the whole term
    (`bill = "term"`, the row's commitment_hours) or over the horizon (`bill = "horizon"`),
    by `cost_usd(commitment, R, horizon_h)` — R is a solver variable, not a job's choice.

    Raises:
        ConfigError: no matching row, or a horizon longer than the term.
    """
    gpu = (r.gpu or "") if r.instance is None else None
    row = _cheapest_named(rows, r.pricing, r, f"capacity.reservation[{i}]", "pricing", gpu)
    if horizon_h > row.commitment_hours:
        raise ConfigError(
            f"capacity.reservation[{i}]: the horizon ({horizon_h:g} h) is longer "
            f"than the {r.pricing} term ({float(row.commitment_hours):g} h)"
        )
    key = f"reservation#{i}"
    run_on = cloud_offering(
        row,
        key_prefix=f"{key}/",
        kind="reserved",
        usd_per_hour=0.0,
        max_instances=r.max_instances,
        reservation_prepaid=True,
    )
    commitment = cloud_offering(
        row, key_prefix=f"{key}/", kind="reserved", reservation_prepaid=r.bill == "horizon"
    )
    label = f"reserved {row.provider} {row.instance_type} ({r.pricing}, bill {r.bill})"
    return run_on, Resource(
        key,
        "reservation",
        label,
        r.max_instances,
        "instances",
        offering_key=run_on.key,
        commitment=commitment,
        commitment_h=horizon_h,
    )


def block_resource(
    rows: Sequence[OfferingRow], b: Block, i: int, horizon_h: float
) -> tuple[Offering, Resource]:
    """The offering jobs run on and the resource it draws from, for one capacity block.

    As a reservation (jobs on it pay nothing per hour; B ∈ [0, instances] bought by the
    solver, each paid `cost_usd(row, B, length hours)`: the block's whole length, pricing/terms.py)
    plus a window: rows on it run inside [start_day, start_day + length_days] (problem.Row).

    Raises:
        ConfigError: no capacity_block row of that provider, instance and region, a block
            past the horizon, a length or a count the row does not sell (one line naming the
            field and the allowed values).
    """
    where = f"capacity.block[{i}]"
    days = horizon_h / HOURS_PER_DAY
    if b.start_day + b.length_days > days + 1e-9:
        raise ConfigError(
            f"{where}.length_days: start_day {b.start_day} + length_days {b.length_days} ends after "
            f"the {days:g}-day horizon; allowed: start_day + length_days ≤ {days:g}"
        )
    # b.instance is required: the rows picked are that one instance type (tie-break: region)
    row = _cheapest_named(rows, "capacity_block", b, where, "instance")
    key, length_h = f"block#{i}", b.length_days * HOURS_PER_DAY
    commitment = cloud_offering(row, key_prefix=f"{key}/", kind="reserved", reservation_prepaid=True)
    _check_length(commitment.terms, length_h, f"{where}.length_days")
    most = commitment.terms.max_nodes
    if most is not None and b.instances > most:
        raise ConfigError(
            f"{where}.instances: {b.instances} is more than the row sells; allowed: 1 to {most}"
        )
    run_on = replace(
        cloud_offering(
            row, key_prefix=f"{key}/", kind="reserved", usd_per_hour=0.0, max_instances=b.instances
        ),
        terms=NO_TERMS,
    )
    start_h = b.start_day * HOURS_PER_DAY
    label = (
        f"capacity block {row.provider} {row.instance_type} {row.region} "
        f"(days {b.start_day:g}-{b.start_day + b.length_days:g})"
    )
    return run_on, Resource(
        key,
        "reservation",
        label,
        b.instances,
        "instances",
        offering_key=run_on.key,
        commitment=commitment,
        commitment_h=length_h,
        window_h=(start_h, start_h + length_h),
    )


def _check_length(terms: OfferingTerms, length_h: float, field: str) -> None:
    """A block length the row sells: whole billing steps, at least the minimum, at most the longest."""
    step, longest = terms.billing_increment_hours or HOURS_PER_DAY, terms.max_term_hours or 0.0
    lengths = f"{max(terms.min_term_hours, step) / HOURS_PER_DAY:g} to {longest / HOURS_PER_DAY:g} days"
    if not terms.is_block:
        raise ConfigError(f"{field}: the row is not sold as a block; allowed: capacity_block rows")
    if length_h < terms.min_term_hours or length_h > longest or billed_hours(terms, length_h) != length_h:
        raise ConfigError(
            f"{field}: {length_h / HOURS_PER_DAY:g} days is not a length sold; allowed: {lengths} "
            f"in steps of {step / HOURS_PER_DAY:g} day(s)"
        )


def quota_resource(rows: Sequence[OfferingRow] | None, q: Quota, i: int) -> Resource:
    """A [[capacity.quota]] entry, its provider, GPU and region spelled as in the catalog.

    Raises:
        ConfigError: an unknown GPU, or a provider, GPU or region that matches no catalog
            offering (a quota on nothing would be silently ignored): the field, the closest
            names and the allowed ones (optimizer.pricing.offerings.catalog_rows_named).
    """
    field = f"capacity.quota[{i}]"
    gpu = resolve_gpu_id(q.gpu, f"{field}.gpu")
    provider, region = q.provider, q.region
    if rows is not None:
        match = catalog_rows_named(
            rows,
            q.provider,
            None,
            f"{field}.provider",
            f"{field}.instance",
            gpu=q.gpu,
            gpu_field=f"{field}.gpu",
            region=q.region,
            region_field=f"{field}.region",
        )
        provider = match[0].provider
        region = match[0].region if q.region is not None else None
    where = f" {region}" if region else ""
    return Resource(
        f"quota#{i}",
        "quota",
        f"quota {provider} {gpu}{where}",
        q.max_gpus,
        "GPUs",
        provider=provider,
        gpu_id=gpu,
        region=region,
    )


def owned_resources(owned: Sequence[Offering]) -> list[Resource]:
    """One resource per owned-box offering: its boxes."""
    return [
        Resource(
            f"owned#{i}",
            "owned",
            f"owned {off.instance}",
            int(off.max_instances or 1),
            "boxes",
            offering_key=off.key,
        )
        for i, off in enumerate(owned)
    ]


def _job_offerings(
    job: BatchJob,
    rows: Sequence[OfferingRow] | None,
    quotas: Sequence[Resource],
    quota_only: bool,
    owned: Sequence[Offering],
    reserved: Sequence[Offering],
) -> list[Offering]:
    """What one job may run on: the catalog under its filters (only under a quota with
    `quota_only`), the owned boxes and the reservations of its GPU types and providers."""
    c = job.constraints
    allowed = {resolve_gpu_id(g, "constraints.gpu_types") for g in c.gpu_types} if c.gpu_types else None
    provs = {p.lower() for p in c.providers} if c.providers else None
    cloud = job_offerings(rows, c, (), ()) if rows is not None else []
    if quota_only:
        cloud = [o for o in cloud if any(q.demand(o, 1) for q in quotas)]
    return (
        cloud
        + [o for o in owned if allowed is None or o.gpu_id in allowed]
        + [
            o
            for o in reserved
            if (allowed is None or o.gpu_id in allowed) and (provs is None or o.provider.lower() in provs)
        ]
    )


def _enumerate_job(
    job: BatchJob,
    offerings: Sequence[Offering],
    horizon_h: float,
    base_dir: Path | None,
    cache: dict[str, PreparedJob],
    memos: dict[str, dict[int, EnumerationMemo]],
) -> PreparedJob:
    """The job's candidates against the horizon (not its deadline, so a deadline can be
    relaxed when explaining); jobs with the same model, workload and filters share one.

    Jobs that differ only in tokens, steps, release or deadline (a team's reruns of one
    template) share the layout and step-time evaluations (EnumerationMemo: memory, fitting
    layouts, fastest layout per hardware class; none depends on the run's length or its
    deadline), so a batch of 500 such jobs enumerates in seconds, not minutes; each table is
    still its own (tests/solve/batch: equal to one enumerated without the memo)."""
    window_h = horizon_h - job.release_h
    if window_h <= 0:
        raise ConfigError(
            f"job {job.name!r}: release (hour {job.release_h:g}) is not before the horizon ({horizon_h:g} h)"
        )
    c = job.constraints
    enum_job = job.model_copy(
        update={
            "constraints": c.model_copy(
                update={"deadline_days": None, "deadline_hours": window_h, "budget_usd": None}
            )
        }
    )
    shape = [
        enum_job.model.model_dump_json(),
        enum_job.workload.model_dump_json(exclude={"tokens", "steps"}),
        enum_job.constraints.model_dump_json(exclude={"deadline_days", "deadline_hours", "budget_usd"}),
        enum_job.assumptions.model_dump_json(),
        enum_job.calibration.model_dump_json() if enum_job.calibration else "",
        enum_job.data.model_dump_json() if enum_job.data else "",
        ",".join(o.key for o in offerings),
    ]
    key = "|".join(shape + [enum_job.workload.model_dump_json(include={"tokens", "steps"}), f"{window_h!r}"])
    if key not in cache:
        model = job.model.resolve(base_dir)
        cache[key] = prepare_from_offerings(
            enum_job,
            model,
            offerings,
            assumptions_for_job(job, model),
            memos=memos.setdefault("|".join(shape), {}),
        )
    return cache[key]


def build_problem(
    batch: BatchFile,
    rows: Sequence[OfferingRow] | None = None,
    base_dir: Path | None = None,
    on_job: Callable[[int, int, str], None] | None = None,
) -> BatchProblem:
    """Candidates of every job of a BatchFile over the batch's offerings, on a time grid.

    Args:
        batch: the validated batch file.
        rows: the price catalog as typed rows (None: no cloud, no reservations).
        base_dir: where relative model paths (hf_config) are resolved.
        on_job: called as on_job(i, n, name) before job i (1-based) of n is enumerated.

    Returns:
        The problem, with notes on what is billed how and the enumeration time.

    Raises:
        ConfigError: unknown provider/GPU/instance in [capacity], bad owned-box overrides.
    """
    cap = batch.capacity
    t0 = time.perf_counter()
    owned = hardware_offerings(cap.owned, [], section="capacity")
    resources = owned_resources(owned)
    reserved = _reservations(batch, rows, resources)
    quotas = [quota_resource(rows, q, i) for i, q in enumerate(cap.quota)]
    resources.extend(quotas)
    cache: dict[str, PreparedJob] = {}
    memos: dict[str, dict[int, EnumerationMemo]] = {}
    specs: list[JobSpec] = []
    for number, job in enumerate(batch.job, start=1):
        if on_job is not None:
            on_job(number, len(batch.job), job.name)
        offs = _job_offerings(job, rows, quotas, cap.quota_only, owned, reserved)
        prep = _enumerate_job(job, offs, cap.horizon_h, base_dir, cache, memos)
        specs.append(_job_spec(job, prep))
    problem = BatchProblem.build(specs, resources, cap.horizon_h, name=batch.name)
    problem.enumerate_s = time.perf_counter() - t0
    problem.notes.extend(_billing_notes(cap.quota_only, resources, owned))
    return problem


def _reservations(
    batch: BatchFile, rows: Sequence[OfferingRow] | None, resources: list[Resource]
) -> list[Offering]:
    """The [[capacity.reservation]] and [[capacity.block]] offerings; their resources are
    appended to `resources`."""
    cap = batch.capacity
    if cap.reservation and rows is None:
        raise ConfigError("capacity.reservation needs the price catalog (cloud prices)")
    if cap.block and rows is None:
        raise ConfigError("capacity.block needs the price catalog (cloud prices)")
    reserved: list[Offering] = []
    for i, entry in enumerate(cap.reservation):
        off, res = reservation_resource(rows or (), entry, i, cap.horizon_h)
        reserved.append(off)
        resources.append(res)
    for i, block in enumerate(cap.block):
        off, res = block_resource(rows or (), block, i, cap.horizon_h)
        reserved.append(off)
        resources.append(res)
    return reserved


def _job_spec(job: BatchJob, prep: PreparedJob) -> JobSpec:
    """One job's place in the problem: its candidates, window, value, budget and model."""
    c = job.constraints
    return JobSpec(
        job.name,
        prep.table.candidates,
        job.release_h,
        c.deadline_h,
        job.value_usd if job.droppable else None,
        job.priority,
        c.budget_usd,
        fit_job_to_model(job, prep.model),
        prep.model.name,
        prep.table.rejected,
    )


def _billing_notes(quota_only: bool, resources: Sequence[Resource], owned: Sequence[Offering]) -> list[str]:
    """How the batch's cloud, reserved and owned capacity is billed, one line each."""
    notes = ["cloud: only (provider, GPU) pairs with a quota are used"] if quota_only else []
    notes += [
        f"{res.label}: ${res.commitment_usd:,.0f} per "
        + ("instance of the block, paid in full" if res.window_h else "reserved instance")
        for res in resources
        if res.kind == "reservation"
    ]
    if owned:
        notes.append("owned boxes: power per busy box-hour (capital only with charge_capital = true)")
    notes += [line for off in owned if (line := _owned_note(off)) is not None]
    return notes


def _owned_note(off: Offering) -> str | None:
    """What an owned box with charged capital adds per busy hour (None: power only)."""
    terms = off.ownership
    if terms is None or not terms.charged:
        return None
    fixed = terms.fixed_usd_per_month
    if off.usage.jobs_per_month is not None:  # pricing/ownership.charge_rates, stated workload
        return (
            f"owned {off.instance}: + net capital and ops fee ${fixed:,.0f} a month spread over "
            f"its {off.usage.jobs_per_month:g} jobs a month (capacity.owned.jobs_per_month): "
            f"${fixed / off.usage.jobs_per_month:,.2f} a job, at least "
            f"${off.capital_usd_per_instance_hour:.3f} per busy box-hour"
        )
    if off.usage.duty_cycle is not None:
        return (
            f"owned {off.instance}: + net capital and ops fee ${fixed:,.0f} a month ÷ (730 h × "
            f"{off.usage.duty_cycle:.0%} busy, capacity.owned.duty_cycle) = "
            f"${off.capital_usd_per_instance_hour:.3f} per busy box-hour"
        )
    return (
        f"owned {off.instance}: + net capital and ops fee ${fixed:,.0f} a month ÷ 730 h = "
        f"${off.capital_usd_per_instance_hour:.3f} per busy box-hour, as if busy 100% of the "
        "time (hours it idles are not charged to these jobs; say capacity.owned.jobs_per_month "
        "or duty_cycle)"
    )
