"""Rent or buy on the terminal: the verdict line, the break-even table and rent vs own by use."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from optimizer.cli.common import money

__all__ = ["print_verdict", "print_break_even", "print_by_utilisation"]


def _shown(v: float | None) -> str:
    return "never" if v is None else f"{v:,.1f}"


def print_verdict(c: Console, v: dict[str, Any] | None) -> None:
    """One line: rent or own, per job, break-even and the flip utilisation."""
    if v:
        c.print(f"  [b]rent or buy: {v['verdict']}[/b] — {escape(v['summary'])}")


def print_break_even(c: Console, data: dict[str, Any]) -> None:
    """Owning the boxes against the best cloud plan of each GPU type, at the stated workload."""
    per_gpu_be = data.get("break_even_per_gpu") or {}
    v = data.get("rent_or_buy")
    if not per_gpu_be or not v:
        return
    rate = f"{v['break_even_jobs_per_month']:.3g} jobs/month"
    table = Table(
        title=f"Owning {escape(v['own_plan'])} (net {money(v['net_capital_usd'])}) against the best "
        f"cloud plan of each GPU type, at {v['jobs_per_month']:.3g} jobs/month "
        f"({v['utilisation']:.1%} utilisation)"
    )
    for col in (
        "cloud plan",
        "cloud per job",
        "own per job",
        "jobs to break even",
        f"months at {rate}",
        "cheaper",
    ):
        table.add_column(col, justify="left" if col in ("cloud plan", "cheaper") else "right")
    for be in sorted(per_gpu_be.values(), key=lambda x: x["cloud_usd_per_job"]):
        w = be.get("verdict") or {}
        table.add_row(
            escape(be["cloud_plan"] or ""),
            money(be["cloud_usd_per_job"]),
            money(w.get("own_usd_per_job", 0.0)),
            _shown(be["jobs_to_break_even"]),
            _shown(be["months_to_break_even"]),
            w.get("verdict", ""),
        )
    c.print(table)


def print_by_utilisation(c: Console, v: dict[str, Any] | None) -> None:
    """Rent vs own per job and per month at 10%, 25%, 50%, 100% utilisation (equal work)."""
    if not v:
        return
    table = Table(title=f"Rent ({escape(v['rent_plan'])}) vs own, the same jobs a month")
    for col in (
        "utilisation",
        "jobs/month",
        "rent per job",
        "own per job",
        "rent per month",
        "own per month",
        "cheaper",
    ):
        table.add_column(col, justify="left" if col == "cheaper" else "right")
    for r in v["by_utilisation"]:
        table.add_row(
            f"{r['utilisation']:.0%}",
            f"{r['jobs_per_month']:.3g}",
            money(r["rent_usd_per_job"]),
            money(r["own_usd_per_job"]),
            money(r["rent_usd_per_month"]),
            money(r["own_usd_per_month"]),
            r["cheaper"],
        )
    c.print(table)
    flip = v["flip_utilisation"]
    where = (
        "never (renting is cheaper at any use)"
        if flip is None
        else f"{flip:.0%} utilisation ({v['flip_jobs_per_month']:.3g} jobs a month)"
        + (": more than the boxes can run" if flip > 1 else "")
    )
    c.print(
        f"verdict at {v['jobs_per_month']:.3g} jobs a month ({v['utilisation']:.1%}): "
        f"[b]{v['verdict']}[/b]; it flips at {where}; owned = (net capital ÷ "
        f"{v['holding_months']:g} months + ops) ÷ jobs a month + power"
    )
