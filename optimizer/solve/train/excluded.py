"""Why not the offerings the job excluded? One line per kind that would have made the plan cheaper.

A job may exclude guessed networks (trust_guessed_network = false), spot or capacity blocks (its
`pricing` list); the catalog may sell a cluster by quote only, or hold no multi-node cluster
with a published fabric for a GPU type that often wins. For each excluded kind the offerings it
would add are enumerated and solved on their own (the same candidate table and CP-SAT model as
the plan), and a line says what the cheapest of them would cost and why it was not taken.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from optimizer.pricing.clusters import quote_only_clusters
from optimizer.pricing.offering import Offering
from optimizer.pricing.offerings import job_offerings
from optimizer.pricing.schema import OfferingRow
from optimizer.solve.cpsat.solver import SolverConfig
from optimizer.solve.train.candidate import Candidate
from optimizer.solve.train.model import solve_table
from optimizer.solve.train.prepare import PreparedJob, prepare_from_offerings
from optimizer.solve.train.scan import CostCeiling

__all__ = ["excluded_notes", "CLUSTER_GPUS", "FABRIC_KINDS"]

#: GPU types for which a multi-node cluster with a published fabric often wins a large job
CLUSTER_GPUS = ("H100-80GB", "H200-141GB", "B200")
#: fabrics built for GPU-to-GPU traffic between nodes
FABRIC_KINDS = ("infiniband", "efa", "rdma")
#: an excluded plan within this many dollars of the plan's cost is not called cheaper (the
#: lines print whole dollars)
SAME_COST_USD = 0.5


def _relaxations(constraints: Any) -> list[tuple[dict[str, Any], str]]:
    """(constraint changes, why the offerings they add were not taken) for what the job excluded."""
    out: list[tuple[dict[str, Any], str]] = []
    if not getattr(constraints, "trust_guessed_network", True):
        out.append(
            (
                {"trust_guessed_network": True},
                "its inter-node bandwidth is a guess and the job sets trust_guessed_network = false",
            )
        )
    pricing = tuple(constraints.pricing)
    for model, why in (
        ("spot", "spot is not in constraints.pricing (it can be interrupted)"),
        ("capacity_block", "capacity_block is not in constraints.pricing (a block is paid in full)"),
    ):
        if model not in pricing:
            out.append(({"pricing": (*pricing, model)}, why))
    return out


def _identity(off: Offering) -> tuple[str, int | None]:
    return off.key, off.max_instances


def _cheapest_added(
    prep: PreparedJob,
    rows: Sequence[OfferingRow],
    update: dict[str, Any],
    config: SolverConfig | None,
    below_usd: float | None,
) -> Candidate | None:
    """The cheapest plan on the offerings a relaxed constraint adds (None: none meets the job,
    or none is cheaper than `below_usd` by more than SAME_COST_USD).
    With `below_usd` (the plan's cost) an added offering whose cost floor is above it, or above
    the cheapest added row found so far that meets the job, is not enumerated
    (enumerate.cost_floor_usd): it could not make a cheaper line."""
    constraints = prep.job.constraints.model_copy(update=update)
    have = {_identity(o) for o in prep.offerings}
    added = [o for o in job_offerings(rows, constraints) if _identity(o) not in have]
    if not added:
        return None
    job = prep.job.model_copy(update={"constraints": constraints})
    ceiling = (
        None if below_usd is None else CostCeiling(below_usd, prep.deadline_h, prep.budget_usd, meeting=True)
    )
    table = prepare_from_offerings(
        job, prep.model, added, prep.assumptions, slack_stop=True, memos=prep.layout_memos(), ceiling=ceiling
    ).table
    if not any(below_usd is None or c.cost_usd < below_usd - SAME_COST_USD for c in table.candidates):
        return None  # no added row is cheaper than the plan by more than SAME_COST_USD: no line
    return solve_table(table.candidates, prep.deadline_h, prep.budget_usd, config=config)[1]


def _plan_words(c: Candidate) -> str:
    off = c.offering
    return f"{c.gpus}× {off.gpu_id} ({off.provider} {off.instance}, {off.pricing})"


def _no_cluster_lines(prep: PreparedJob) -> list[str]:
    """GPU types the job allows with no usable multi-node offering on a published fabric."""
    allowed = prep.job.constraints.gpu_types
    lines = []
    for gpu in CLUSTER_GPUS:
        if allowed is not None and gpu not in allowed:
            continue
        usable = [
            o
            for o in prep.offerings
            if o.gpu_id == gpu
            and o.inter_node_kind in FABRIC_KINDS
            and not o.inter_node_is_default
            and (o.max_instances is None or o.max_instances > 1)
        ]
        if not usable:
            lines.append(
                f"no priced multi-node {gpu} cluster with a published fabric is open to this job "
                "(such clusters often win large jobs; pricing_data/clusters.csv lists the ones read)"
            )
    return lines


def excluded_notes(
    prep: PreparedJob,
    best: Candidate | None,
    rows: Sequence[OfferingRow] | None,
    config: SolverConfig | None = None,
) -> list[str]:
    """One line per excluded offering kind that would make the plan cheaper, with its cost and
    why it was not taken; lines for clusters sold by quote only and for GPU types without a
    multi-node cluster on a published fabric."""
    if rows is None or not prep.job.constraints.cloud:
        return []
    lines = []
    for update, why in _relaxations(prep.job.constraints):
        other = _cheapest_added(prep, rows, update, config, None if best is None else best.cost_usd)
        if other is not None and (best is None or other.cost_usd < best.cost_usd - SAME_COST_USD):
            saving = "" if best is None else f", ${best.cost_usd - other.cost_usd:,.0f} less"
            lines.append(
                f"excluded: {_plan_words(other)} would cost ${other.cost_usd:,.0f} in "
                f"{other.hours / 24:.2f} days{saving}; not taken: {why}"
            )
    gpus = {o.gpu_id for o in prep.offerings}
    providers = prep.job.constraints.providers
    for row in quote_only_clusters(gpus):
        if providers is not None and row.provider not in {p.lower() for p in providers}:
            continue
        lines.append(
            f"by quote only: {row.label} on {row.inter_node_kind} {row.inter_node_gbps:g} Gbit/s "
            f"({row.terms.describe()}) has no published price, so it is not planned; ask the provider"
        )
    return lines + _no_cluster_lines(prep)
