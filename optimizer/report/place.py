"""Where a candidate runs, as the contract's place fields (contract/common.PlaceOut): its GPU
type, provider, instance, region, pricing model and instance and GPU counts. One reading for
every output that names a cluster (plans, sizing runs, readings that settle a plan, re-plans)."""

from __future__ import annotations

from typing import Any

from optimizer.solve.train.candidate import Candidate

__all__ = ["place_dict"]


def place_dict(c: Candidate) -> dict[str, Any]:
    """The place fields of `c` (contract/common.PlaceOut)."""
    off = c.offering
    return {
        "gpu": off.gpu_id,
        "provider": off.provider,
        "instance": off.instance,
        "region": off.region,
        "pricing": off.pricing,
        "instances": c.instances,
        "gpus": c.gpus,
    }
