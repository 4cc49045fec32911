"""The whole run in the report (issue 43): where a plan's hours go — compute, evaluation,
checkpoints, failures and restarts, start-up, conversion — as a table and a stacked bar, from
the plan's `goodput` block."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from optimizer.report.html.figures import add_part_bars, figure_chart, stacked_bar_chart
from optimizer.report.html.page import Section, Table, num

__all__ = ["goodput_section", "goodput_figure", "GOODPUT_PARTS"]

#: (goodput block key, what it is) in the order a run spends them
GOODPUT_PARTS = (
    ("compute_hours", "compute (the steps)"),
    ("evaluation_hours", "evaluation"),
    ("checkpoint_hours", "checkpoint writes"),
    ("failures_hours", "failures and restarts"),
    ("startup_hours", "provisioning and start-up"),
    ("conversion_hours", "checkpoint conversion"),
)


def goodput_figure(goodput: dict[str, Any]) -> go.Figure:
    """One horizontal bar of the run's hours, a segment per part."""
    fig = go.Figure()
    add_part_bars(fig, "run", goodput, GOODPUT_PARTS, "%{x:,.2f} h")
    return stacked_bar_chart(fig, f"Whole run (h), goodput {goodput['goodput']:.1%}", 220, "wall-clock hours")


def goodput_section(p: dict[str, Any]) -> Section | None:
    """The plan's whole-run breakdown (None when the plan has no goodput block)."""
    g = p.get("goodput")
    if not g:
        return None
    rows = [(name, num(g.get(key, 0.0))) for key, name in GOODPUT_PARTS]
    rows.append(("whole run", num(sum(g.get(key, 0.0) for key, _ in GOODPUT_PARTS))))
    interval = g.get("checkpoint_interval_h")
    section = Section(
        "goodput",
        "The whole run",
        lead="A plan's hours are the whole run, not the steps alone: every part below is billed.",
        facts=[
            ("goodput (compute ÷ hours)", f"{g['goodput']:.1%}"),
            (
                "interruptions expected",
                f"{g['expected_interruptions']:.2g} ({g['interruptions_per_day']:.2g}/day)",
            ),
            ("failure rate", f"{g['failures_per_gpu_day']:.3g} per GPU-day — {g['failure_rate_source']}"),
            ("checkpoint every", "—" if interval is None else f"{interval:.2f} h of compute (Daly 2006)"),
        ],
    )
    section.tables.append(Table("Where the hours go", ("part", "hours"), tuple(rows), numeric=(1,)))
    section.charts.append(
        figure_chart("chart-goodput", goodput_figure(g), "Stacked: the run's wall-clock hours.")
    )
    return section
