"""Price catalog (cloud offerings) and owned/purchasable hardware; names re-exported lazily."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "PRICING_MODELS": "catalog",
    "HOURS_PER_YEAR": "catalog",
    "Catalog": "catalog",
    "load_catalog": "catalog",
    "filter_offerings": "catalog",
    "cheapest_per_gpu_hour": "catalog",
    "CatalogAge": "catalog",
    "CatalogRows": "catalog",
    "load_catalog_rows": "catalog",
    "PriceFlag": "sanity",
    "SanityThresholds": "sanity",
    "check_rows": "sanity",
    "catalog_flags": "sanity",
    "HardwareSpec": "owned",
    "default_hardware": "owned",
    "hardware_from_overrides": "owned",
    "power_usd_per_hour": "owned",
    "capital_usd": "owned",
    "effective_usd_per_gpu_hour": "owned",
    "RefreshResult": "refresh",
    "refresh_prices": "refresh",
    "apply_overlays": "overlay",
    "Overlay": "overlay",
    "catalog_rows_named": "names",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:  # PEP 562: keep `import optimizer.pricing` cheap
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
