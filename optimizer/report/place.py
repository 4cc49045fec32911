"""Where a candidate runs, as the contract's place fields (contract/common.PlaceOut): its GPU
type, provider, instance, region, pricing model and instance and GPU counts. One reading for
every output that names a cluster (plans, sizing runs, readings that settle a plan, re-plans,
mixed clusters' rows, serving deployments, RL pools)."""

from __future__ import annotations

from typing import Any, Protocol

from optimizer.solve.train.candidate import Candidate

__all__ = ["OfferingPlace", "offering_place", "place_dict"]


class OfferingPlace(Protocol):
    """What the place fields read of an offering (optimizer.pricing.offering.Offering)."""

    @property
    def gpu_id(self) -> str: ...
    @property
    def provider(self) -> str: ...
    @property
    def instance(self) -> str: ...
    @property
    def region(self) -> str: ...
    @property
    def pricing(self) -> str: ...


def offering_place(off: OfferingPlace) -> dict[str, str]:
    """Where `off` is: its GPU type, provider, instance, region and pricing model."""
    return {
        "gpu": off.gpu_id,
        "provider": off.provider,
        "instance": off.instance,
        "region": off.region,
        "pricing": off.pricing,
    }


def place_dict(c: Candidate) -> dict[str, Any]:
    """The place fields of `c` (contract/common.PlaceOut)."""
    return {**offering_place(c.offering), "instances": c.instances, "gpus": c.gpus}
