"""The report page of a training job: plan, cost, alternatives, memory, step time, Pareto
front, cost vs deadline, rent vs buy, assumptions — from plan/compare JSON."""

from __future__ import annotations

from typing import Any

from optimizer.report.html.figures import (
    deadline_figure,
    deadline_points,
    figure_chart,
    memory_figure,
    pareto_figure,
    rent_buy_figure,
    step_figure,
)
from optimizer.report.html.goodput import goodput_section
from optimizer.report.html.inputs import ReportInputs
from optimizer.report.html.mix import mix_compare_row, mix_headline, mix_section
from optimizer.report.html.page import (
    Fragment,
    Page,
    Section,
    Table,
    assumptions_section,
    days_words,
    infeasible_section,
    layout_words,
    money,
    num,
    why_no_plan,
)
from optimizer.report.html.sizing_run import sizing_run_section
from optimizer.units import HOURS_PER_DAY, quantile_label

__all__ = ["train_page"]


def _headline(job: dict[str, Any], p: dict[str, Any]) -> list[Fragment]:
    parts = [
        Fragment(f"Train {job.get('name') or job.get('model') or 'this job'} on "),
        Fragment(f"{p['gpus']}", "plan.gpus", p["gpus"]),
        Fragment("× "),
        Fragment(p["gpu"], "plan.gpu", p["gpu"]),
        Fragment(f" ({p['instances']}× {p['instance']}, "),
        Fragment(p["provider"], "plan.provider", p["provider"]),
        Fragment(f" {p['region']}, "),
        Fragment(p["pricing"], "plan.pricing", p["pricing"]),
        Fragment(") — finishes in "),
        Fragment(f"{p['days']:.2f}", "plan.days", p["days"]),
        Fragment(" days for "),
        Fragment(money(p["cost_usd"]), "plan.cost_usd", p["cost_usd"]),
    ]
    if p.get("confidence") is not None:
        parts += [Fragment(f" at {quantile_label(p['confidence'])}")]
    if p.get("days_p50") is not None and p.get("cost_usd_p50") is not None:
        parts += [Fragment(f" (P50: {p['days_p50']:.2f} days, {money(p['cost_usd_p50'])};")]
        parts += [Fragment(f" P90: {p['days_p90']:.2f} days, {money(p['cost_usd_p90'])})")]
    elif p.get("days_p90") is not None and p.get("cost_usd_p90") is not None:
        parts += [Fragment(f" (P90: {p['days_p90']:.2f} days, {money(p['cost_usd_p90'])})")]
    return [*parts, Fragment(".")]


def _price_words(price: dict[str, Any]) -> str:
    """Where the plan's price comes from and how old it is (the plan's `price` block)."""
    words = {"overlay": "your prices", "refreshed": "refreshed tables", "bundled": "bundled tables"}
    text = words.get(price["source"], price["source"])
    if price.get("note"):
        text += f" ({price['note']})"
    if price.get("as_of"):
        text += f", as of {price['as_of']} ({price.get('age_days')} days old)"
    if price.get("stale"):
        text += f" — older than {price.get('max_age_days')} days: check it"
    return text


def _job_facts(result: dict[str, Any], p: dict[str, Any] | None) -> list[tuple[str, str]]:
    job = result.get("job") or {}
    facts = [("job", str(job.get("name") or "—")), ("model", str(job.get("model") or "—"))]
    if job.get("params"):
        facts.append(("parameters", f"{job['params'] / 1e9:.2f} B"))
    if job.get("tokens"):
        facts.append(("tokens", f"{job['tokens']:,.0f}"))
    if job.get("deadline_hours") is not None:
        facts.append(("deadline", days_words(job["deadline_hours"] / HOURS_PER_DAY)))
    facts.append(("budget", money(job.get("budget_usd")) if job.get("budget_usd") else "none"))
    if p is not None:
        facts += [
            ("layout", layout_words(p["layout"])),
            ("steps", f"{p['steps']:,} of {p['global_batch']:,} sequences"),
            (
                "speed",
                f"{p['tokens_per_s']:,.0f} tokens/s ({p['tokens_per_s_per_gpu']:,.0f} "
                f"per GPU), MFU {p['mfu']:.1%}",
            ),
        ]
        if p.get("price"):
            facts.append(("price", _price_words(p["price"])))
    if result.get("binding_constraint"):
        late = result.get("cheaper_if_later")
        facts.append(
            (
                "what binds",
                str(result["binding_constraint"])
                + (
                    ""
                    if not late
                    else f": {late['gpus']}× {late['gpu']} ({late['provider']}) would "
                    f"cost {money(late['cost_usd'])} but needs {days_words(late['days'])}"
                ),
            )
        )
    return facts


def _cost_table(p: dict[str, Any], verdict: dict[str, Any] | None = None) -> Table:
    # results saved by an older ccopt lack the figures added since (running_usd, gpu_hours,
    # data.storage_usd, memory_headroom_fraction): shown as "—", never worked out here
    gpu_hours = f"{p['gpus']} GPUs × {p['hours']:,.1f} h = {num(p.get('gpu_hours'), 0)} GPU-hours"
    capital_how = (
        "net capital (purchase − resale) and ops fee spread over "
        f"{verdict['jobs_per_month']:.3g} jobs a month ({verdict['utilisation']:.0%} utilisation; "
        f"{verdict['usage']}) for {verdict['holding_months']:g} months"
        if verdict
        else "none (an owned box: power only)"
        if not p.get("capital_usd")
        else "net capital (purchase − resale) and ops fee, this job's share"
    )
    if p["kind"] != "cloud":
        # the rate is per box-hour, not per GPU-hour: the line multiplies what it shows
        box_hours = f"{p['instances']} box{'es' if p['instances'] > 1 else ''} × {p['hours']:,.1f} h"
        rows = [
            (
                "owned capital",
                f"{p['kind']}: {p['gpus']}× {p['gpu']}; {capital_how}",
                money(p["capital_usd"]),
            ),
            (
                "power and running",
                f"{box_hours} busy: power × PUE × electricity while running",
                money(p.get("running_usd")),
            ),
        ]
    elif p.get("commitment_hours"):
        rows = [
            (
                "reserved commitment",
                f"{gpu_hours} used; {p['commitment_hours']:,.0f} "
                f"committed hours ({p['pricing']}) paid at {money(p['usd_per_hour'])}/h",
                money(p.get("running_usd")),
            )
        ]
    else:
        rows = [
            (
                "GPU time",
                f"{gpu_hours} at {money(p['usd_per_hour'])}/h ({p['pricing']})",
                money(p.get("running_usd")),
            )
        ]
    rows += _data_rows(p.get("data") or {})
    rows += [("total", "what the job costs", money(p["cost_usd"]))]
    return Table("Cost breakdown", ("item", "how", "USD"), tuple(rows), numeric=(2,))


def _data_rows(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The cost lines of the job's data: transfer and storage, or why they are not counted."""
    if data.get("counted"):
        unknown = f"; unknown, counted $0: {'; '.join(data['unknown'])}" if data.get("unknown") else ""
        return [
            ("dataset transfer", f"{data['egress_gb']:,.0f} GB, {data['route']}", money(data["egress_usd"])),
            (
                "storage",
                f"dataset copy {money(data['dataset_storage_usd'])}, checkpoints "
                f"{money(data['checkpoint_storage_usd'])} at "
                f"${data['storage_usd_per_gb_month']:g}/GB-month{unknown}",
                money(data.get("storage_usd")),
            ),
        ]
    return [("data and storage", "not counted: the job has no [data] section", "—")]


def _share(fraction: float | None) -> str:
    return "—" if fraction is None else f"{fraction:.0%}"


def _plan_row(label: str, r: dict[str, Any]) -> tuple[str, ...]:
    usd = r.get("extra_cost_usd")
    extra = "" if usd is None else ("−" if usd < 0 else "+") + money(abs(usd))
    lay = r["layout"]
    return (
        label,
        f"{r['gpus']}× {r['gpu']}",
        r["provider"],
        r["instance"],
        r["pricing"],
        f"{r['days']:.2f}",
        money(r["cost_usd"]),
        extra,
        f"tp{lay['tp']} pp{lay['pp']} dp{lay['dp']} Z{lay['zero_stage']}",
    )


def _cost_section(result: dict[str, Any], p: dict[str, Any]) -> Section:
    verdict = result.get("rent_or_buy") if p["kind"] != "cloud" else None
    section = Section("cost", "Cost and alternatives", tables=[_cost_table(p, verdict)])
    rows = [_plan_row("chosen", p)] + [
        _plan_row(f"alt {i + 1}", a) for i, a in enumerate(result.get("alternatives") or [])
    ]
    section.tables.append(
        Table(
            "The plan and the next-best distinct alternatives",
            ("", "GPUs", "provider", "instance", "pricing", "days", "cost", "extra", "layout"),
            tuple(rows),
            numeric=(5, 6, 7),
        )
    )
    return section


def _memory_band_rows(p: dict[str, Any]) -> list[tuple[str, str]]:
    """The device peak at the memory band's P10–P90 (widened for new sources), if saved."""
    if p.get("memory_device_gib_p90") is None:
        return []
    return [("device, P10–P90", f"{num(p.get('memory_device_gib_p10'))}–{num(p['memory_device_gib_p90'])}")]


def _memory_step_section(p: dict[str, Any]) -> Section:
    mem = p["memory_gib"]
    card = p.get("gpu_memory_gib")
    section = Section("memory", "Memory and step time")
    parts = [
        (k, mem.get(k) or 0.0)
        for k in ("weights", "gradients", "optimizer", "activations", "kv_cache", "overhead")
    ]
    rows = [(k.replace("_", " "), num(v)) for k, v in parts if v] + [
        ("total (peak allocated)", num(mem["total"]))
    ]
    for key, words in (("reserved", "allocator reserved"), ("device", "nvidia-smi (device)")):
        if mem.get(key) is not None:
            rows.append((words, num(mem[key])))
    rows += _memory_band_rows(p)
    if card:
        rows += [
            ("card", num(card, 0)),
            (
                "headroom",
                f"{num(p.get('memory_headroom_gib'))} ({_share(p.get('memory_headroom_fraction'))})",
            ),
        ]
    section.tables.append(
        Table(f"Per-GPU memory, GiB ({p['gpu']})", ("part", "GiB"), tuple(rows), numeric=(1,))
    )
    section.charts.append(
        figure_chart(
            "chart-memory",
            memory_figure([(f"{p['gpu']}", mem, card)]),
            "Stacked parts are what the planner fits "
            "(peak allocated); the marks show what the caching allocator reserves, what nvidia-smi "
            "would show and the card.",
        )
    )
    step = p["step"]
    section.tables.append(
        Table(
            "One optimizer step, seconds",
            ("part", "s"),
            (
                ("compute", num(step["compute_s"], 3)),
                ("communication not hidden behind compute", num(step["communication_s"], 3)),
                ("pipeline bubble", num(step["bubble_s"], 3)),
                ("waiting for the host's kernel launches", num(step.get("host_wait_s", 0.0), 3)),
                ("step", num(step["time_s"], 3)),
                ("P10 – P90", f"{num(p.get('step_time_s_p10'), 3)} – {num(p.get('step_time_s_p90'), 3)}"),
            ),
            numeric=(1,),
        )
    )
    section.charts.append(
        figure_chart(
            "chart-step",
            step_figure(p),
            "Communication is what stays exposed after overlap with compute; "
            "the whisker is the P10–P90 range of the step time.",
        )
    )
    return section


def _pareto_section(
    result: dict[str, Any], p: dict[str, Any], sweep: tuple[dict[str, Any], ...]
) -> Section | None:
    pareto = result.get("pareto") or []
    if not pareto and not sweep:
        return None
    deadline_h = (result.get("job") or {}).get("deadline_hours")
    deadline_d = None if deadline_h is None else deadline_h / HOURS_PER_DAY
    section = Section(
        "pareto",
        "Cost vs finish time",
        lead="Every plan on the front is the "
        "cheapest that finishes by its time; no plan is both cheaper and faster.",
    )
    if pareto:
        section.charts.append(
            figure_chart(
                "chart-pareto",
                pareto_figure(pareto, p, deadline_d),
                "Error bars: finish time P10–P90 (P10 scaled from the step time's P10), cost up to its P90.",
            )
        )
    points = deadline_points(pareto, sweep)
    if points:
        section.charts.append(
            figure_chart(
                "chart-deadline",
                deadline_figure(points, deadline_d, p["cost_usd"]),
                "Up to the job's deadline the curve is read off the Pareto front (the cheapest plan "
                "finishing within each time); diamonds are the job re-planned at longer deadlines.",
            )
        )
        section.tables.append(
            Table(
                "Cheapest plan by deadline",
                ("deadline, days", "cost", "how"),
                tuple((f"{d:.2f}", money(c) if c is not None else "no plan", s) for d, c, s in points),
                numeric=(0, 1),
            )
        )
    return section


def _rent_buy_section(compare: dict[str, Any] | None, result: dict[str, Any]) -> Section:
    section = Section("rent-vs-buy", "Rent vs buy")
    v = (compare or {}).get("rent_or_buy") or result.get("rent_or_buy")
    if not v:
        section.lead = (
            "The job names no hardware to buy (or owned boxes with charge_capital), so there is "
            "no rent-vs-buy comparison; add a [[hardware.buy]] table to the job file to see one."
        )
    else:
        section.lead = f"Verdict: {v['verdict']}. {v['summary'][:1].upper()}{v['summary'][1:]}."
        section.tables.append(_rent_own_table(v))
    if compare and v and compare.get("break_even_per_gpu"):
        section.charts.append(
            figure_chart(
                "chart-rent-buy",
                rent_buy_figure(compare),
                (compare.get("break_even") or {}).get("note") or "",
            )
        )
        section.tables.append(_break_even_table(compare, v))
    if compare:
        section.tables.append(_per_gpu_table(compare))
    return section


def _rent_own_table(v: dict[str, Any]) -> Table:
    """Renting against owning the same jobs a month, by utilisation of the owned boxes."""
    return Table(
        f"Rent ({v['rent_plan']}) vs own ({v['own_plan']}), the same jobs a month",
        (
            "utilisation",
            "jobs a month",
            "rent per job",
            "own per job",
            "rent per month",
            "own per month",
            "cheaper",
        ),
        tuple(
            (
                f"{r['utilisation']:.0%}",
                num(r["jobs_per_month"], 1),
                money(r["rent_usd_per_job"]),
                money(r["own_usd_per_job"]),
                money(r["rent_usd_per_month"]),
                money(r["own_usd_per_month"]),
                r["cheaper"],
            )
            for r in v["by_utilisation"]
        ),
        numeric=(1, 2, 3, 4, 5),
    )


def _break_even_table(compare: dict[str, Any], v: dict[str, Any]) -> Table:
    """Jobs and months to break even against the best cloud plan of each GPU type."""
    rows = tuple(
        (
            gpu,
            b["cloud_plan"] or "",
            money(b["cloud_usd_per_job"]),
            money((b.get("verdict") or {}).get("own_usd_per_job")),
            num(b["jobs_to_break_even"], 1) if b["jobs_to_break_even"] is not None else "never",
            num(b["months_to_break_even"], 1) if b["months_to_break_even"] is not None else "never",
        )
        for gpu, b in sorted(compare["break_even_per_gpu"].items(), key=lambda kv: kv[1]["cloud_usd_per_job"])
    )
    return Table(
        f"Break-even against the best cloud plan of each GPU type, at "
        f"{v['break_even_jobs_per_month']:.3g} jobs a month",
        ("GPU", "cloud plan", "cloud per job", "own per job", "jobs to break even", "months"),
        rows,
        numeric=(2, 3, 4, 5),
    )


def _per_gpu_table(compare: dict[str, Any]) -> Table:
    """The best plan of each GPU type (and the mixed plan's row first, when there is one)."""
    per_gpu_rows = tuple(
        (
            gpu,
            f"{r['instances']}× {r['instance']} ({r['provider']}, {r['pricing']})",
            f"{r['days']:.2f}",
            money(r["cost_usd"]),
        )
        if r
        else (gpu, "no plan meets the deadline/budget", "", "")
        for gpu, r in sorted(compare["per_gpu"].items(), key=lambda kv: kv[1]["cost_usd"] if kv[1] else 1e30)
    )
    mixed = mix_compare_row(compare)
    return Table(
        "Best plan per GPU type",
        ("GPU", "plan", "days", "cost"),
        per_gpu_rows if mixed is None else (mixed, *per_gpu_rows),
        numeric=(2, 3),
    )


def _assumptions(result: dict[str, Any], p: dict[str, Any] | None) -> Section:
    job = result.get("job") or {}
    facts = [("training stack", str(job.get("stack") or "generic"))]
    warnings: list[str] = []
    if p is not None:
        guess = " — a documented default, not the provider's figure" if p["inter_node_is_default"] else ""
        facts += [
            ("inside an instance", str(p.get("intra_node_link") or "—")),
            ("between instances", f"{p['inter_node_gbps']:g} Gbit/s {p['inter_node_kind']}{guess}"),
            (
                "compute efficiency",
                "calibrated from a measured run"
                if p["calibrated"]
                else "the model's default for this GPU (not calibrated)",
            ),
            (
                "activation memory",
                f"calibrated from measured peaks (× {p['memory_activation_factor']:.2f} the model's count)"
                if p.get("memory_calibrated")
                else "the model's count (not calibrated)",
            ),
        ]
        warnings += list(p.get("warnings") or [])
        warnings += [f"price flagged ({f['rule']}): {f['reason']}" for f in p.get("price_flags") or []]
        if p["inter_node_is_default"] and p["instances"] > 1:
            warnings.append("the network between instances is a guessed default; check it")
    return assumptions_section(result, facts, warnings)


def train_page(inputs: ReportInputs) -> Page:
    """The page of a training report (plan result, optional compare result and re-plans)."""
    result = inputs.result
    p = result.get("plan")
    job = result.get("job") or {}
    title = f"ccopt plan — {job.get('name') or job.get('model') or 'training job'}"
    mix = result.get("mix")
    mixed = mix_section(mix)  # issue 32: shown first when it beats the plan or is the only plan
    shown = [mixed] if mixed is not None and mixed.highlight else []
    if p is None:
        headline = [
            Fragment("No plan: "),
            Fragment(why_no_plan(result)),
        ]
        why = infeasible_section(result)
        if shown and mix is not None:  # no single-type plan, but a mix meets the job
            headline, why.title = mix_headline(job, mix), "Why no single-type plan meets the job"
        sections = [
            Section("inputs", "The job", facts=_job_facts(result, None)),
            *shown,
            why,
            *([mixed] if mixed is not None and not shown else []),
            _assumptions(result, None),
        ]
        return Page(title, "train", result["status"], headline, "", sections, inputs.made_by)
    sections = [
        Section("inputs", "The job and the plan", facts=_job_facts(result, p)),
        *shown,
        _cost_section(result, p),
        _memory_step_section(p),
    ]
    settle = sizing_run_section(result)  # issue 45: the run that settles the plan
    if settle is not None:
        sections.append(settle)
    whole_run = goodput_section(p)  # issue 43
    if whole_run is not None:
        sections.append(whole_run)
    pareto = _pareto_section(result, p, inputs.deadline_sweep)
    if pareto:
        sections.append(pareto)
    sections += [_rent_buy_section(inputs.compare, result)]
    if mixed is not None and not shown:
        sections.append(mixed)
    sections.append(_assumptions(result, p))
    headline = _headline(job, p)
    if shown and mix is not None:
        headline.append(Fragment(f" A mixed cluster costs {money(mix['saving_usd'])} less: "))
        headline.append(
            Fragment(money(mix["plan"]["cost_usd"]), "mix.plan.cost_usd", mix["plan"]["cost_usd"])
        )
        headline.append(Fragment("."))
    subtitle = f"{result['status']} · {job.get('model', '')}"
    return Page(title, "train", result["status"], headline, subtitle, sections, inputs.made_by)
