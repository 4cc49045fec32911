"""Allowed values shared by job files, the catalog and the planners: each list lives here once."""

from __future__ import annotations

from typing import Literal, get_args

from optimizer.units import HOURS_PER_YEAR

__all__ = [
    "PricingModel",
    "PRICING_MODELS",
    "COMMITMENT_HOURS",
    "InterNodeKind",
    "INTER_NODE_KINDS",
    "IntraNodeLink",
    "INTRA_NODE_LINKS",
    "borrowed_words",
    "RL_KINDS",
]

#: the RL post-training job kinds of `[workload] kind` (planned by optimizer/solve/rl)
RL_KINDS = ("dpo", "grpo", "ppo")

#: capacity_block = a fixed window of reserved capacity paid in full (AWS EC2 Capacity Blocks for
#: ML); its length and start rules are the offering's terms (pricing/terms.py)
PricingModel = Literal["on_demand", "spot", "reserved_1y", "reserved_3y", "capacity_block"]
PRICING_MODELS: tuple[str, ...] = get_args(PricingModel)
#: hours billed by a commitment, per pricing model (1 or 3 years of the instance)
COMMITMENT_HOURS = {
    "on_demand": 0,
    "spot": 0,
    "reserved_1y": HOURS_PER_YEAR,
    "reserved_3y": 3 * HOURS_PER_YEAR,
    "capacity_block": 0,  # billed by its block length (OfferingTerms), not a yearly term
}

#: internet: marketplace hosts in different locations, joined only by the public internet
InterNodeKind = Literal["infiniband", "efa", "ethernet", "rdma", "internet", "none"]
INTER_NODE_KINDS: tuple[str, ...] = get_args(InterNodeKind)
IntraNodeLink = Literal["nvlink", "pcie", "xgmi", "nvlink-c2c"]
INTRA_NODE_LINKS: tuple[str, ...] = get_args(IntraNodeLink)


def borrowed_words(borrowed: str) -> str:
    """A band no run of its own GPU generation and precision backs, in words: `borrowed` is
    "pooled" (every thinly measured group's band) or a hardware tier's name, as
    model/bands.borrowed_from answers and the JSON's interval_basis.borrowed carries it (the
    planner's notes and the CLI's lines word it the same way)."""
    if borrowed == "pooled":
        return "the pooled band of thinly measured groups"
    return f"the band of the {borrowed} tier's measured groups"
