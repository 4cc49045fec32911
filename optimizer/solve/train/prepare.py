"""A training job made ready to solve: model, assumptions, offerings and candidate table."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from optimizer.errors import ConfigError
from optimizer.inputs.calibration import assumptions_for_job
from optimizer.inputs.jobs.train import Constraints, Job, fit_job_to_model
from optimizer.model.bands import memory_factor
from optimizer.model.host import checkpoint_gb
from optimizer.model.layout import stack_checkpointing
from optimizer.model.setup import PerfAssumptions
from optimizer.model.spec import ModelSpec
from optimizer.model.stacks import get_stack
from optimizer.pricing.data_cost import with_data
from optimizer.pricing.offering import Offering
from optimizer.pricing.offerings import job_offerings
from optimizer.pricing.schema import OfferingRow
from optimizer.solve.train.enumerate import (
    BatchRule,
    CandidateTable,
    CostCeiling,
    EnumerationMemo,
    Headroom,
    SearchRules,
    class_label,
    enumerate_candidates,
    prune_dominated,
)
from optimizer.solve.train.host_check import host_rule_of
from optimizer.solve.train.variants import search_variants

__all__ = ["PreparedJob", "prepare_job", "prepare_from_offerings"]


@dataclass
class PreparedJob:
    """A validated job with its model, assumptions and candidate table."""

    job: Job
    model: ModelSpec  # or a SampleProfile, typed as the planner types it (profile.as_planned)
    assumptions: PerfAssumptions
    offerings: list[Offering]
    table: CandidateTable
    deadline_h: float | None
    budget_usd: float | None
    enumerate_s: float = 0.0
    base_dir: Path | None = None  # the job file's folder (relative model paths)
    _deadline_free: CandidateTable | None = None
    #: the evaluations of `table`'s enumeration per search variant (EnumerationMemo), kept
    #: until the deadline-free table reuses them; None: that table is enumerated from scratch
    _memos: dict[int, EnumerationMemo] | None = field(default=None, repr=False)

    def deadline_free(self) -> CandidateTable:
        """The candidates enumerated without the deadline (no count skipped as too slow): built
        once, for the deadline-binding check and the infeasibility diagnosis. The layouts and
        step times `table` found are reused (only the counts it skipped are evaluated); the
        table equals a from-scratch `prepare_from_offerings(..., prune=False)`."""
        if self.deadline_h is None:
            return self.table
        if self._deadline_free is None:
            self._deadline_free = prepare_from_offerings(
                self.job, self.model, self.offerings, self.assumptions, prune=False, memos=self._memos
            ).table
            self._memos = None  # built: the memo is not needed again
        return self._deadline_free

    def layout_memos(self) -> dict[int, EnumerationMemo] | None:
        """Memos for enumerating this job over *other* offerings: they share what depends only
        on the job and its search variant (layout memory, fitting layouts, micro-batch times per
        hardware class), not the per-offering answers (keyed by position in this list)."""
        if self._memos is None:
            return None
        return {
            position: EnumerationMemo(
                memory=m.memory, microbatch=m.microbatch, fits=m.fits, rows=m.rows, best_by_key=m.best_by_key
            )
            for position, m in self._memos.items()
        }

    def deadline_free_below(self, cost_usd: float) -> CandidateTable:
        """A deadline-free table holding the cheapest late candidate within the budget if it
        costs less than `cost_usd`: `deadline_free` when it is built, else an enumeration that
        searches the offerings cheapest cost floor first and skips those whose floor is above
        the cheapest such row found (enumerate.CostCeiling), reusing `table`'s layouts and step
        times. Not kept: the infeasibility diagnosis and the mix need the whole table."""
        if self.deadline_h is None:
            return self.table
        if self._deadline_free is not None:
            return self._deadline_free
        return prepare_from_offerings(
            self.job,
            self.model,
            self.offerings,
            self.assumptions,
            prune=False,
            memos=self._memos,
            ceiling=CostCeiling(cost_usd, self.deadline_h, self.budget_usd),
        ).table


def merge_tables(tables: Sequence[CandidateTable]) -> CandidateTable:
    """The candidates of every searched variant; a hardware class stays rejected only when no
    variant has a candidate on it (the reasons of the first variant are kept)."""
    if len(tables) == 1:
        return tables[0]
    cands = prune_dominated([c for t in tables for c in t.candidates])
    placed = {class_label(c.offering) for c in cands}
    rejected: dict[str, str] = {}
    for t in tables:
        for k, why in t.rejected.items():
            if k not in placed:
                rejected.setdefault(k, why)
    return CandidateTable(cands, rejected, pruned_by_deadline=any(t.pruned_by_deadline for t in tables))


def headroom_of(constraints: Constraints, assumptions: PerfAssumptions) -> Headroom:
    """The job's device-memory headroom (constraints.min_memory_headroom_gib / _fraction) and,
    with constraints.memory_confidence, the memory band's multiplier at that quantile
    (bands.memory_factor)."""
    return Headroom(
        getattr(constraints, "min_memory_headroom_gib", 0.0),
        getattr(constraints, "min_memory_headroom_fraction", 0.0),
        memory_factor(assumptions, getattr(constraints, "memory_confidence", None)),
    )


def prepare_job(
    job: Job,
    rows: Sequence[OfferingRow] | None = None,
    base_dir: Path | None = None,
    assumptions: PerfAssumptions | None = None,
    pareto: bool = False,
) -> PreparedJob:
    """Resolve the model, build offerings (catalog + hardware) and the candidate table."""
    model = job.model.resolve(base_dir)
    a = assumptions or assumptions_for_job(job, model)
    if rows is None and job.constraints.cloud:
        raise ConfigError(
            "prepare_job: a cloud job needs the price rows (optimizer.pricing.catalog.load_offering_rows)"
        )
    offerings = job_offerings(rows, job.constraints, job.hardware.owned, job.hardware.buy)
    memos: dict[int, EnumerationMemo] | None = {} if job.constraints.deadline_h is not None else None
    prep = prepare_from_offerings(job, model, offerings, a, slack_stop=not pareto, memos=memos)
    prep.base_dir = base_dir
    return prep


def prepare_from_offerings(
    job: Job,
    model: ModelSpec,
    offerings: Sequence[Offering],
    assumptions: PerfAssumptions,
    prune: bool = True,
    slack_stop: bool = False,
    memos: dict[int, EnumerationMemo] | None = None,
    ceiling: CostCeiling | None = None,
) -> PreparedJob:
    """Enumerate candidates; with `prune`, instance counts that cannot meet the deadline are
    skipped (the explanation of an infeasible job re-enumerates without pruning). `memos` (per
    search variant, filled here when empty) lets a later call on the same job, model and
    offerings reuse this one's evaluations; the result keeps them for `deadline_free`.
    `ceiling`: only the cheapest row under it is needed (enumerate_candidates)."""
    job = fit_job_to_model(job, model)
    w, c = job.workload, job.constraints
    start = time.perf_counter()
    offerings = job_data_offerings(job, model, offerings, assumptions)
    host = host_rule_of(job.data, assumptions)
    tokens_lb = w.total_tokens() * ((1 - w.batch_tolerance) if w.steps is not None else 1.0)
    tables = []
    for position, variant in enumerate(search_variants(job)):
        zero = (
            c.zero_stages if variant.offload != "params" else tuple(z for z in c.zero_stages if z == 3)
        )  # parameters offload per ZeRO-3 shard
        if not zero:
            continue
        tables.append(
            enumerate_candidates(
                model,
                variant.setup,
                SearchRules(
                    BatchRule(w.batch_sequences, w.batch_tolerance),
                    w.steps_for_batch,
                    zero_stages=zero,
                    # only the levels the stack's switch runs (stacks.toml checkpointing_modes)
                    checkpointing=stack_checkpointing(
                        get_stack(variant.setup.stack), c.activation_checkpointing
                    ),
                    min_instances=c.min_instances,
                    max_instances=c.max_instances,
                    max_gpus=c.max_gpus,
                    prune_hours=c.deadline_h if prune else None,
                    tokens_lower_bound=tokens_lb,
                    slack_stop=slack_stop,
                    headroom=headroom_of(c, assumptions),
                    virtual_stages=variant.virtual_stages,
                    allow_internet_multi_node=getattr(c, "allow_internet_multi_node", False),
                    host=host,
                    confidence=c.confidence,
                ),
                offerings,
                assumptions,
                memo=None if memos is None else memos.setdefault(position, EnumerationMemo()),
                ceiling=ceiling,
            )
        )
    table = merge_tables(tables)
    return PreparedJob(
        job,
        model,
        assumptions,
        list(offerings),
        table,
        c.deadline_h,
        c.budget_usd,
        time.perf_counter() - start,
        _memos=memos,
    )


def job_data_offerings(
    job: Job, model: ModelSpec, offerings: Sequence[Offering], assumptions: PerfAssumptions
) -> list[Offering]:
    """The offerings with the job's data charge attached ([data]: dataset transfer, dataset and
    checkpoint storage; a checkpoint is the model's trained weights + optimizer state); as
    they are without a [data] section.

    Raises:
        ConfigError: the dataset's provider or region is unknown.
    """
    data = job.data
    if data is None:
        return list(offerings)
    a = assumptions
    every = data.checkpoint_every_hours or a.checkpoint_every_hours
    kept = data.checkpoints_kept or a.checkpoints_kept
    size = checkpoint_gb(model, job.workload.setup(), a)
    providers = sorted({o.provider for o in offerings if o.kind == "cloud"})
    return with_data(offerings, data, size, every, kept, providers)
