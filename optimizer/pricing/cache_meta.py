"""The price cache's metadata file (written by `ccopt prices refresh` beside the cached CSV)
and the integrity check every load makes: the CSV's SHA-256 and row count must be the ones
recorded when it was written, so a damaged or edited cache is never used."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

__all__ = ["META_FILE", "read_meta", "checksum_problem", "rows_problem", "sha256_of"]

META_FILE = "offerings.meta.json"


def read_meta(directory: Path) -> dict[str, Any]:
    """The metadata JSON next to the cached CSV ({} if absent or unreadable)."""
    try:
        data = json.loads((directory / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def sha256_of(path: Path) -> str:
    """The hex SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def checksum_problem(csv_path: Path) -> str | None:
    """Why the cached CSV is not the file refresh wrote (its SHA-256 differs from the recorded
    one), or None. A cache without a recorded checksum (written before ccopt recorded one) is
    not judged here."""
    recorded = read_meta(csv_path.parent).get("sha256")
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
