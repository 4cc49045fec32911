"""Why a single job is infeasible, and the nearest change that makes it feasible."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from optimizer.inputs.jobs.train import Job
from optimizer.model.layout import stack_zero_stages
from optimizer.model.stacks import get_stack, train_stack_names
from optimizer.solve.train.candidate import Candidate
from optimizer.solve.train.enumerate import MAX_GPUS_DEFAULT
from optimizer.solve.train.model import solve_table
from optimizer.solve.train.prepare import PreparedJob, prepare_from_offerings
from optimizer.solve.train.search_space import effective_zero_stages

__all__ = ["explain_infeasible", "Diagnosis", "Finding"]


@dataclass(frozen=True)
class Diagnosis:
    """Why a job is infeasible: the sentence, the binding requirement, the nearest fixes."""

    text: str
    binding: str  # deadline | budget | deadline+budget | memory | filters | limits | host
    fixes: tuple[dict[str, Any], ...] = ()


#: what keeps an offering out (by a phrase of its rejection reason, solve/train/enumerate.py
#: and host_check.py), the binding name, and the change that would let it in
_REJECTIONS = (
    (
        "GiB per GPU at best",
        "memory",
        "allow GPUs with more memory, more GPUs (ZeRO-3, tp/pp), checkpointing, LoRA/QLoRA or offloading",
    ),
    (
        "reserved term",
        "limits",
        "allow on_demand or spot pricing, or more GPUs (max_gpus, "
        "max_instances): the job must finish within a reserved row's term",
    ),
    ("tensor cores", "filters", "another precision, or GPU types that support it"),
    ("no layout realises", "filters", "a global_batch that more GPU counts divide, or batch_tolerance"),
    ("host RAM", "host", "instances with more host RAM, vCPUs or local disk, or offload less"),
    ("local NVMe", "host", "instances with more host RAM, vCPUs or local disk, or offload less"),
    ("vCPUs leave none", "host", "instances with more host RAM, vCPUs or local disk, or offload less"),
)


def _nothing_to_plan(reasons: dict[str, str]) -> Diagnosis:
    """No candidate at all: what kept each offering out, grouped, with the change per group
    (the most common reason binds)."""
    kinds: dict[str, list[str]] = {}
    fixes: dict[str, str] = {}
    for option, why in sorted(reasons.items()):
        phrase, binding, fix = next(
            (r for r in _REJECTIONS if r[0] in why),
            ("", "limits", "relax the search limits (max_gpus, max_instances, min_instances)"),
        )
        kinds.setdefault(binding, []).append(f"{option}: {why}")
        fixes.setdefault(binding, fix)
    binding = max(kinds, key=lambda k: (len(kinds[k]), k))
    shown = [line for k in sorted(kinds, key=lambda k: -len(kinds[k])) for line in kinds[k]]
    more = f" (+{len(shown) - 6} more)" if len(shown) > 6 else ""
    head = "nothing fits in GPU memory" if binding == "memory" else "no offering gives a plan"
    return Diagnosis(
        f"{head}: {'; '.join(shown[:6])}{more}",
        binding,
        tuple({"change": fixes[k], "requirement": k} for k in kinds),
    )


def _stack_limit(job: Job) -> tuple[str, str] | None:
    """What the job's software stack keeps out of the search (no tensor / pipeline split, ZeRO
    stages of constraints.zero_stages it cannot run) and the nearest fix; None when nothing."""
    stack = get_stack(job.workload.stack)
    wanted = tuple(job.constraints.zero_stages)
    runnable = stack_zero_stages(stack, wanted)
    lacks = [k for k in stack.lacks() if k != "context"]  # the planner splits no sequences
    # a stage the stack lacks matters only if it changes what the search tries (ZeRO-1 is
    # dominated by ZeRO-2, solve/train/search_space.effective_zero_stages)
    narrowed = effective_zero_stages(runnable) != effective_zero_stages(wanted)
    if not lacks and not narrowed:
        return None
    said = []
    if lacks:
        said.append(f"runs no {' or '.join(lacks)} parallelism")
    if narrowed:
        said.append(
            f"runs ZeRO stages {', '.join(map(str, stack.zero_stages))} only, so of "
            f"constraints.zero_stages {list(wanted)} it plans with "
            + (", ".join(map(str, runnable)) if runnable else "none (one GPU per replica, nothing sharded)")
        )
    fixes = []
    if 3 in stack.zero_stages and 3 not in wanted:
        fixes.append("allow ZeRO-3 (constraints.zero_stages)")
    elif not runnable:
        fixes.append(f"allow ZeRO {' or '.join(map(str, stack.zero_stages))} (constraints.zero_stages)")
    if lacks:
        others = [
            n
            for n in train_stack_names()
            if n != "generic" and all(k not in get_stack(n).lacks() for k in lacks)
        ]
        noun = {"pipeline": "pipelines", "tensor": "tensor parallelism"}
        wanted_kinds = " and ".join(noun[k] for k in lacks)
        fixes.append(f"choose a stack with {wanted_kinds} (workload.stack: {', '.join(others)})")
    return f"{stack.name} {' and '.join(said)}", " or ".join(fixes)


def _with_stack(diagnosis: Diagnosis, job: Job, first: bool = True) -> Diagnosis:
    """The diagnosis with the stack's limit, when the stack narrowed the search: first (the
    cause), or after the binding requirement (`first` False: one cause among others)."""
    limit = _stack_limit(job)
    if limit is None:
        return diagnosis
    text, change = limit
    fix = {"change": change, "requirement": "stack"}
    if first:
        return Diagnosis(f"{text}: {diagnosis.text}", diagnosis.binding, (fix, *diagnosis.fixes))
    return Diagnosis(
        f"{diagnosis.text}; the stack narrows the search: {text}", diagnosis.binding, (*diagnosis.fixes, fix)
    )


def explain_infeasible(prep: PreparedJob, core: list[str]) -> Diagnosis:
    """Which requirement binds and the nearest change that makes the job feasible; when no
    offering gives a plan and the job's stack narrowed the search (no pipelines, fewer ZeRO
    stages), that limit comes first."""
    if prep.deadline_h is not None:  # look past the deadline pruning for the fastest plan
        prep = replace(prep, table=prep.deadline_free())
        if prep.table.candidates:  # the conflict among all plans, not the pruned ones
            _, best, core = solve_table(prep.table.candidates, prep.deadline_h, prep.budget_usd)
            core = core if best is None else ["deadline"]
    cands = prep.table.candidates
    if not cands:
        return _no_candidates(prep)
    deadline, budget = prep.deadline_h, prep.budget_usd
    fastest = min(cands, key=lambda c: (c.hours, c.cost_usd))
    if (
        {"deadline", "budget"} <= set(core)
        and deadline is not None
        and budget is not None
        and fastest.hours <= deadline
    ):
        return _together(cands, deadline, budget)
    found: list[Finding] = []
    if "deadline" in core and deadline is not None:
        found.append(_deadline_binds(prep, fastest, deadline))
        found.extend(_without_limits(prep, deadline))
    if "budget" in core and budget is not None:
        found.append(_budget_binds(cands, deadline, budget))
    binding = "deadline" if "deadline" in core else "budget" if "budget" in core else "deadline"
    fixes = sorted((f.fix for f in found if f.fix is not None), key=lambda f: f.get("cost_usd") or 0.0)
    diagnosis = Diagnosis("; ".join(f.text for f in found) or "infeasible", binding, tuple(fixes))
    if binding != "deadline":  # a budget binds whatever the layouts
        return diagnosis
    # a stack that shards nothing the job allows runs one replica only: that is the cause
    job = prep.job
    sharded = stack_zero_stages(get_stack(job.workload.stack), job.constraints.zero_stages)
    return _with_stack(diagnosis, job, first=not sharded)


@dataclass(frozen=True)
class Finding:
    """One part of a diagnosis: its sentence and the fix it prices (None: none)."""

    text: str
    fix: dict[str, Any] | None = None


def _no_candidates(prep: PreparedJob) -> Diagnosis:
    """No plan at all: the filters matched nothing, or what kept each offering out."""
    reasons = prep.table.rejected
    if not reasons:
        return Diagnosis(
            "no offering matches the filters (gpu_types, providers, regions, pricing)",
            "filters",
            ({"change": "widen gpu_types, providers, regions or pricing"},),
        )
    return _with_stack(_nothing_to_plan(reasons), prep.job)


def _deadline_binds(prep: PreparedJob, fastest: Candidate, deadline_h: float) -> Finding:
    """The deadline binds: the fastest plan's days, and the deadline that would take it."""
    searched = prep.job.constraints.max_gpus or MAX_GPUS_DEFAULT
    return Finding(
        f"the deadline ({deadline_h / 24:.1f} days) binds: the fastest plan needs "
        f"{fastest.hours / 24:.1f} days ({fastest.gpus}× {fastest.offering.gpu_id}, "
        f"{fastest.offering.provider} {fastest.offering.instance}, ${fastest.cost_usd:,.0f}; "
        f"searched up to {searched:,} GPUs — set max_gpus to search further)",
        {
            "requirement": "deadline",
            "change": f"deadline_days = {fastest.hours / 24:.1f}",
            "cost_usd": round(fastest.cost_usd, 2),
        },
    )


def _without_limits(prep: PreparedJob, deadline_h: float) -> list[Finding]:
    """The cheapest plan that meets the deadline once the job's max_gpus / max_instances are
    lifted (re-enumerated without them); none when there are no such limits or no such plan."""
    c = prep.job.constraints
    limits = {k: v for k, v in (("max_gpus", c.max_gpus), ("max_instances", c.max_instances)) if v}
    if not limits:
        return []
    relaxed_job = prep.job.model_copy(
        update={"constraints": c.model_copy(update={"max_gpus": None, "max_instances": None})}
    )
    relaxed = prepare_from_offerings(relaxed_job, prep.model, prep.offerings, prep.assumptions)
    in_time = [x for x in relaxed.table.candidates if x.hours <= deadline_h]
    if not in_time:
        return []
    fix = min(in_time, key=lambda x: (x.cost_usd, x.hours))
    return [
        Finding(
            f"without {' and '.join(f'{k}={v}' for k, v in limits.items())} the deadline is met "
            f"by {fix.instances}× {fix.offering.instance} ({fix.gpus}× {fix.offering.gpu_id}, "
            f"{fix.offering.provider}) in {fix.hours / 24:.1f} days for ${fix.cost_usd:,.0f}",
            {
                "requirement": "deadline",
                "change": "remove " + " and ".join(limits),
                "cost_usd": round(fix.cost_usd, 2),
            },
        )
    ]


def _budget_binds(cands: list[Candidate], deadline_h: float | None, budget_usd: float) -> Finding:
    """The budget binds: what the cheapest plan that meets the deadline (or any plan) costs."""
    in_time = [c for c in cands if deadline_h is None or c.hours <= deadline_h]
    if not in_time:
        cheapest = min(cands, key=lambda c: c.cost_usd)
        return Finding(
            f"the budget (${budget_usd:,.0f}) binds too: the cheapest plan at any "
            f"speed costs ${cheapest.cost_usd:,.0f}"
        )
    cheapest = min(in_time, key=lambda c: c.cost_usd)
    return Finding(
        f"the budget (${budget_usd:,.0f}) binds: the cheapest plan that meets the "
        f"deadline needs budget ≥ ${cheapest.cost_usd:,.0f}",
        {
            "requirement": "budget",
            "change": f"budget_usd = {cheapest.cost_usd:.0f}",
            "cost_usd": round(cheapest.cost_usd, 2),
        },
    )


def _together(cands: list[Candidate], deadline_h: float, budget_usd: float) -> Diagnosis:
    """Deadline and budget each meetable alone, not together: both named, both fixes priced."""
    in_time = min((c for c in cands if c.hours <= deadline_h), key=lambda c: c.cost_usd)
    affordable = [c for c in cands if c.cost_usd <= budget_usd]
    fixes: list[dict[str, Any]] = [
        {
            "requirement": "budget",
            "change": f"budget_usd = {in_time.cost_usd:.0f}",
            "cost_usd": round(in_time.cost_usd, 2),
        }
    ]
    text = (
        f"the deadline ({deadline_h / 24:.1f} days) and the budget (${budget_usd:,.0f}) bind "
        f"together: the cheapest plan that meets the deadline costs ${in_time.cost_usd:,.0f}"
    )
    if affordable:
        quick = min(affordable, key=lambda c: (c.hours, c.cost_usd))
        text += f"; the fastest plan within the budget needs {quick.hours / 24:.1f} days"
        fixes.append(
            {
                "requirement": "deadline",
                "change": f"deadline_days = {quick.hours / 24:.1f}",
                "cost_usd": round(quick.cost_usd, 2),
            }
        )
    fixes.sort(key=lambda f: f["cost_usd"])
    return Diagnosis(text, "deadline+budget", tuple(fixes))
