"""The price cache's metadata file (written by `ccopt prices refresh` beside the cached CSV)
and the integrity check every load makes: the CSV's SHA-256 and row count must be the ones
recorded when it was written, so a damaged or edited cache is never used."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from optimizer.errors import ConfigError
from optimizer.files import check_nesting, open_input, parse_json

__all__ = ["META_FILE", "read_meta", "checksum_problem", "rows_problem", "sha256_of"]

META_FILE = "offerings.meta.json"
#: the metadata is a few hundred bytes; more than this is not a file refresh wrote
MAX_META_BYTES = 1_000_000


def read_meta(directory: Path) -> dict[str, Any]:
    """The metadata JSON next to the cached CSV ({} if absent or unreadable)."""
    meta = _meta_or_problem(directory)
    return meta if isinstance(meta, dict) else {}


def _meta_or_problem(directory: Path) -> dict[str, Any] | str:
    """The metadata ({} when there is none), or why it cannot be read."""
    path = directory / META_FILE
    if not os.path.lexists(path):
        return {}
    try:  # a regular file only (a FIFO is not waited on), strict JSON, bounded nesting
        with open_input(path, "price cache metadata") as handle:
            data = parse_json(handle.read(MAX_META_BYTES + 1).decode("utf-8"), str(path))
        check_nesting(data, str(path))
    except (OSError, ValueError, RecursionError, ConfigError) as exc:
        return f"{path}: unreadable metadata ({type(exc).__name__})"
    return data if isinstance(data, dict) else f"{path}: the metadata is not a JSON object"


def sha256_of(path: Path) -> str:
    """The hex SHA-256 of a regular file's bytes (OSError for anything else)."""
    digest = hashlib.sha256()
    try:
        with open_input(path, "price cache") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except ConfigError as exc:  # a FIFO or device: not a file to hash
        raise OSError(str(exc)) from None
    return digest.hexdigest()


def checksum_problem(csv_path: Path) -> str | None:
    """Why the cached CSV is not the file refresh wrote (its SHA-256 differs from the recorded
    one), or None. A cache without a recorded checksum (written before ccopt recorded one) is
    not judged here."""
    meta = _meta_or_problem(csv_path.parent)
    if isinstance(meta, str):
        return meta
    recorded = meta.get("sha256")
    if not isinstance(recorded, str):
        return None
    try:
        actual = sha256_of(csv_path)
    except OSError as exc:
        return f"{csv_path}: cannot read ({exc.strerror or exc})"
    if actual != recorded:
        return (
            f"{csv_path}: SHA-256 {actual[:12]}… differs from the {recorded[:12]}… recorded "
            "when it was written"
        )
    return None


def rows_problem(csv_path: Path, rows: int) -> str | None:
    """Why `rows` (the rows read from the cached CSV) is not the count recorded, or None."""
    recorded = read_meta(csv_path.parent).get("rows")
    if isinstance(recorded, int) and recorded != rows:
        return f"{csv_path}: {rows} rows read, {recorded} recorded when it was written"
    return None
