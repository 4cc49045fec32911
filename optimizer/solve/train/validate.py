"""Plain-Python checks of a chosen plan against every constraint (run after each solve)."""

from __future__ import annotations

import math

from optimizer.errors import SolverError
from optimizer.model.host import offloaded_gib_per_gpu
from optimizer.model.memory import training_memory
from optimizer.model.setup import PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.pricing.offering import cost_usd
from optimizer.solve.train.enumerate import NO_HEADROOM, BatchRule, Candidate, Headroom

__all__ = ["plan_violations", "validate_plan"]


def plan_violations(
    c: Candidate,
    model: ModelSpec,
    setup: TrainingSetup,
    batch: BatchRule,
    deadline_h: float | None,
    budget_usd: float | None,
    assumptions: PerfAssumptions,
    max_gpus: int | None = None,
    max_instances: int | None = None,
    headroom: Headroom = NO_HEADROOM,
) -> list[str]:
    """Every constraint the plan breaks, recomputed from scratch (empty list = valid)."""
    problems: list[str] = []
    lay, off = c.layout, c.offering
    if lay.gpus != c.gpus:
        problems.append(f"dp×tp×pp = {lay.gpus} != GPUs {c.gpus}")
    if off.gpus_per_instance % lay.tp:
        problems.append(f"tp {lay.tp} does not fit in an instance of {off.gpus_per_instance}")
    realised = lay.dp * lay.micro_batch * lay.grad_accum
    if abs(realised - batch.sequences) > batch.tolerance * batch.sequences + 1e-9:
        problems.append(f"global batch {realised} != {batch.sequences} (±{batch.tolerance:.0%})")
    mem = training_memory(model, setup, lay, assumptions).device
    usable = headroom.usable_gib(off.gpu.memory_gib)
    if mem > usable + 1e-9:
        problems.append(
            f"needs {mem:.2f} GiB on the device > {usable:.2f} GiB usable of {off.gpu.memory_gib} GiB"
        )
    if deadline_h is not None and c.hours > deadline_h + 1e-9:
        problems.append(f"{c.hours:.2f} h exceeds the deadline {deadline_h:.2f} h")
    cost = cost_usd(off, c.instances, c.hours).total_usd
    if not math.isclose(cost, c.cost_usd, rel_tol=1e-9, abs_tol=1e-6):
        problems.append(f"cost {c.cost_usd} != recomputed {cost}")
    if budget_usd is not None and c.cost_usd > budget_usd + 1e-6:
        problems.append(f"cost ${c.cost_usd:,.2f} exceeds the budget ${budget_usd:,.2f}")
    if off.max_instances is not None and c.instances > off.max_instances:
        problems.append(f"{c.instances} instances > offering limit {off.max_instances}")
    if max_instances is not None and c.instances > max_instances:
        problems.append(f"{c.instances} instances > max_instances {max_instances}")
    if max_gpus is not None and c.gpus > max_gpus:
        problems.append(f"{c.gpus} GPUs > max_gpus {max_gpus}")
    if off.commitment_hours and c.hours > off.commitment_hours:
        problems.append("runs longer than the reservation term")
    problems.extend(_host_violations(c, model, setup, assumptions))
    problems.extend(_term_violations(c))
    return problems


def _term_violations(c: Candidate) -> list[str]:
    """The seller's terms (issue 42): the node range, a block long enough, and billed hours
    that are whole increments, at least the run and at least the minimum term."""
    terms, problems = c.offering.terms, []
    if c.instances < terms.min_nodes:
        problems.append(f"{c.instances} nodes < the cluster's minimum {terms.min_nodes}")
    if terms.max_term_hours is not None and c.hours > terms.max_term_hours + 1e-9:
        problems.append(f"{c.hours:.2f} h > the longest block {terms.max_term_hours:g} h")
    billed = terms.billed(c.hours)
    if billed + 1e-9 < max(c.hours, terms.min_term_hours):
        problems.append(
            f"bills {billed:.2f} h for a {c.hours:.2f}-h run (minimum {terms.min_term_hours:g} h)"
        )
    step = terms.billing_increment_hours
    if step and not math.isclose(billed / step, round(billed / step), abs_tol=1e-6):
        problems.append(f"bills {billed:.2f} h, not whole steps of {step:g} h")
    return problems


def _host_violations(
    c: Candidate, model: ModelSpec, setup: TrainingSetup, assumptions: PerfAssumptions
) -> list[str]:
    """The host figures of the plan: offloaded states within the host RAM, a step no faster
    than its loader delivers the batch."""
    problems: list[str] = []
    off, h = c.offering, c.host
    offloaded = offloaded_gib_per_gpu(model, setup, c.layout, assumptions) * off.gpus_per_instance
    if off.ram_gib is not None and offloaded > off.ram_gib + 1e-9:
        problems.append(f"offloads {offloaded:.1f} GiB per instance > host RAM {off.ram_gib:g} GiB")
    if h is None:
        return problems
    if off.ram_gib is not None and h.ram_needed_gib > off.ram_gib + 1e-9:
        problems.append(f"host RAM need {h.ram_needed_gib:.1f} GiB > {off.ram_gib:g} GiB")
    if h.ram_needed_gib + 1e-9 < offloaded:
        problems.append(f"host RAM need {h.ram_needed_gib:.1f} GiB < offloaded {offloaded:.1f} GiB")
    if (
        h.loader_samples_per_s is not None
        and h.loader_samples_per_s > 0
        and c.step.time_s + 1e-9 < c.layout.global_batch / h.loader_samples_per_s
    ):
        problems.append(
            f"step {c.step.time_s:.4f} s is faster than the loader delivers "
            f"{c.layout.global_batch} samples at {h.loader_samples_per_s:.1f}/s"
        )
    return problems


def validate_plan(*args: object, **kwargs: object) -> None:
    """Raise SolverError if the plan breaks a constraint (a bug, never a user error)."""
    problems = plan_violations(*args, **kwargs)  # type: ignore[arg-type]
    if problems:
        raise SolverError("internal check failed for the chosen plan: " + "; ".join(problems))
