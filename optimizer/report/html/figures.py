"""Plotly figures of a training plan: memory, step time, Pareto front, cost vs deadline,
rent vs buy. Each takes contract dicts and returns a figure (no I/O)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
from markupsafe import Markup

from optimizer.report.html.page import Chart
from optimizer.units import HOURS_PER_DAY

__all__ = [
    "PALETTE",
    "CHOSEN",
    "styled",
    "add_part_bars",
    "cost_chart",
    "stacked_bar_chart",
    "vertical_line",
    "chosen_marker",
    "no_plan_markers",
    "figure_div",
    "figure_chart",
    "memory_figure",
    "step_figure",
    "pareto_figure",
    "deadline_figure",
    "rent_buy_figure",
    "deadline_points",
    "jobs_per_month",
]

PALETTE = (
    "#4C78A8",
    "#F58518",
    "#54A24B",
    "#E45756",
    "#72B7B2",
    "#B279A2",
    "#FF9DA6",
    "#9D755D",
    "#BAB0AC",
    "#EECA3B",
)
CHOSEN = "#D62728"
MEMORY_PARTS = ("weights", "gradients", "optimizer", "activations", "kv_cache", "overhead")
_PLOT_CONFIG = {"displaylogo": False, "responsive": True, "modeBarButtonsToRemove": ["select2d", "lasso2d"]}


def styled(
    fig: go.Figure, title: str, height_px: int, *, side_legend: bool = False, **axes: Any
) -> go.Figure:
    """The house style: white template, title top left, legend under the plot (or at its right
    for short bar charts, where it would cover the axis title)."""
    legend = (
        {"orientation": "v", "traceorder": "normal"}
        if side_legend
        else {"orientation": "h", "yanchor": "top", "y": -0.22, "traceorder": "normal"}
    )
    fig.update_layout(
        title={"text": title, "x": 0.01},
        height=height_px,
        template="plotly_white",
        margin={"l": 70, "r": 30, "t": 50, "b": 60},
        font={"size": 12},
        legend=legend,
        **axes,
    )
    return fig


def add_part_bars(
    fig: go.Figure, bar: str, values: dict[str, Any], parts: Sequence[tuple[str, str]], hover: str
) -> None:
    """One horizontal bar named `bar`, a segment per (key, name) of `parts` in order: its value
    in `values` (0 when absent), its colour the palette's next, `hover` the value's format."""
    for i, (key, name) in enumerate(parts):
        fig.add_bar(
            y=[bar],
            x=[values.get(key, 0.0)],
            name=name,
            orientation="h",
            marker_color=PALETTE[i % len(PALETTE)],
            hovertemplate=hover + "<extra>" + name + "</extra>",
        )


def stacked_bar_chart(fig: go.Figure, title: str, height_px: int, x_title: str) -> go.Figure:
    """styled() for horizontal bars of parts stacked from 0 (a GPU's memory, a step, a run's
    hours), the legend beside them."""
    return styled(
        fig,
        title,
        height_px,
        side_legend=True,
        barmode="stack",
        xaxis={"title": x_title, "rangemode": "tozero"},
    )


def cost_chart(fig: go.Figure, title: str, height_px: int, x_title: str, y_title: str) -> go.Figure:
    """styled() for a cost against a log-scaled x axis (finish time, deadline, load), from 0 up."""
    return styled(
        fig,
        title,
        height_px,
        xaxis={"title": x_title, "type": "log"},
        yaxis={"title": y_title, "rangemode": "tozero"},
    )


def vertical_line(x: float, y_top: float, name: str, color: str = "#888888") -> go.Scatter:
    """A dashed vertical line as a trace (shape annotations sit in log10 units on log axes)."""
    return go.Scatter(
        x=[x, x],
        y=[0.0, y_top],
        mode="lines",
        name=name,
        line={"dash": "dash", "color": color},
        hovertemplate=f"{name}: %{{x:.3g}}<extra></extra>",
    )


def chosen_marker(x: float, y: float, name: str = "this job") -> go.Scatter:
    """The chosen answer (the job's deadline, load or batch) as a red star."""
    return go.Scatter(
        x=[x], y=[y], mode="markers", name=name, marker={"symbol": "star", "size": 18, "color": CHOSEN}
    )


def no_plan_markers(xs: Sequence[float]) -> go.Scatter:
    """Black crosses on the x axis where no plan exists (a deadline or load too tight)."""
    return go.Scatter(
        x=list(xs),
        y=[0.0] * len(xs),
        mode="markers",
        name="no plan",
        marker={"symbol": "x", "size": 12, "color": "#000000"},
    )


def figure_div(fig: go.Figure, chart_id: str) -> Markup:
    """The figure as a <div> + inline script; plotly.js itself is inlined once by the page."""
    html = pio.to_html(
        fig, full_html=False, include_plotlyjs=False, div_id=chart_id, config=_PLOT_CONFIG, validate=True
    )
    return Markup(html)  # noqa: S704 - plotly's own output, no user markup


def figure_chart(chart_id: str, fig: go.Figure, caption: str = "") -> Chart:
    """The page's chart of a figure: its <div> carries the chart's id (figure_div)."""
    return Chart(chart_id, figure_div(fig, chart_id), caption)


def memory_figure(rows: Sequence[tuple[str, dict[str, Any], float | None]]) -> go.Figure:
    """Per-GPU memory by part (stacked), with what the allocator reserves, what nvidia-smi
    shows and the card's memory. rows: (label, memory_gib, card_gib or None)."""
    labels = [label for label, _, _ in rows]
    fig = go.Figure()
    for i, part in enumerate(MEMORY_PARTS):
        values = [float(mem.get(part) or 0.0) for _, mem, _ in rows]
        if any(v > 0 for v in values):
            fig.add_bar(
                y=labels,
                x=values,
                name=part.replace("_", " "),
                orientation="h",
                marker_color=PALETTE[i],
                hovertemplate="%{x:.2f} GiB<extra>" + part + "</extra>",
            )
    ticks = (  # (x per row, legend name, colour, tick size and line width, hover)
        ([mem.get("reserved") for _, mem, _ in rows], "allocator reserved", "#555555", 26, 3, "%{x:.2f} GiB"),
        ([mem.get("device") for _, mem, _ in rows], "nvidia-smi (device)", "#000000", 26, 3, "%{x:.2f} GiB"),
        ([card for _, _, card in rows], "card memory", CHOSEN, 34, 4, "card %{x:.0f} GiB"),
    )
    for xs, name, color, size, width, hover in ticks:
        if any(x is not None for x in xs):
            fig.add_scatter(
                y=labels,
                x=xs,
                mode="markers",
                name=name,
                marker={"symbol": "line-ns-open", "size": size, "color": color, "line": {"width": width}},
                hovertemplate=hover,
            )
    return stacked_bar_chart(fig, "Memory per GPU (GiB)", max(320, 150 + 60 * len(rows)), "GiB")


def step_figure(plan: dict[str, Any]) -> go.Figure:
    """One optimizer step: compute, exposed communication, pipeline bubble and the wait for the
    host's kernel launches, with P10-P90."""
    step = plan["step"]
    fig = go.Figure()
    parts = (
        ("compute_s", "compute"),
        ("communication_s", "communication (exposed)"),
        ("bubble_s", "pipeline bubble"),
        ("host_wait_s", "waiting for the host's kernel launches"),
    )
    add_part_bars(fig, "step", step, parts, "%{x:.3f} s")
    p10, p90 = plan.get("step_time_s_p10"), plan.get("step_time_s_p90")
    if p10 is not None and p90 is not None:
        t = plan["step_time_s"]
        fig.add_scatter(
            y=["step"],
            x=[t],
            mode="markers",
            name="P10–P90 step time",
            marker={"color": "#000000", "size": 9},
            error_x={
                "type": "data",
                "symmetric": False,
                "array": [p90 - t],
                "arrayminus": [t - p10],
                "thickness": 2,
                "width": 10,
            },
            hovertemplate="%{x:.3f} s",
        )
    return stacked_bar_chart(fig, "Step time (s)", 220, "seconds per optimizer step")


def pareto_figure(
    pareto: Sequence[dict[str, Any]], plan: dict[str, Any] | None, deadline_days: float | None
) -> go.Figure:
    """Cost vs finish time of the non-dominated plans, by GPU type, the chosen plan marked;
    P10–P90 of the finish time and P90 of the cost as error bars."""
    fig = go.Figure()
    gpus = sorted({r["gpu"] for r in pareto})
    for i, gpu in enumerate(gpus):
        rows = [r for r in pareto if r["gpu"] == gpu]
        minus = [r["days"] - (r.get("days_p10") or r["days"]) for r in rows]
        plus = [(r.get("days_p90") or r["days"]) - r["days"] for r in rows]
        up = [(r.get("cost_usd_p90") or r["cost_usd"]) - r["cost_usd"] for r in rows]
        fig.add_scatter(
            x=[r["days"] for r in rows],
            y=[r["cost_usd"] for r in rows],
            mode="markers",
            name=gpu,
            marker={"size": 10, "color": PALETTE[i % 10]},
            error_x={"type": "data", "symmetric": False, "array": plus, "arrayminus": minus, "thickness": 1},
            error_y={
                "type": "data",
                "symmetric": False,
                "array": up,
                "arrayminus": [0.0] * len(rows),
                "thickness": 1,
            },
            text=[f"{r['gpus']}× {r['gpu']} {r['provider']} {r['pricing']}" for r in rows],
            hovertemplate="%{text}<br>%{x:.2f} days, $%{y:,.0f}<extra></extra>",
        )
    if plan is not None:
        fig.add_scatter(
            x=[plan["days"]],
            y=[plan["cost_usd"]],
            mode="markers+text",
            name="chosen plan",
            text=["chosen"],
            textposition="top center",
            marker={"symbol": "star", "size": 20, "color": CHOSEN, "line": {"color": "#000000", "width": 1}},
            hovertemplate="chosen: %{x:.2f} days, $%{y:,.0f}<extra></extra>",
        )
    if deadline_days is not None and pareto:
        fig.add_trace(
            vertical_line(
                deadline_days, max(r.get("cost_usd_p90") or r["cost_usd"] for r in pareto), "deadline"
            )
        )
    return cost_chart(fig, "Cost vs finish time (Pareto front)", 420, "finish time, days (log)", "cost, USD")


def deadline_points(
    pareto: Sequence[dict[str, Any]], sweep: Sequence[dict[str, Any]]
) -> list[tuple[float, float | None, str]]:
    """(deadline_days, cheapest cost or None when infeasible, how it was found): the Pareto
    front read as "the cheapest plan finishing within D" (exact for D up to the job's
    deadline), and the re-plans at other deadlines."""
    points = []
    for row in sorted(pareto, key=lambda r: r["days"]):
        cheapest = min(r["cost_usd"] for r in pareto if r["days"] <= row["days"])
        points.append((row["days"], cheapest, "Pareto front"))
    for result in sweep:
        hours = (result.get("job") or {}).get("deadline_hours")
        if hours is None:
            continue
        cost = result["plan"]["cost_usd"] if result.get("plan") else None
        points.append((hours / HOURS_PER_DAY, cost, "re-planned"))
    return sorted(points, key=lambda p: p[0])


def deadline_figure(
    points: Sequence[tuple[float, float | None, str]],
    deadline_days: float | None,
    chosen_cost_usd: float | None,
) -> go.Figure:
    """The cheapest cost as a function of the deadline (a step function: each plan holds until
    a faster one is needed)."""
    fig = go.Figure()
    for i, source in enumerate(("Pareto front", "re-planned")):
        rows = [(d, c) for d, c, s in points if s == source and c is not None]
        if rows:
            fig.add_scatter(
                x=[d for d, _ in rows],
                y=[c for _, c in rows],
                name=source,
                mode="lines+markers" if i == 0 else "markers",
                line={"shape": "hv", "color": PALETTE[i]},
                marker={
                    "size": 8 if i == 0 else 12,
                    "color": PALETTE[i],
                    "symbol": "circle" if i == 0 else "diamond",
                },
                hovertemplate="deadline %{x:.2f} days: $%{y:,.0f}<extra>" + source + "</extra>",
            )
    late = [d for d, c, _ in points if c is None]
    if late:
        fig.add_trace(no_plan_markers(late))
    if deadline_days is not None and chosen_cost_usd is not None:
        fig.add_trace(chosen_marker(deadline_days, chosen_cost_usd))
    return cost_chart(fig, "Cheapest cost by deadline", 380, "deadline, days (log)", "cost, USD")


def jobs_per_month(compare: dict[str, Any]) -> float | None:
    """Jobs a month the break-even assumes (solve attaches it to every break-even)."""
    per_gpu = compare.get("break_even_per_gpu") or {}
    be: dict[str, Any] = compare.get("break_even") or next(iter(per_gpu.values()), {})
    return be.get("jobs_per_month")


def rent_vs_buy_months(compare: dict[str, Any]) -> float:
    """How many months the rent-vs-buy chart spans: past the latest finite break-even."""
    months = [
        be["months_to_break_even"]
        for be in (compare.get("break_even_per_gpu") or {}).values()
        if be.get("months_to_break_even") is not None
    ]
    return max(12.0, 1.5 * max(months, default=0.0))


def rent_buy_figure(compare: dict[str, Any]) -> go.Figure:
    """Cumulative cost over months: buying (net capital, then power per job) against renting
    the best cloud plan of each GPU type, with each break-even marked."""
    per_gpu = compare.get("break_even_per_gpu") or {}
    rate = jobs_per_month(compare) or 1.0
    span = rent_vs_buy_months(compare)
    months = [span * i / 48 for i in range(49)]
    fig = go.Figure()
    first = next(iter(per_gpu.values()))
    local = compare["owned_or_bought"]
    v = first.get("verdict") or {}
    # a month owned past the purchase: ops fee + power of its jobs (older results: power only)
    own_month = (
        v["own_usd_per_month"] - v["net_capital_usd"] / v["holding_months"]
        if v
        else first["power_usd_per_job"] * rate
    )
    fig.add_scatter(
        x=months,
        y=[first["net_capital_usd"] + own_month * m for m in months],
        name=f"buy {local['gpus']}× {local['gpu']}",
        mode="lines",
        line={"color": "#000000", "width": 3},
    )
    ranked = sorted(per_gpu.items(), key=lambda kv: kv[1]["cloud_usd_per_job"])
    for i, (gpu, be) in enumerate(ranked):
        fig.add_scatter(
            x=months,
            y=[be["cloud_usd_per_job"] * rate * m for m in months],
            name=f"rent {gpu}",
            mode="lines",
            line={"color": PALETTE[i % 10]},
        )
        m = be.get("months_to_break_even")
        if m is not None:
            fig.add_scatter(
                x=[m],
                y=[be["cloud_usd_per_job"] * rate * m],
                mode="markers+text",
                name=f"break-even vs {gpu}",
                text=[f"{m:.1f} mo"],
                textposition="top left",
                showlegend=False,
                marker={"size": 11, "color": PALETTE[i % 10], "symbol": "diamond"},
            )
    return styled(
        fig,
        f"Rent vs buy: cumulative cost at {rate:.3g} jobs/month",
        420,
        xaxis={"title": "months", "rangemode": "tozero"},
        yaxis={"title": "cumulative cost, USD", "rangemode": "tozero"},
    )
