"""The one check of a provider/instance name a user wrote against the catalog rows."""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Any

from optimizer.errors import ConfigError, did_you_mean
from optimizer.inputs.gpus import resolve_gpu_id
from optimizer.pricing.schema import OfferingRow

__all__ = ["catalog_rows_named"]


def _named(
    rows: Sequence[OfferingRow], value: str, field: str, key: Any, what: str, where: str, catalog: str
) -> list[OfferingRow]:
    """The rows whose `key(row)` equals `value` case-insensitively, or ConfigError naming
    `field`, the closest names among `rows` and the allowed ones."""
    match = [r for r in rows if key(r).lower() == value.lower()]
    if not match:
        names = sorted({key(r) for r in rows})
        shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
        raise ConfigError(
            f"{field}: {value!r} is not {what}{where} in {catalog}"
            f"{did_you_mean(value, names)}; allowed: {shown} (matching is case-insensitive)"
        )
    return match


def catalog_rows_named(
    rows: Sequence[OfferingRow],
    provider: str,
    instance: str | None,
    provider_field: str,
    instance_field: str,
    *,
    gpu: str | None = None,
    gpu_field: str = "gpu",
    region: str | None = None,
    region_field: str = "region",
    catalog: str = "the price catalog",
) -> list[OfferingRow]:
    """The catalog rows of `provider` (and `instance`, GPU type `gpu`, `region` when given),
    names matched case-insensitively — the one check of a name a user wrote in a limit
    (`[[constraints.availability]]`, `[[capacity.quota]]`, `--instance`): a limit that matches
    no offering would be silently ignored.

    Raises:
        ConfigError: "constraints.availability[0].instance: 'p5.48xlage' is not an instance of
            aws in the price catalog — did you mean 'p5.48xlarge'?; allowed: ... (matching is
            case-insensitive)" — under the field the name came from, the closest names among
            the rows left by the names before it (provider, then instance, GPU, region);
            `catalog` says which rows were searched.
    """
    match = _named(rows, provider, provider_field, attrgetter("provider"), "a provider", "", catalog)
    where = f" of {match[0].provider}"
    if instance is not None:
        match = _named(
            match, instance, instance_field, attrgetter("instance_type"), "an instance", where, catalog
        )
    if gpu is not None:
        gpu_id = resolve_gpu_id(gpu, gpu_field)
        match = _named(match, gpu_id, gpu_field, attrgetter("gpu_id"), "a GPU type", where, catalog)
    if region is not None:
        match = _named(match, region, region_field, attrgetter("region"), "a region", where, catalog)
    return match
