"""The page model a report template renders: headline fragments, sections of facts, tables
and charts, and the number formats (what the CLI prints, so page and terminal agree)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from optimizer import units

__all__ = [
    "Fragment",
    "Table",
    "Chart",
    "Section",
    "Page",
    "money",
    "num",
    "days_words",
    "layout_words",
    "catalog_words",
    "assumptions_section",
    "infeasible_section",
    "why_no_plan",
]


@dataclass(frozen=True)
class Fragment:
    """A piece of the headline sentence; `field` names the JSON field a number came from (the
    page carries it as data-field / data-value so a reader or a test can trace it)."""

    text: str
    field: str | None = None
    value: float | int | str | None = None


@dataclass(frozen=True)
class Table:
    caption: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[int, ...] = ()  # right-aligned columns
    collapsed: bool = False  # long reference lists: shown on request (<details>)


@dataclass(frozen=True)
class Chart:
    chart_id: str
    html: Markup
    caption: str = ""


@dataclass
class Section:
    section_id: str
    title: str
    lead: str = ""
    facts: list[tuple[str, str]] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    charts: list[Chart] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    highlight: bool = False  # drawn as a callout (a mixed cluster that beats the plan)


@dataclass
class Page:
    title: str
    kind: str
    status: str
    headline: list[Fragment]
    subtitle: str
    sections: list[Section]
    made_by: str = ""


def money(usd: float | None) -> str:
    """USD as the CLI prints it (units.money), "—" when unknown."""
    return "—" if usd is None else units.money(usd)


def num(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def days_words(days: float) -> str:
    return f"{days:.2f} day{'' if days == 1 else 's'}"


def layout_words(lay: dict[str, Any], checkpointing: bool = True) -> str:
    """'tp 1 × pp 1 × dp 8, ZeRO-1, no activation checkpointing; micro-batch 2 × grad-accum 4'
    of a layout block (without the checkpointing words when `checkpointing` is False)."""
    ckpt = lay["activation_checkpointing"] if checkpointing else None
    recompute = "" if ckpt is None else f"{'no' if ckpt == 'none' else ckpt} activation checkpointing; "
    return (
        f"tp {lay['tp']} × pp {lay['pp']} × dp {lay['dp']}, ZeRO-{lay['zero_stage']}, {recompute}"
        f"micro-batch {lay['micro_batch']} × grad-accum {lay['grad_accum']}"
    )


def catalog_words(catalog: dict[str, Any] | None) -> str:
    """'prices as of 2026-12-02, 1 day old (bundled)' or 'no cloud prices used'."""
    if not catalog:
        return "no cloud prices used"
    age = catalog.get("age_days")
    old = "" if age is None else f", {age} day{'' if age == 1 else 's'} old"
    return f"prices as of {catalog.get('as_of')}{old} ({catalog.get('source')})"


def _explanation_table(explanation: dict[str, Any]) -> Table | None:
    fixes = explanation.get("fixes") or []
    if not fixes:
        return None
    rows = tuple((f["change"], f.get("requirement") or "", money(f.get("cost_usd"))) for f in fixes)
    return Table(
        "Nearest changes that make it feasible", ("change", "relaxes", "cost after"), rows, numeric=(2,)
    )


def why_no_plan(result: dict[str, Any]) -> str:
    """The explanation of an infeasible result in words (a generic line when it has none)."""
    return (result.get("explanation") or {}).get("text") or "no plan meets the constraints"


def infeasible_section(result: dict[str, Any]) -> Section:
    """Why there is no plan, and the nearest fixes."""
    explanation = result.get("explanation") or {}
    section = Section("infeasible", "Why there is no plan", lead=why_no_plan(result))
    if explanation.get("binding_constraint"):
        section.facts.append(("binding constraint", explanation["binding_constraint"]))
    table = _explanation_table(explanation)
    if table:
        section.tables.append(table)
    return section


def assumptions_section(result: dict[str, Any], facts: list[tuple[str, str]], warnings: list[str]) -> Section:
    """What the answer rests on: the stack, the fabric, flagged prices and guesses, notes, the
    catalog date, the rejected options and how the solver did."""
    section = Section("assumptions", "Assumptions used", facts=list(facts))
    section.facts.append(("price catalog", catalog_words(result.get("catalog"))))
    solver = result.get("solver") or {}
    if solver:
        proven = "proven optimal" if solver.get("proven_optimal") else "not proven optimal"
        section.facts.append(
            (
                "solver",
                f"{solver.get('name')}, {solver.get('status')} "
                f"({proven}), {solver.get('rows')} options, "
                f"{solver.get('wall_s', 0):.3f} s",
            )
        )
    section.notes = [*warnings, *result.get("notes", [])]
    rejected = result.get("rejected") or []
    if rejected:
        seen: dict[tuple[str, str], None] = {}
        for r in rejected:
            seen.setdefault((r["option"], r["reason"]), None)
        section.tables.append(
            Table(
                f"Options excluded before solving ({len(seen)})",
                ("option", "why"),
                tuple(seen),
                collapsed=True,
            )
        )
    return section
