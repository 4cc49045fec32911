"""What a careful user should double-check before spending money on a training plan."""

from __future__ import annotations

from optimizer.solve.train.enumerate import Candidate
from optimizer.units import HOURS_PER_YEAR

__all__ = ["plan_warnings", "network_notes"]


def network_notes(c: Candidate) -> list[str]:
    """First-line notes: a multi-instance plan that rests on a guessed network or on the
    public internet between marketplace hosts."""
    off = c.offering
    if c.instances < 2 or off.kind != "cloud":
        return []
    out = []
    if off.inter_node_kind == "internet":
        out.append(
            f"relies on the public internet between {c.instances} {off.provider} hosts "
            f"({off.inter_node_gbps:g} Gbit/s assumed; allowed by "
            "constraints.allow_internet_multi_node)"
        )
    elif off.inter_node_is_default:
        out.append(
            f"relies on a guessed inter-node network: {off.inter_node_gbps:g} Gbit/s "
            f"{off.inter_node_kind} between {c.instances} {off.provider} {off.instance} "
            "instances (no published figure; pricing_data/instance_network.csv)"
        )
    return out


def plan_warnings(c: Candidate) -> list[str]:
    """What a careful user should double-check before spending money on this plan."""
    off, out = c.offering, []
    if (
        c.instances > 1
        and off.kind == "cloud"
        and (off.inter_node_is_default or off.inter_node_kind in ("ethernet", "internet"))
    ):
        source = "a documented guess" if off.inter_node_is_default else "published"
        out.append(
            f"{c.instances} instances exchange gradients over {off.inter_node_gbps:g} Gbit/s "
            f"{off.inter_node_kind} ({source}); step time is sensitive to it — confirm "
            f"the network with {off.provider} or calibrate on 2 instances"
        )
    if off.pricing == "spot" and c.spot is not None:
        s = c.spot
        guess = " (GUESS)" if off.spot_rate_source.upper().startswith("GUESS") else ""
        out.append(
            f"spot: expects {s.expected_interruptions:.2f} interruptions "
            f"({s.interruptions_per_instance_day:g} per instance-day{guess} × "
            f"{s.instances}); a {s.checkpoint_gib:.0f} GiB checkpoint every "
            f"{s.checkpoint_interval_s / 3600:.1f} h ({s.checkpoint_write_s:.0f} s to "
            f"write), {s.restart_s / 60:.0f} min per restart: "
            f"+{s.expected_wall_s / s.work_s - 1:.1%} wall time; capacity is not "
            "guaranteed"
        )
    elif off.pricing == "spot":
        out.append(
            f"spot: assumes +{off.spot_overhead:.0%} wall time for preemptions and restarts "
            "from checkpoints; capacity is not guaranteed"
        )
    if off.commitment_hours:
        out.append(
            f"reserved: the whole {off.commitment_hours / HOURS_PER_YEAR:g}-year term is billed "
            f"(${c.cost_usd:,.0f}) whatever the job uses"
        )
    if c.step.ceiling_note:
        out.append(f"{c.step.ceiling_note}: the plan assumes no faster run than the evidence shows")
    if off.gpu.spec_confidence not in ("published",):
        out.append(
            f"{off.gpu_id} specs are {off.gpu.spec_confidence}; calibrate before relying on the time estimate"
        )
    return out
