"""Scarce capacity: a plan that asks a cloud for many on-demand instances of a scarce GPU type
at once usually cannot get them without a reservation (issue 43)."""

from __future__ import annotations

from optimizer.model.setup import PerfAssumptions
from optimizer.solve.train.candidate import Candidate

__all__ = ["SCARCE_GENERATIONS", "CAPACITY_SOURCE", "capacity_note"]

#: GPU generations sold out on demand in large numbers: AWS sells P5 (H100/H200) and P6 (B200)
#: capacity for ML through EC2 Capacity Blocks and On-Demand Capacity Reservations
#: (docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html, read 2026-12-05)
SCARCE_GENERATIONS = ("hopper", "blackwell")
CAPACITY_SOURCE = (
    "EC2 Capacity Blocks for ML (docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html)"
)


def capacity_note(plan: Candidate | None, a: PerfAssumptions) -> str | None:
    """A line when `plan` rents more than `a.scarce_on_demand_instances` on-demand instances of a
    scarce GPU generation outside a cluster offering (clusters.csv rows are sold as clusters)."""
    if plan is None:
        return None
    off = plan.offering
    if off.kind != "cloud" or off.pricing != "on_demand" or off.terms.source:
        return None
    if off.gpu.generation not in SCARCE_GENERATIONS or plan.instances <= a.scarce_on_demand_instances:
        return None
    return (
        f"capacity: {plan.instances} on-demand {off.instance} ({off.gpu_id}) at once in one region "
        "usually needs a capacity reservation or block (on-demand capacity of this GPU type is "
        f"scarce: {CAPACITY_SOURCE}); more than {a.scarce_on_demand_instances} instances "
        "(assumptions.scarce_on_demand_instances, GUESS) raise this line"
    )
