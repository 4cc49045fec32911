"""The mixed-cluster part of a training report (issue 32): the `mix` block of `ccopt plan
--json` (report/mix.py's mix_dict) as a section, and the headline when only a mix meets the
job. Formats only: every number is a field of the block."""

from __future__ import annotations

from typing import Any

from optimizer.report.html.page import Fragment, Section, Table, money, num

__all__ = ["mix_section", "mix_headline", "mix_compare_row", "mix_words"]

_KIND_WORDS = {
    "pricing": "pricing models on one instance type",
    "gpu_types": "two GPU types in one data-parallel job",
}


def mix_words(p: dict[str, Any]) -> str:
    """'32× A100-80GB + 16× H100-80GB' (GPU types) or '2× p4de.24xlarge reserved_1y (held) +
    6× p4de.24xlarge on_demand' (pricing models): the mix's rows in one phrase."""
    if p["kind"] == "gpu_types":
        return " + ".join(f"{r['gpus']}× {r['gpu']}" for r in p["rows"])
    return " + ".join(
        f"{r['instances']}× {r['instance']} {r['pricing']}{' (held)' if r['held'] else ''}" for r in p["rows"]
    )


def _rows_table(p: dict[str, Any]) -> Table:
    rows = tuple(
        (
            r["gpu"],
            f"{r['instance']} ({r['provider']} {r['region']})",
            r["pricing"],
            "yes" if r["held"] else "no",
            str(r["instances"]),
            str(r["gpus"]),
            f"${r['usd_per_hour']:,.2f}",
            f"{r['micro_batch']} × {r['grad_accum']}",
            num(r["type_step_time_s"], 3),
            f"{r['idle_share']:.1%}",
        )
        for r in p["rows"]
    )
    return Table(
        "The mixed cluster, one row per instance type and pricing model",
        (
            "GPU",
            "instance",
            "pricing",
            "held",
            "instances",
            "GPUs",
            "per instance-hour",
            "micro-batch × accum",
            "type step, s",
            "idle share",
        ),
        rows,
        numeric=(4, 5, 6, 8, 9),
    )


def _facts(m: dict[str, Any], p: dict[str, Any]) -> list[tuple[str, str]]:
    facts = [
        ("kind", f"{_KIND_WORDS.get(p['kind'], p['kind'])}, {p['fabric']}"),
        ("cluster", f"{p['instances']} instances, {p['gpus']} GPUs"),
        ("balanced step", f"{num(p['step_time_s'], 3)} s (the slowest type's) × {p['steps']:,} steps"),
        ("global batch", f"{p['global_batch']:,} sequences"),
        ("hours", f"{num(p['hours'], 1)} h ({p['days']:.2f} days)"),
        ("cost", money(p["cost_usd"])),
    ]
    if m["status"] == "only_plan":
        facts.append(("against one type", "only a mix meets the job: no single-type plan does"))
    elif m.get("saving_usd") is not None:
        facts.append(
            (
                "saving",
                f"{money(m['saving_usd'])} against the single-type plan's {money(m['single_cost_usd'])}",
            )
        )
    if p.get("expected_spot_interruptions") is not None:
        facts.append(("spot interruptions", f"{p['expected_spot_interruptions']:.2f} expected"))
    return facts


def mix_section(m: dict[str, Any] | None) -> Section | None:
    """The 'Mixed cluster' section: the mix shown (cheaper than the plan, or the only plan), or
    why none is (its why_not lines, the best mix's cost when one was found); None when the job
    had nothing to mix (no `mix` block, as in results saved before issue 32)."""
    if not m:
        return None
    p = m.get("plan")
    if p is not None:
        if m["status"] == "only_plan":
            lead = (
                f"Only a mixed cluster meets the job: {mix_words(p)} finishes in {p['days']:.2f} days "
                f"for {money(p['cost_usd'])}; no single-type plan does."
            )
        else:
            lead = (
                f"A mixed cluster ({mix_words(p)}) costs {money(p['cost_usd'])}, "
                f"{money(m['saving_usd'])} less than the single-type plan's {money(m['single_cost_usd'])}, "
                "under the same constraints."
            )
        section = Section("mix", "Mixed cluster", lead=lead, facts=_facts(m, p), tables=[_rows_table(p)])
        section.highlight = True
        section.notes = [f"other mixes: {line}" for line in m.get("why_not") or []]
        return section
    best = m.get("best_mix")
    lead = (
        f"No mixed cluster is cheaper: the best mix found ({mix_words(best)}) costs "
        f"{money(best['cost_usd'])} against the plan's {money(m.get('single_cost_usd'))}."
        if best is not None
        else "No mixed cluster meets the job or undercuts the plan."
    )
    section = Section("mix", "Mixed cluster", lead=lead)
    if best is not None:
        section.tables.append(_rows_table(best))
    section.notes = [f"why not: {line}" for line in m.get("why_not") or []]
    return section


def mix_headline(job: dict[str, Any], m: dict[str, Any]) -> list[Fragment]:
    """The headline of a job only a mix meets (no single-type plan)."""
    p = m["plan"]
    return [
        Fragment(f"Only a mixed cluster meets {job.get('name') or job.get('model') or 'this job'}: "),
        Fragment(mix_words(p), "mix.plan.gpus", p["gpus"]),
        Fragment(f" ({p['fabric']}) — finishes in "),
        Fragment(f"{p['days']:.2f}", "mix.plan.days", p["days"]),
        Fragment(" days for "),
        Fragment(money(p["cost_usd"]), "mix.plan.cost_usd", p["cost_usd"]),
        Fragment("."),
    ]


def mix_compare_row(compare: dict[str, Any] | None) -> tuple[str, str, str, str] | None:
    """A row of the 'Best plan per GPU type' table for compare's `mix` block, when a mix is
    cheaper than every single-type plan (or the only plan)."""
    m = (compare or {}).get("mix") or {}
    p = m.get("plan")
    if p is None:
        return None
    what = "only plan" if m["status"] == "only_plan" else f"saves {money(m['saving_usd'])}"
    return (
        "mixed cluster",
        f"{mix_words(p)} ({p['fabric']}; {what})",
        f"{p['days']:.2f}",
        money(p["cost_usd"]),
    )
