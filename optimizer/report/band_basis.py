"""The evidence a P10-P90 band rests on, as the contract's `interval_basis` (IntervalBasis)."""

from __future__ import annotations

from typing import Any

from optimizer.model.bands import borrowed_from

__all__ = ["basis_dict"]


def basis_dict(cases: int, sources: int, group: str) -> dict[str, Any]:
    """Runs and sources behind a band, its group and, for a band no run of its own group backs,
    what it is borrowed from ('pooled' or a hardware tier's name)."""
    out: dict[str, Any] = {"cases": cases, "sources": sources, "group": group}
    borrowed = borrowed_from(group)
    if borrowed is not None:
        out["borrowed"] = borrowed
    return out
