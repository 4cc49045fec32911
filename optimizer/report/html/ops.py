"""The report pages of a batch (schedule over shared capacity) and of a serving job (replica
mix, cost vs request rate, latency vs batch) — from batch/serve/estimate JSON."""

from __future__ import annotations

from typing import Any

from optimizer.report.html.figures import figure_chart, memory_figure
from optimizer.report.html.figures_ops import (
    deployment_label,
    gantt_figure,
    latency_figure,
    load_figure,
    replica_mix_figure,
    usage_figure,
)
from optimizer.report.html.inputs import ReportInputs
from optimizer.report.html.page import (
    Fragment,
    Page,
    Section,
    Table,
    assumptions_section,
    infeasible_section,
    money,
    num,
)
from optimizer.units import HOURS_PER_DAY

__all__ = ["batch_page", "serve_page"]


def _day(hour: float | None) -> str:
    return "—" if hour is None else f"{hour / HOURS_PER_DAY:.2f}"


def batch_page(inputs: ReportInputs) -> Page:
    """The page of a batch report."""
    b = inputs.result
    jobs = b["jobs"]
    scheduled = [j for j in jobs if j["status"] == "scheduled"]
    horizon_d = b["horizon_hours"] / HOURS_PER_DAY
    sections = [Section("inputs", "The batch", facts=_batch_facts(b, len(scheduled), horizon_d))]
    if b["total_cost_usd"] is None:
        sections.append(infeasible_section(b))
    sections.append(_batch_cost(b))
    sections += [_batch_schedule(b, bool(scheduled)), assumptions_section(b, [], [])]
    return Page(
        f"ccopt batch — {len(jobs)} jobs",
        "batch",
        b["status"],
        _batch_headline(b, len(scheduled), horizon_d),
        f"{b['status']} · {len(jobs)} jobs",
        sections,
        inputs.made_by,
    )


def _batch_headline(b: dict[str, Any], n_scheduled: int, horizon_d: float) -> list[Fragment]:
    """What the batch costs and how many of its jobs run, or why there is no schedule."""
    jobs, costs = b["jobs"], b["cost_breakdown_usd"]
    if b["total_cost_usd"] is None:
        return [
            Fragment("No schedule: "),
            Fragment((b.get("explanation") or {}).get("text") or "the jobs do not fit the capacity"),
        ]
    return [
        Fragment("Run "),
        Fragment(str(n_scheduled), "jobs.scheduled", n_scheduled),
        Fragment(f" of {len(jobs)} jobs within {horizon_d:g} days for "),
        Fragment(money(b["total_cost_usd"]), "total_cost_usd", b["total_cost_usd"]),
        Fragment(
            f": {money(costs['cloud'])} cloud, {money(costs['owned'])} owned boxes, "
            f"{money(costs['reservations'])} reservations"
            + (f", {money(costs['dropped_value'])} of dropped jobs' value" if costs["dropped_value"] else "")
            + "."
        ),
    ]


def _batch_facts(b: dict[str, Any], n_scheduled: int, horizon_d: float) -> list[tuple[str, str]]:
    """The batch's jobs, horizon and capacity, as the inputs section states them."""
    jobs = b["jobs"]
    return [
        ("jobs", f"{len(jobs)} ({n_scheduled} scheduled, {len(b['dropped'])} dropped)"),
        ("horizon", f"{horizon_d:g} days"),
        (
            "capacity",
            "; ".join(f"{r['label']}: {r['capacity']} {r['unit']}" for r in b["resources"])
            or "cloud without quota",
        ),
    ]


def _batch_cost(b: dict[str, Any]) -> Section:
    """The batch's cost: cloud, owned boxes, reservations and dropped jobs' value."""
    costs = b["cost_breakdown_usd"]
    return Section(
        "cost",
        "Cost breakdown",
        tables=[
            Table(
                "Cost of the batch",
                ("item", "USD"),
                (
                    ("cloud (GPU hours and commitments)", money(costs["cloud"])),
                    ("owned boxes (power per busy box-hour)", money(costs["owned"])),
                    ("reservations", money(costs["reservations"])),
                    ("value of dropped jobs", money(costs["dropped_value"])),
                    ("total", money(b["total_cost_usd"])),
                ),
                numeric=(1,),
            )
        ],
    )


def _batch_schedule(b: dict[str, Any], any_scheduled: bool) -> Section:
    """The jobs' table in days from the start of the horizon, the Gantt and the usage charts."""
    jobs = b["jobs"]
    rows = tuple(
        (
            j["name"],
            j["status"],
            f"{j['gpus']}× {j['gpu']}" if j.get("gpu") else "—",
            ", ".join(j.get("resources") or []) or (j.get("provider") or "—"),
            _day(j["release_hour"]),
            _day(j["start_hour"]),
            _day(j["end_hour"]),
            _day(j["deadline_hour"]),
            money(j.get("cost_usd")),
            j.get("placement") or "",
        )
        for j in sorted(jobs, key=lambda j: (j["start_hour"] is None, j["start_hour"] or 0))
    )
    schedule = Section(
        "schedule",
        "Schedule",
        tables=[
            Table(
                "Jobs (days from the start of the horizon)",
                (
                    "job",
                    "status",
                    "GPUs",
                    "runs on",
                    "release",
                    "start",
                    "end",
                    "deadline",
                    "cost",
                    "why here",
                ),
                rows,
                numeric=(4, 5, 6, 7, 8),
            )
        ],
    )
    if any_scheduled:
        schedule.charts.append(
            figure_chart(
                "chart-gantt",
                gantt_figure(b),
                "Bars: when each job runs, coloured by the capacity it uses; "
                "red ticks: deadlines; grey triangles: release times.",
            )
        )
    if b["resources"]:
        schedule.charts.append(
            figure_chart(
                "chart-usage", usage_figure(b), "Shared owned boxes and quota in use over the horizon."
            )
        )
    return schedule


def _serve_headline(job: dict[str, Any], p: dict[str, Any]) -> list[Fragment]:
    mix = " + ".join(deployment_label(d) for d in p["deployments"])
    return [
        Fragment(f"Serve {job['name']} ({job['model']}, {job['precision']}) at "),
        Fragment(f"{p['load_requests_per_s']:.3g}", "plan.load_requests_per_s", p["load_requests_per_s"]),
        Fragment(f" requests/s on {mix} for "),
        Fragment(money(p["usd_per_hour"]), "plan.usd_per_hour", p["usd_per_hour"]),
        Fragment("/h ("),
        Fragment(money(p["usd_per_month"]), "plan.usd_per_month", p["usd_per_month"]),
        Fragment(f"/month at {job['hours_per_day']:g} h/day) — TTFT "),
        Fragment(f"{p['ttft_s']:.3g}", "plan.ttft_s", p["ttft_s"]),
        Fragment(" s, TPOT "),
        Fragment(f"{p['tpot_ms']:.3g}", "plan.tpot_ms", p["tpot_ms"]),
        Fragment(" ms."),
    ]


def _serve_facts(job: dict[str, Any]) -> list[tuple[str, str]]:
    t = job["targets"]
    buckets = "; ".join(
        f"{b['share']:.0%}: {b['prompt_tokens']} prompt + {b['output_tokens']} output" for b in job["buckets"]
    )
    return [
        ("job", job["name"]),
        ("model", f"{job['model']} ({job['params'] / 1e9:.2f} B), {job['precision']} weights"),
        ("load", f"{job['load_requests_per_s']:.3g} requests/s, {job['hours_per_day']:g} h/day"),
        ("requests", buckets),
        (
            "targets",
            f"TTFT ≤ {num(t['ttft_s'], 3)} s, TPOT ≤ {num(t['tpot_ms'], 1)} ms"
            + (f", median end-to-end ≤ {t['e2e_p50_s']:g} s" if t.get("e2e_p50_s") else ""),
        ),
        (
            "redundancy",
            f"{job['spare_instances_per_deployment']} spare instance(s) per "
            f"deployment; headroom {job['min_capacity_headroom_fraction']:.0%}",
        ),
    ]


def _deployments_table(p: dict[str, Any]) -> Table:
    rows = tuple(
        (
            f"{d['instances']}× {d['instance']}",
            d["provider"],
            d["pricing"],
            f"{d['gpus']}× {d['gpu']}",
            str(d["tp"]),
            str(d["replicas"]),
            str(d["batch"]),
            f"{d['requests_per_s']:.3g}",
            f"{d['capacity_requests_per_s']:.3g}",
            f"{d['ttft_s']:.3g}",
            f"{d['tpot_ms']:.3g}",
            money(d["usd_per_hour"]),
        )
        for d in p["deployments"]
    )
    return Table(
        "Deployments",
        (
            "instances",
            "provider",
            "pricing",
            "GPUs",
            "TP",
            "replicas",
            "batch",
            "req/s",
            "capacity",
            "TTFT s",
            "TPOT ms",
            "$/h",
        ),
        rows,
        numeric=(4, 5, 6, 7, 8, 9, 10, 11),
    )


def _serve_sections(inputs: ReportInputs, p: dict[str, Any]) -> list[Section]:
    """The serving report's sections: the replica mix and its cost, then load and latency."""
    mix = Section(
        "mix",
        "Replica mix and cost",
        tables=[_deployments_table(p)],
        facts=[
            ("cost", f"{money(p['usd_per_hour'])}/h, {money(p['usd_per_month'])}/month"),
            (
                "capacity",
                f"{p['capacity_requests_per_s']:.3g} requests/s for a load of "
                f"{p['load_requests_per_s']:.3g} (headroom {num((p['headroom'] or 0) * 100, 0)}%)",
            ),
            ("replicas", f"{p['replicas']} on {p['gpus']} GPUs, {p['spare_replicas']} spare"),
        ],
    )
    mix.charts.append(figure_chart("chart-mix", replica_mix_figure(p)))
    cards = {e["gpu"]: e["gpu_memory_gib"] for e in inputs.latency_by_batch}
    mix.charts.append(
        figure_chart(
            "chart-memory",
            memory_figure(
                [
                    (f"{d['gpu']} TP{d['tp']} batch {d['batch']}", d["memory_gib"], cards.get(d["gpu"]))
                    for d in p["deployments"]
                ]
            ),
            "Per-GPU memory of each replica at its "
            "batch and context: weights, KV cache, activations, overhead.",
        )
    )
    return [mix, _load_section(inputs, p)]


def _load_section(inputs: ReportInputs, p: dict[str, Any]) -> Section:
    """Cost vs request rate (the load re-solves) and latency vs batch (one replica's
    estimates); a note on how to get either one the inputs lack."""
    s = inputs.result
    job = s["job"]
    load = Section("load", "Cost vs request rate and latency vs batch")
    if inputs.load_sweep:
        points = [(r["job"]["load_requests_per_s"], r) for r in inputs.load_sweep]
        if not any(abs(x - p["load_requests_per_s"]) < 1e-9 for x, _ in points):
            points.append((p["load_requests_per_s"], s))
        load.charts.append(
            figure_chart(
                "chart-load",
                load_figure(points, p["load_requests_per_s"]),
                "Each load re-solved: the cheapest mix that carries it within the latency targets.",
            )
        )
    else:
        load.notes.append("cost vs request rate needs re-solves: run `ccopt report` on the job file")
    if inputs.latency_by_batch:
        first = p["deployments"][0]
        load.charts.append(
            figure_chart(
                "chart-latency",
                latency_figure(inputs.latency_by_batch, job["targets"], first["batch"]),
                f"One replica of {deployment_label(first)} (ccopt estimate --mode serve at each batch): "
                "larger batches raise throughput per replica and the time per token.",
            )
        )
    else:
        load.notes.append("latency vs batch needs estimates: run `ccopt report` on the job file")
    return load


def serve_page(inputs: ReportInputs) -> Page:
    """The page of a serving report."""
    s = inputs.result
    job = s["job"]
    p = s.get("plan")
    sections = [Section("inputs", "The serving job", facts=_serve_facts(job))]
    if p is None:
        headline = [
            Fragment("No deployment: "),
            Fragment((s.get("explanation") or {}).get("text") or "no replica mix meets the targets"),
        ]
        sections.append(infeasible_section(s))
    else:
        headline = _serve_headline(job, p)
        sections += _serve_sections(inputs, p)
    warnings = [
        f"price flagged ({f['rule']}) for {d['instance']}: {f['reason']}"
        for d in (p or {}).get("deployments", [])
        for f in d.get("price_flags") or []
    ]
    sections.append(assumptions_section(s, [("serving stack", str(job.get("stack") or "generic"))], warnings))
    return Page(
        f"ccopt serve — {job['name']}",
        "serve",
        s["status"],
        headline,
        f"{s['status']} · {job['model']}",
        sections,
        inputs.made_by,
    )
