"""`ccopt prices refresh` without a URL: download the public SkyPilot catalog's per-cloud
vms.csv files, convert them with the code that built the bundled table, and install the
result only when every file arrived, converted and passed the shrink guard.

Each file has its own deadline and the shrink guard is applied per provider (a cloud losing a
fifth of its rows, or all of them, is refused even when the others grew). Providers the
catalog does not carry (CoreWeave) keep their rows from the table in use; our own cluster and
capacity-block rows (pricing_data/clusters.csv) are added from that table. Any failure leaves
the previous tables byte-identical.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from pathlib import Path

from optimizer.errors import CatalogError, RefreshError
from optimizer.pricing.build_bundled import build_from_catalog, write_csv
from optimizer.pricing.cache_meta import checksum_problem
from optimizer.pricing.catalog import bundled_path
from optimizer.pricing.clusters import cluster_keys
from optimizer.pricing.download import Deadline, download
from optimizer.pricing.sanity import record_key
from optimizer.pricing.schema import rows_to_frame, validate_csv
from optimizer.pricing.shrink import check_shrink
from optimizer.pricing.skypilot import CATALOG_VERSIONS, file_url

__all__ = ["download_catalog", "catalog_table", "ACCEPT_CSV"]

#: what a price download accepts (an offerings CSV or a SkyPilot catalog table)
ACCEPT_CSV = {"Accept": "text/csv, text/plain;q=0.9, */*;q=0.5"}


def download_catalog(
    base: str, timeout_s: float, retries: int, max_bytes: int, backoff_s: float, deadline_s: float
) -> tuple[dict[str, str], dict[str, str], int]:
    """(cloud -> vms.csv text, cloud -> URL, total bytes); each file within its own deadline.

    Raises:
        RefreshError: the first file that fails, naming its URL.
    """
    texts: dict[str, str] = {}
    urls: dict[str, str] = {}
    total = 0
    for cloud in CATALOG_VERSIONS:
        url = file_url(base, cloud)
        try:
            status, body, _ = download(
                url, dict(ACCEPT_CSV), timeout_s, retries, max_bytes, backoff_s, Deadline.after(deadline_s)
            )
            if status != 200:
                raise RefreshError(f"unexpected HTTP {status}")
            texts[cloud] = body.decode("utf-8")
        except RefreshError as exc:
            raise RefreshError(f"{url}: {exc}") from None
        except UnicodeDecodeError as exc:
            raise RefreshError(f"{url}: not UTF-8 text (byte {exc.start})") from None
        urls[cloud] = url
        total += len(body)
    return texts, urls, total


def _in_use(csv_path: Path) -> tuple[Path, str]:
    """The table a refresh would replace: the cache if it is the file refresh wrote, else the
    bundled table (what `load_catalog` would read)."""
    if csv_path.is_file() and checksum_problem(csv_path) is None:
        try:
            with open(csv_path, newline="", encoding="utf-8") as handle:
                validate_csv(handle, csv_path)
            return csv_path, "cached table"
        except (CatalogError, OSError, UnicodeDecodeError):
            pass
    return bundled_path(), "bundled table"


def catalog_table(
    texts: dict[str, str],
    urls: dict[str, str],
    csv_path: Path,
    read_date: dt.date,
    allow_shrink: bool,
) -> tuple[bytes, list[str]]:
    """The new offerings CSV (bytes) and the notes on what was left out.

    Rows of providers the catalog does not carry are copied from the table in use (our own
    cluster rows, pricing_data/clusters.csv, come from that table, not the old one); each
    provider's rows are checked against that table's with the shrink guard.

    Raises:
        RefreshError: schema drift, an invalid converted table, or a provider that shrank.
    """
    rows, dropped, conversion = build_from_catalog(texts, read_date.isoformat(), urls)
    previous_path, label = _in_use(csv_path)
    with open(previous_path, newline="", encoding="utf-8") as handle:
        previous = list(csv.DictReader(handle))
    own = cluster_keys()  # clusters.csv rows come fresh from build_from_catalog
    rows += [r for r in previous if r["provider"] not in CATALOG_VERSIONS and record_key(r) not in own]
    buffer = io.StringIO()
    write_csv(rows, buffer)
    text = buffer.getvalue()
    try:
        new = rows_to_frame(validate_csv(io.StringIO(text), "converted catalog"))
        with open(previous_path, newline="", encoding="utf-8") as handle:
            old = rows_to_frame(validate_csv(handle, previous_path))
    except CatalogError as exc:
        raise RefreshError(f"converted table is invalid: {exc}") from None
    if not allow_shrink:
        for cloud in CATALOG_VERSIONS:
            old_part = old[old["provider"] == cloud]
            if len(old_part):
                check_shrink(
                    old_part, new[new["provider"] == cloud], f"{label} ({cloud} rows from {urls[cloud]})"
                )
    notes = conversion.skipped + [
        f"{d['provider']} {d['instance_type']}: GPU {d['gpu']!r} is not in the GPU catalog" for d in dropped
    ]
    return text.encode("utf-8"), notes
