"""A mixed cluster on the terminal (the `mix` object of `ccopt plan --json`, issue 32)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from optimizer.cli.common import money

__all__ = ["print_mix", "mix_lines", "mix_pointer", "compare_mix_line"]


def mix_lines(m: dict[str, Any] | None) -> list[str]:
    """The mix shown (cheaper than the plan, or the only plan) as lines; why not, otherwise."""
    if not m:
        return []
    notes = [f"note: {line}" for line in m.get("unused_held") or []]
    p = m.get("plan")
    if p is None:
        best = m.get("best_mix")
        if best is None or not m.get("why_not"):
            return notes
        return [*notes, f"no mixed cluster is cheaper: {m['why_not'][-1]}"]
    if m["status"] == "only_plan":
        head = "only a mixed cluster meets the job"
    else:
        head = (
            f"a mixed cluster is cheaper by {money(m['saving_usd'])} "
            f"(single-type plan {money(m['single_cost_usd'])})"
        )
    kind = "pricing models on one instance type" if p["kind"] == "pricing" else "GPU types on one fabric"
    lines = [
        *notes,
        f"{head}: {money(p['cost_usd'])} in {p['days']:.2f} days ({p['hours']:,.1f} h), {kind}, "
        f"{p['fabric']}",
    ]
    for r in p["rows"]:
        held = ", held" if r["held"] else ""
        idle = f", waits {r['idle_share']:.0%} of each step" if r["idle_share"] >= 0.005 else ""
        lines.append(
            f"  {r['instances']}× {r['instance']} ({r['gpus']}× {r['gpu']}), {r['pricing']}{held} at "
            f"${r['usd_per_hour']:,.2f}/h — micro-batch {r['micro_batch']} × grad-accum {r['grad_accum']}"
            f"{idle}"
        )
    lines.append(
        f"  step {p['step_time_s']:.2f} s (the slowest type's) × {p['steps']:,} steps; "
        f"global batch {p['global_batch']}"
    )
    return lines


def mix_pointer(m: dict[str, Any] | None) -> str | None:
    """One line under the plan's headline when a mixed cluster beats it (the mix is the answer
    to act on; its rows follow further down)."""
    if not m or m.get("status") != "cheaper" or m.get("plan") is None:
        return None
    return (
        f"cheaper as a mixed cluster: {money(m['plan']['cost_usd'])} "
        f"({money(m['saving_usd'])} less; the mix is below)"
    )


def print_mix(c: Console, m: dict[str, Any] | None) -> None:
    for line in mix_lines(m):
        c.print(f"  {escape(line)}")


def compare_mix_line(m: dict[str, Any] | None) -> str | None:
    """`ccopt compare`'s one line for a mix cheaper than every single-type plan (or the only
    plan): its cost, rows and saving; None otherwise (the plan's own output explains why not)."""
    p = (m or {}).get("plan")
    if m is None or p is None:
        return None
    rows = " + ".join(
        f"{r['instances']}× {r['instance']} {r['pricing']}{' held' if r['held'] else ''}" for r in p["rows"]
    )
    what = (
        "only a mixed cluster meets the job"
        if m["status"] == "only_plan"
        else f"a mixed cluster beats the best single-type plan ({money(m['single_cost_usd'])}) "
        f"by {money(m['saving_usd'])}"
    )
    return (
        f"{what}: {money(p['cost_usd'])} in {p['days']:.2f} days, {rows} ({p['fabric']}; ccopt plan shows it)"
    )
