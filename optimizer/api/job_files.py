"""The price rows a job file is planned with: the catalog (the user's cache or the bundled
tables), the user's overlay and the file's own `[pricing]`, keeping every row of the regions
it names. The API loads job files and catalogs; the planners below it take them parsed."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from optimizer.inputs.jobs.pricing import PriceOverlay
from optimizer.pricing.catalog import load_catalog_rows
from optimizer.pricing.schema import OfferingRow

__all__ = ["PricedDocument", "priced_rows", "rows_if_cloud"]


class PricedDocument(Protocol):
    """A job, serving job or batch file: its name, its `[pricing]` and the regions it names."""

    @property
    def name(self) -> str: ...

    @property
    def pricing(self) -> PriceOverlay | None: ...

    def named_regions(self) -> tuple[str, ...]: ...


def priced_rows(
    doc: PricedDocument, prices: str | Path | None, offline: bool | None
) -> tuple[tuple[OfferingRow, ...], dict[str, Any]]:
    """(the catalog rows `doc` is priced with, the catalog's age as the outputs state it).

    Raises:
        CatalogError: the price tables fail validation.
        ConfigError: a bad overlay (names the file or the `[pricing]` field).
    """
    loaded = load_catalog_rows(
        prices,
        offline=offline,
        overlay=doc.pricing,
        overlay_label=f"{doc.name} [pricing]",
        keep_regions=doc.named_regions(),
    )
    return loaded.rows, loaded.age.as_dict()


def rows_if_cloud(
    doc: PricedDocument, cloud: bool, prices: str | Path | None, offline: bool | None
) -> tuple[tuple[OfferingRow, ...] | None, dict[str, Any] | None]:
    """priced_rows of a job that may use the cloud (`cloud`: its constraints.cloud), else
    (None, None): a job on owned or bought hardware only loads no catalog."""
    return priced_rows(doc, prices, offline) if cloud else (None, None)
