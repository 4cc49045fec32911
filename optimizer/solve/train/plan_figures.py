"""Compute a plan's figures once (PlanFigures), for the result to carry (Candidate.figures; a
batch holds them in BatchResult.figures): the one place the P10/P90 step, days and cost, the
cost lines, the memory headroom, the intra-node path and the warnings of a training plan are
worked out (reports only format them)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from optimizer.inputs.calibration import base_assumptions
from optimizer.inputs.jobs.train import Job
from optimizer.model.bands import Band, borrowed_from, memory_band
from optimizer.model.pcie import intra_node_bw_gb_s, intra_node_path
from optimizer.model.setup import PerfAssumptions, TrainingSetup
from optimizer.pricing.offering import cost_usd
from optimizer.solve.train.confidence import band_of, point_hours
from optimizer.solve.train.enumerate import Candidate, class_label
from optimizer.solve.train.figures import DataLines, JobFigures, PlanFigures
from optimizer.solve.train.host_check import unit_of
from optimizer.solve.train.pcie_note import host_path_warning
from optimizer.solve.train.prepare import PreparedJob, headroom_of
from optimizer.solve.train.variants import options_of
from optimizer.solve.train.warnings import plan_warnings
from optimizer.units import HOURS_PER_DAY
from optimizer.vocabulary import borrowed_words

__all__ = [
    "job_figures",
    "plan_figures",
    "with_figures",
    "loader_bound_list",
    "LoaderBound",
    "LOADER_SLOWDOWN_TOLERANCE",
]

#: a loader slowdown above 1 + this is loader-bound (below: float noise)
LOADER_SLOWDOWN_TOLERANCE = 1e-9


def _data_lines(c: Candidate, total: float) -> DataLines | None:
    """The [data] lines of `c`, whose data cost (cost_usd's data line) is `total`."""
    d = c.offering.data
    if not d.counted:
        return None
    dataset, checkpoints = d.dataset_storage_usd(c.hours), d.checkpoint_storage_usd(c.hours)
    return DataLines(
        egress_usd=d.egress_usd,
        dataset_storage_usd=dataset,
        checkpoint_storage_usd=checkpoints,
        storage_usd=dataset + checkpoints,
        total_usd=total,
        share_of_cost=total / c.cost_usd if c.cost_usd > 0 else 0.0,
    )


def band_warnings(
    c: Candidate, job: Job | None, hours_p90: float, cost_usd_p90: float, band: Band
) -> list[str]:
    """A P90 (`hours_p90`, `cost_usd_p90`) that misses the job's deadline or budget, and a band
    that rests on thin evidence."""
    out = []
    if job is not None:
        deadline_h, budget = job.constraints.deadline_h, job.constraints.budget_usd
        if deadline_h is not None and hours_p90 > deadline_h * (1 + 1e-9):
            out.append(
                f"P90: {hours_p90 / HOURS_PER_DAY:.1f} days, past the {deadline_h / HOURS_PER_DAY:.1f}-day "
                f"deadline (1 run in 10 takes longer than that); plan with --confidence 0.9 to hold it"
            )
        if budget is not None and cost_usd_p90 > budget * (1 + 1e-9):
            out.append(f"P90: ${cost_usd_p90:,.0f}, over the ${budget:,.0f} budget")
    borrowed = borrowed_from(band.basis)
    if band.basis == "prior" or borrowed is not None:
        precision = c.setup.precision if c.setup else "this precision"
        which = "the wide prior" if borrowed is None else borrowed_words(borrowed)
        out.append(
            f"no measured training run of {c.offering.gpu.generation} in {precision} "
            f"backs the model: its band is {which} (P10-P90 ×{band.p10:.2f}-×{band.p90:.2f}); "
            "a sizing run and `ccopt calibrate` narrow it"
        )
    return out


def plan_figures(
    c: Candidate,
    job: Job | None = None,
    chosen: Candidate | None = None,
    assumptions: PerfAssumptions | None = None,
) -> PlanFigures:
    """The figures of plan `c` of `job` (None: a bare candidate, priced on its own); with
    `chosen`, `c` is an alternative to that plan and its extra cost is worked out too.
    `assumptions`: those the plan was made with (None: the job's, read again)."""
    off, w = c.offering, job.workload if job is not None else None
    band = band_of(c)
    hours = point_hours(c)
    hours_p10, hours_p50, hours_p90 = hours * band.p10, hours * band.p50, hours * band.p90
    cost_p10, cost_p50, cost_p90 = (
        cost_usd(off, c.instances, h).total_usd for h in (hours_p10, hours_p50, hours_p90)
    )
    a = assumptions or base_assumptions(job.assumptions if job is not None else None)
    cost = cost_usd(off, c.instances, c.hours)  # the same formula as c.cost_usd, by line
    card = off.gpu.memory_gib
    headroom, mband = card - c.memory.device, memory_band(a)
    kind = job.data.kind if job is not None and job.data is not None else "text"
    setup = c.setup or (w.setup() if w is not None else TrainingSetup(seq_len=0))
    unit = w.sample_unit if w is not None else None
    return PlanFigures(
        p10=band.p10,
        p50=band.p50,
        p90=band.p90,
        step_time_s_p10=c.step.time_s * band.p10,
        step_time_s_p50=c.step.time_s * band.p50,
        step_time_s_p90=c.step.time_s * band.p90,
        hours_p10=hours_p10,
        hours_p50=hours_p50,
        hours_p90=hours_p90,
        days=c.hours / HOURS_PER_DAY,
        days_p10=hours_p10 / HOURS_PER_DAY,
        days_p50=hours_p50 / HOURS_PER_DAY,
        days_p90=hours_p90 / HOURS_PER_DAY,
        cost_usd_p10=cost_p10,
        cost_usd_p50=cost_p50,
        cost_usd_p90=cost_p90,
        confidence=c.confidence,
        band_cases=band.cases,
        band_sources=band.sources,
        band_basis=band.basis,
        running_usd=cost.running_usd,
        data_usd=cost.data_usd,
        gpu_hours=c.gpus * c.hours,
        data=_data_lines(c, cost.data_usd),
        memory_headroom_gib=headroom,
        memory_headroom_fraction=headroom / card if card else 0.0,
        memory_headroom_required_gib=headroom_of(job.constraints, a).kept_gib(card)
        if job is not None
        else None,
        memory_device_gib_p10=c.memory.device * mband.p10,
        memory_device_gib_p90=c.memory.device * mband.p90,
        memory_confidence=getattr(job.constraints, "memory_confidence", None) if job is not None else None,
        intra_node_path=intra_node_path(off.gpu),
        intra_node_bw_gb_s=intra_node_bw_gb_s(off.gpu, a),
        tokens=c.steps * c.layout.global_batch * (w.seq_len if w is not None else 0),
        sample_unit=unit,
        samples_per_s=c.step.tokens_per_s / w.seq_len if w is not None and unit else None,
        options=options_of(setup, c.layout.vp),
        warnings=tuple(
            plan_warnings(c) + host_path_warning(c, a) + band_warnings(c, job, hours_p90, cost_p90, band)
        ),
        host_unit=unit_of(kind),
        loader_bound=c.host is not None and c.host.slowdown > 1.0 + LOADER_SLOWDOWN_TOLERANCE,
        extra_cost_usd=None if chosen is None else c.cost_usd - chosen.cost_usd,
    )


def job_figures(prep: PreparedJob) -> JobFigures:
    """The figures of the job as planned (the `job` object of plan and compare)."""
    return JobFigures(
        model_ref=prep.job.model.reference(prep.base_dir),
        params=prep.model.params(),
        tokens=prep.job.workload.total_tokens(),
    )


def with_figures(
    c: Candidate,
    job: Job | None = None,
    chosen: Candidate | None = None,
    assumptions: PerfAssumptions | None = None,
) -> Candidate:
    """`c` with its figures attached (the result objects carry these to the report)."""
    return replace(c, figures=plan_figures(c, job, chosen, assumptions))


LOADER_FIX = (
    "fix: an instance with more vCPUs per GPU, or preprocess offline (decoded, "
    "resized shards: a higher data.samples_per_s_per_vcpu)"
)


@dataclass(frozen=True)
class LoaderBound:
    """An offering slowed to its data loader's rate: its label, the sentence (price, slowdown,
    nearest fix) and its price per GPU-hour as a number."""

    option: str
    reason: str
    usd_per_gpu_hour: float


def loader_bound_list(prep: PreparedJob) -> list[LoaderBound]:
    """Offerings slowed to their loader rate, cheapest GPU-hour first, with the nearest fix."""
    price = {class_label(o): o.usd_per_hour / o.gpus_per_instance for o in prep.offerings}
    ranked = sorted(prep.table.slowed.items(), key=lambda kv: (price.get(kv[0], 0.0), kv[0]))
    return [
        LoaderBound(k, f"${price.get(k, 0.0):,.3f}/GPU-h, {why}; {LOADER_FIX}", price.get(k, 0.0))
        for k, why in ranked
    ]
