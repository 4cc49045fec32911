"""The table of the best plan per group (GPU type, provider) that `ccopt compare` and
`ccopt serve-compare` print: cheapest first, a group without a plan dimmed with the reason."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rich.table import Table

__all__ = ["best_per_table"]


def best_per_table(
    title: str,
    columns: Sequence[str],
    right: Sequence[str],
    best: Mapping[str, dict[str, Any] | None],
    cost_key: str,
    cells: Callable[[dict[str, Any]], list[str]],
    why_not: Mapping[str, str],
) -> Table:
    """One row per group of `best`: its name, then the `cells` of its plan, cheapest by the
    plan's `cost_key` first; a group without a plan (None) last, its `why_not` text dimmed.
    `right`: the columns aligned right (numbers)."""
    table = Table(title=title)
    for col in columns:
        table.add_column(col, justify="right" if col in right else "left")
    blanks = [""] * (len(columns) - 2)
    for name, plan in sorted(best.items(), key=lambda kv: kv[1][cost_key] if kv[1] else math.inf):
        if plan is None:
            table.add_row(name, f"[dim]{why_not.get(name, '')}[/dim]", *blanks)
        else:
            table.add_row(name, *cells(plan))
    return table
