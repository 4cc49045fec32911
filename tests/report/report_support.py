"""What the report tests share: the repository's examples and one made report."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@dataclass(frozen=True)
class Report:
    kind: str
    html: Path
    result: dict[str, Any]  # the JSON contract, computed apart from the report
    charts: tuple[str, ...]
