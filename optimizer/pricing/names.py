"""The one check of a provider/instance name a user wrote against the catalog rows."""

from __future__ import annotations

from collections.abc import Sequence

from optimizer.errors import ConfigError, did_you_mean
from optimizer.pricing.schema import OfferingRow

__all__ = ["catalog_rows_named"]


def catalog_rows_named(
    rows: Sequence[OfferingRow],
    provider: str,
    instance: str | None,
    provider_field: str,
    instance_field: str,
) -> list[OfferingRow]:
    """The catalog rows of `provider` (and `instance`; None: all of the provider's), names
    matched case-insensitively — the one check of a provider/instance name a user wrote.

    Raises:
        ConfigError: "constraints.availability[0].instance: 'p5.48xlage' is not an instance of aws
            in the price catalog — did you mean 'p5.48xlarge'?; allowed: ..." (closest names
            and the allowed ones, under the field the name came from).
    """
    providers = sorted({r.provider for r in rows})
    same = [r for r in rows if r.provider == provider.lower()]
    if not same:
        raise ConfigError(
            f"{provider_field}: {provider!r} is not a provider of the price catalog"
            f"{did_you_mean(provider, providers)}; allowed: {', '.join(providers)} (case-insensitive)"
        )
    if instance is None:
        return same
    match = [r for r in same if r.instance_type.lower() == instance.lower()]
    if not match:
        instances = sorted({r.instance_type for r in same})
        shown = ", ".join(instances[:12]) + (", ..." if len(instances) > 12 else "")
        raise ConfigError(
            f"{instance_field}: {instance!r} is not an instance of {provider.lower()} in the price "
            f"catalog{did_you_mean(instance, instances)}; allowed: {shown} (case-insensitive)"
        )
    return match
