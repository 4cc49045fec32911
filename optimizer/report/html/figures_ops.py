"""Plotly figures of a batch (Gantt over owned boxes and quota, resource usage) and of a
serving plan (cost vs request rate, latency vs batch, the replica mix)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from optimizer.report.html.figures import CHOSEN, PALETTE, chosen_marker, cost_chart, no_plan_markers, styled
from optimizer.units import HOURS_PER_DAY

__all__ = [
    "gantt_figure",
    "usage_figure",
    "load_figure",
    "latency_figure",
    "replica_mix_figure",
    "deployment_label",
]


def _resource_of(job: dict[str, Any]) -> str:
    return ", ".join(job.get("resources") or []) or f"{job.get('provider')} {job.get('gpu')}"


def gantt_figure(batch: dict[str, Any]) -> go.Figure:
    """Scheduled jobs as bars over days, one row per job grouped by the capacity it runs on
    (colour), release and deadline marked."""
    jobs = [j for j in batch["jobs"] if j["status"] == "scheduled" and j["start_hour"] is not None]
    jobs.sort(key=lambda j: (_resource_of(j), j["start_hour"]), reverse=True)
    resources = sorted({_resource_of(j) for j in jobs})
    fig = go.Figure()
    for i, res in enumerate(resources):
        rows = [j for j in jobs if _resource_of(j) == res]
        fig.add_bar(
            y=[j["name"] for j in rows],
            x=[(j["end_hour"] - j["start_hour"]) / HOURS_PER_DAY for j in rows],
            base=[j["start_hour"] / HOURS_PER_DAY for j in rows],
            orientation="h",
            name=res,
            marker_color=PALETTE[i % 10],
            text=[f"{j['gpus']}× {j['gpu']}" for j in rows],
            textposition="inside",
            insidetextanchor="middle",
            textfont={"size": 11},
            customdata=[
                [j["start_hour"] / HOURS_PER_DAY, j["end_hour"] / HOURS_PER_DAY, j["cost_usd"]] for j in rows
            ],
            hovertemplate="%{y}: day %{customdata[0]:.2f} to %{customdata[1]:.2f}, "
            "$%{customdata[2]:,.2f}<extra>" + res + "</extra>",
        )
    _add_job_marks(fig, jobs)
    fig.add_vline(
        x=batch["horizon_hours"] / HOURS_PER_DAY,
        line_dash="dash",
        line_color="#888888",
        annotation_text="horizon",
    )
    fig.update_layout(uniformtext={"minsize": 9, "mode": "hide"})
    return styled(
        fig,
        "Schedule (Gantt): jobs over owned boxes and cloud quota",
        160 + 28 * len(jobs),
        barmode="overlay",
        xaxis={"title": "day", "rangemode": "tozero"},
        yaxis={"type": "category"},
    )


def _add_job_marks(fig: go.Figure, jobs: Sequence[dict[str, Any]]) -> None:
    """Each job's deadline (a red tick) and release day (a grey triangle), where it has one."""
    _add_marks(
        fig,
        [j for j in jobs if j.get("deadline_hour") is not None],
        "deadline_hour",
        "deadline",
        {"symbol": "line-ns-open", "size": 18, "color": CHOSEN, "line": {"width": 3}},
        "deadline day %{x:.2f}",
    )
    _add_marks(
        fig,
        [j for j in jobs if j.get("release_hour")],
        "release_hour",
        "release",
        {"symbol": "triangle-right", "size": 10, "color": "#555555"},
        "released day %{x:.2f}",
    )


def _add_marks(
    fig: go.Figure, marked: list[dict[str, Any]], hour: str, name: str, marker: dict[str, Any], hover: str
) -> None:
    """A marker on each job's row of `marked` at its `hour` (shown as a day); none: no trace."""
    if marked:
        fig.add_scatter(
            y=[j["name"] for j in marked],
            x=[j[hour] / HOURS_PER_DAY for j in marked],
            mode="markers",
            name=name,
            marker=marker,
            hovertemplate=hover,
        )


def usage_figure(batch: dict[str, Any]) -> go.Figure:
    """How much of each shared resource is in use over time, against its capacity."""
    resources = batch["resources"]
    fig = make_subplots(
        rows=max(1, len(resources)),
        cols=1,
        shared_xaxes=True,
        subplot_titles=[f"{r['label']} ({r['capacity']} {r['unit']})" for r in resources],
    )
    for i, res in enumerate(resources):
        xs: list[float] = []
        ys: list[float] = []
        for start_h, end_h, level in res["usage"]:
            xs += [start_h / HOURS_PER_DAY, end_h / HOURS_PER_DAY, None]  # type: ignore[list-item]
            ys += [level, level, None]  # type: ignore[list-item]
        fig.add_scatter(
            x=xs,
            y=ys,
            mode="lines",
            fill="tozeroy",
            name=f"{res['label']} in use",
            line={"color": PALETTE[i % 10], "width": 2},
            row=i + 1,
            col=1,
            hovertemplate="%{y:g} " + res["unit"] + "<extra></extra>",
        )
        fig.add_scatter(
            x=[0, batch["horizon_hours"] / HOURS_PER_DAY],
            y=[res["capacity"], res["capacity"]],
            mode="lines",
            showlegend=i == 0,
            name="capacity",
            line={"color": "#000000", "dash": "dash"},
            row=i + 1,
            col=1,
        )
    fig.update_xaxes(title_text="day", row=max(1, len(resources)), col=1)
    return styled(fig, "Shared capacity in use", 120 + 170 * max(1, len(resources)))


def deployment_label(d: dict[str, Any]) -> str:
    return f"{d['replicas']}× TP{d['tp']} {d['gpu']} ({d['provider']}, {d['pricing']})"


def load_figure(points: Sequence[tuple[float, dict[str, Any]]], chosen_load: float) -> go.Figure:
    """Serving cost per hour against the request rate (each load re-solved), the job's load
    marked; hover names the replica mix at each load."""
    rows = sorted(points, key=lambda p: p[0])
    feasible = [(load, r) for load, r in rows if r.get("plan")]
    fig = go.Figure()
    fig.add_scatter(
        x=[load for load, _ in feasible],
        y=[r["plan"]["usd_per_hour"] for _, r in feasible],
        mode="lines+markers",
        name="cheapest mix",
        line={"color": PALETTE[0]},
        text=[" + ".join(deployment_label(d) for d in r["plan"]["deployments"]) for _, r in feasible],
        hovertemplate="%{x:.3g} req/s: $%{y:,.2f}/h<br>%{text}<extra></extra>",
    )
    chosen = [r for load, r in feasible if abs(load - chosen_load) <= 1e-9 * max(1.0, chosen_load)]
    if chosen:
        fig.add_trace(chosen_marker(chosen_load, chosen[0]["plan"]["usd_per_hour"]))
    late = [load for load, r in rows if not r.get("plan")]
    if late:
        fig.add_trace(no_plan_markers(late))
    return cost_chart(fig, "Cost vs request rate", 380, "requests/s (log)", "USD per served hour")


def latency_figure(
    estimates: Sequence[dict[str, Any]], targets: dict[str, Any], chosen_batch: int | None
) -> go.Figure:
    """Time per output token and time to first token of one replica against its batch, with
    the latency targets and the planned batch."""
    rows = sorted((e for e in estimates if e.get("fits")), key=lambda e: e["layout"]["batch"])
    batches = [e["layout"]["batch"] for e in rows]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for key, name, color, right in (
        ("tpot_ms", "TPOT, ms", PALETTE[0], False),
        ("ttft_s", "TTFT, s", PALETTE[1], True),
    ):
        fig.add_scatter(
            x=batches,
            y=[e[key] for e in rows],
            name=name,
            mode="lines+markers",
            line={"color": color},
            secondary_y=right,
        )
    span = [min(batches, default=1), max(batches, default=1)]
    for key, name, color, dash, right in (
        ("tpot_ms", "TPOT target", PALETTE[0], "dash", False),
        ("ttft_s", "TTFT target", PALETTE[1], "dot", True),
    ):
        if targets.get(key) is not None:
            fig.add_scatter(
                x=span,
                y=[targets[key]] * 2,
                mode="lines",
                name=name,
                line={"dash": dash, "color": color},
                secondary_y=right,
            )
    planned = [e for e in rows if e["layout"]["batch"] == chosen_batch]
    if planned:
        fig.add_trace(
            chosen_marker(
                planned[0]["layout"]["batch"], planned[0]["tpot_ms"], f"planned batch {chosen_batch}"
            ),
            secondary_y=False,
        )
    fig.update_yaxes(title_text="TPOT, ms", rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title_text="TTFT, s", rangemode="tozero", secondary_y=True)
    title = "Latency vs batch"
    if rows:
        title += f" ({rows[0]['gpus']}× {rows[0]['gpu']}, context {rows[0]['layout']['context']})"
    return styled(fig, title, 380, xaxis={"title": "concurrent sequences per replica (log)", "type": "log"})


def replica_mix_figure(plan: dict[str, Any]) -> go.Figure:
    """Replicas of each deployment and the load each carries against its capacity."""
    deps = plan["deployments"]
    labels = [deployment_label(d) for d in deps]
    fig = make_subplots(rows=1, cols=2, subplot_titles=["replicas", "requests/s: load vs capacity"])
    fig.add_bar(
        x=labels,
        y=[d["replicas"] for d in deps],
        name="replicas",
        marker_color=[PALETTE[i % 10] for i in range(len(deps))],
        text=[f"${d['usd_per_hour']:,.2f}/h" for d in deps],
        textposition="auto",
        row=1,
        col=1,
    )
    fig.add_bar(
        x=labels, y=[d["requests_per_s"] for d in deps], name="load", marker_color=PALETTE[1], row=1, col=2
    )
    fig.add_bar(
        x=labels,
        y=[d["capacity_requests_per_s"] for d in deps],
        name="capacity",
        marker_color=PALETTE[2],
        row=1,
        col=2,
    )
    return styled(fig, "Replica mix", 380, barmode="group")
