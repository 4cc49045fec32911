"""The cheapest sizing run that would settle a training job's decision (`ccopt sizing`).

The guides' advice — run a little on demand, measure the throughput, then extrapolate — made
concrete: the best plan of every GPU type carries a P10-P90 cost band (its step-time band);
the GPU types whose band overlaps the cheapest plan's are still contending, and so is every type
whose cheaper plan could hold once measured (solve/train/settle.py: its chance and expected
saving, by which the runs are ranked). For each, a short
run on one instance of its cheapest on-demand offering reads the throughput: warm-up steps
(excluded from the reading) + enough steps for a stable average, at the plan's layout where one
instance holds it. Feeding the reading back (`ccopt calibrate`) replaces the model's guess on
that GPU type by the measurement, and the plan's band narrows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optimizer.inputs.jobs.train import Job
from optimizer.inputs.request import ConfigRequest, request_flags
from optimizer.model.profile import AnyModel, SampleProfile
from optimizer.pricing.schema import OfferingRow
from optimizer.solve.train.compare import compare_job
from optimizer.solve.train.enumerate import Candidate
from optimizer.solve.train.plan_figures import plan_figures, with_figures
from optimizer.solve.train.settle import Settle, hourly_probe, job_limits, reading_cost_usd, settle_runs
from optimizer.solve.train.sizing_rule import SizingRule, measured_steps, reading_minutes

__all__ = ["SizingRule", "Settle", "SizingRun", "SizingResult", "size_job", "cost_band", "sizing_request"]


@dataclass(frozen=True)
class SizingRun:
    """One GPU type still in contention and the run that would measure it."""

    gpu: str
    plan: Candidate
    cost_p10_usd: float
    cost_p90_usd: float
    probe: Candidate
    warmup_steps: int
    measured_steps: int
    minutes: float
    cost_usd: float
    command: str


@dataclass
class SizingResult:
    job: Job
    runs: list[SizingRun]
    settled: dict[str, str] = field(default_factory=dict)  # GPU type -> why it is out
    best_gpu: str | None = None
    #: the reading that settles each contender, ranked by expected saving (solve/train/settle.py)
    settles: list[Settle] = field(default_factory=list)

    @property
    def total_cost_usd(self) -> float:
        return sum(r.cost_usd for r in self.runs)


def cost_band(c: Candidate, job: Job) -> tuple[float, float]:
    """(P10, P90) cost of a plan: its hours × the step-time band (the model's own for a
    per-sample profile, else the fitted interval of the stack on the GPU class), as its
    figures give them (plan_figures: the one place they are computed)."""
    f = c.figures or plan_figures(c, job)
    return f.cost_usd_p10, f.cost_usd_p90


def _probe(cands: list[Candidate], plan: Candidate, settle: Settle | None) -> Candidate | None:
    """Where a GPU type is read: the settling run's row when the type has one, else an hourly
    row of its plan's offering or GPU type on the fewest instances (settle.hourly_probe)."""
    return settle.probe if settle is not None else hourly_probe(cands, plan)


def sizing_request(job: Job, model_ref: str, model: AnyModel, c: Candidate) -> ConfigRequest:
    """The configuration a sizing run measures, as the request `ccopt calibrate` takes: the
    candidate's hardware and layout and the job's workload (its chosen options)."""
    w, lay, o = job.workload, c.layout, c.offering
    setup = c.setup or w.setup()
    fields: dict[str, Any] = {"model": model_ref, "gpu": o.gpu_id, "num_gpus": c.gpus}
    if isinstance(model, SampleProfile):
        fields.update(micro_batch=lay.micro_batch, precision=w.precision, optimizer=w.optimizer)
        if lay.checkpointing == "full":
            fields["activation_checkpointing"] = "full"
        return ConfigRequest.model_validate(fields)
    if o.kind == "cloud":
        fields = {"model": model_ref, "instance": f"{o.provider}:{o.instance}", "num_gpus": c.gpus}
    else:
        fields.update(gpus_per_instance=o.gpus_per_instance, inter_node_gbps=o.inter_node_gbps)
    fields.update(tp=lay.tp, pp=lay.pp)
    if lay.cp > 1:
        fields["context_parallel"] = lay.cp
    if lay.vp > 1:
        fields["virtual_stages"] = lay.vp
    if setup.sequence_parallel is not None:
        fields["sequence_parallel"] = setup.sequence_parallel
    fields.update(zero_stage=lay.zero_stage, activation_checkpointing=lay.checkpointing)
    fields.update({k: True for k in ("offload_optimizer", "offload_params") if getattr(setup, k)})
    fields.update(micro_batch=lay.micro_batch, global_batch=lay.global_batch, seq_len=w.seq_len)
    fields.update(precision=setup.precision, kind=w.kind)
    if setup.optimizer != "adamw":
        fields["optimizer"] = setup.optimizer
    if setup.is_adapter:
        fields.update(lora_rank=setup.lora_rank, lora_targets=setup.lora_targets)
    if w.attention is not None:
        fields["attention"] = w.attention
    fields["stack"] = w.stack
    return ConfigRequest.model_validate(fields)


def _command(job: Job, model_ref: str, model: AnyModel, c: Candidate) -> str:
    """The `ccopt calibrate` line that feeds the reading back (MEASURED: what the run shows):
    the sizing run's request as flags, then the measurement."""
    flags = request_flags(sizing_request(job, model_ref, model, c))
    measured = (
        "--samples-per-s MEASURED --peak-memory-gib MEASURED"
        if isinstance(model, SampleProfile)
        else "--tokens-per-s MEASURED"
    )
    return f"ccopt calibrate {' '.join(flags)} {measured}"


def size_job(
    job: Job,
    rows: list[OfferingRow] | tuple[OfferingRow, ...] | None = None,
    base_dir: Path | None = None,
    rule: SizingRule | None = None,
) -> SizingResult:
    """The sizing runs that would settle `job` (see the module docstring)."""
    rule = rule or SizingRule()
    compared = compare_job(job, rows, base_dir)
    prep = compared.prepared  # the same candidate table (enumerated once)
    assert prep is not None  # compare_job always keeps it
    plans = {g: c for g, c in compared.per_gpu.items() if c is not None}
    result = SizingResult(job, [])
    if not plans:
        return result
    best_gpu, best = min(plans.items(), key=lambda kv: kv[1].cost_usd)
    result.best_gpu = best_gpu
    best_p90 = cost_band(best, compared.job)[1]
    result.settles = settle_runs(prep.table.candidates, job_limits(prep, best), rule)
    settles = {st.gpu: st for st in result.settles}
    model_ref = job.model.reference(base_dir) or prep.model.name
    # a type whose every plan misses the job at its confidence still contends when a reading
    # could make its cheaper plan hold: its settling target stands for its plan
    targets = {
        st.gpu: with_figures(st.target, compared.job, assumptions=prep.assumptions) for st in result.settles
    }
    contenders = {**targets, **plans}
    for gpu, plan in sorted(contenders.items(), key=lambda kv: kv[1].cost_usd):
        p10, p90 = cost_band(plan, compared.job)
        if gpu != best_gpu and p10 > best_p90 and gpu not in settles:
            result.settled[gpu] = (
                f"even at its P10 (${p10:,.0f}) dearer than {best_gpu} at its P90 (${best_p90:,.0f})"
            )
            continue
        probe = _probe(prep.table.candidates, plan, settles.get(gpu))
        if probe is None:
            result.settled[gpu] = "no hourly-billed offering to measure on"
            continue
        step_s = probe.step.time_s
        measured = measured_steps(rule, step_s)
        minutes = reading_minutes(rule, step_s)
        cost = reading_cost_usd(probe, minutes)
        result.runs.append(
            SizingRun(
                gpu,
                plan,
                p10,
                p90,
                probe,
                rule.warmup_steps,
                measured,
                minutes,
                cost,
                _command(job, model_ref, prep.model, probe),
            )
        )
    # ranked: the readings worth most first (expected saving), then the rest by plan cost
    result.runs.sort(key=lambda r: -settles[r.gpu].expected_saving_usd if r.gpu in settles else float("inf"))
    return result
