"""`ccopt replan JOB.toml`: a job under way (its [progress]) planned for the rest."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from optimizer import api
from optimizer.cli.common import (
    ConfidenceOpt,
    JsonOpt,
    OfflineOpt,
    PricesOpt,
    answer,
    console,
    money,
    offline_choice,
    user_errors,
)

__all__ = ["register"]


def replan(
    job: Annotated[Path, typer.Argument(help="Job file (TOML) with a [progress] table", metavar="JOB")],
    json_out: JsonOpt = False,
    prices: PricesOpt = None,
    offline: OfflineOpt = False,
    confidence: ConfidenceOpt = None,
) -> None:
    """Plan the rest of a job under way from its [progress] (tokens done, hours elapsed, spent,
    what it runs on): keep, grow, shrink or switch, with the cost of switching (checkpoint
    transfer and restart), against the remaining deadline and budget."""
    with user_errors():
        data = api.replan(job, prices=prices, offline=offline_choice(offline), confidence=confidence)
    answer(data, json_out, _render)


def _words(o: dict[str, Any]) -> str:
    return f"{o['instances']}× {o['instance']} ({o['provider']}, {o['pricing']}, {o['gpus']}× {o['gpu']})"


def _render(data: dict[str, Any]) -> None:
    c, p, s = console(), data["progress"], data["switch_costs"]
    hours_left, usd_left = p["remaining_deadline_hours"], p["remaining_budget_usd"]
    left = (
        "no deadline"
        if hours_left is None
        else (f"{hours_left:,.1f} h left" if hours_left >= 0 else f"{-hours_left:,.1f} h past the deadline")
    )
    budget = (
        ""
        if usd_left is None
        else (
            f", {money(usd_left)} of the budget left"
            if usd_left >= 0
            else f", {money(-usd_left)} over budget"
        )
    )
    c.print(
        f"[b]{data['job']}[/b] — {p['fraction_done']:.0%} done in {p['elapsed_hours']:,.1f} h, "
        f"{money(p['spent_usd'])} spent; running at {p['slowness']:.2f}× the predicted step time "
        f"(from the {p['slowness_source']}); {left}{budget}"
    )
    c.print(
        f"  switching: a {s['checkpoint_gb']:,.0f} GB checkpoint at {s['transfer_gbps']:g} Gbit/s "
        f"({s['transfer_hours'] * 60:,.0f} min, egress {money(s['egress_usd'])}: {s['egress_source']}) "
        f"+ a {s['restart_minutes']:g}-minute restart (GUESSES: \\[progress] transfer_gbps, restart_minutes)",
        soft_wrap=True,
    )
    table = Table(title="Options for the rest (the cheapest that fits of each kind, else the fastest)")
    for col in ("kind", "cluster", "hours", "cost", "of which switching", "fits"):
        table.add_column(col, justify="right" if col in ("hours", "cost") else "left")
    for kind, o in data["best_per_kind"].items():
        table.add_row(
            kind,
            _words(o),
            f"{o['hours']:,.1f}",
            money(o["cost_usd"]),
            f"{o['switch_hours']:.2f} h, {money(o['switch_usd'])}",
            "yes" if o["fits"] else "no",
        )
    c.print(table)
    choice = data["choice"]
    if choice is None:
        sys.stderr.write(f"no option finishes within the limits: {data['explanation']}\n")
        return
    c.print(
        f"  answer: {choice['kind']} — {_words(choice)}, {choice['hours']:,.1f} h, "
        f"{money(choice['cost_usd'])}",
        soft_wrap=True,
    )


def register(app: typer.Typer) -> None:
    app.command("replan")(replan)
