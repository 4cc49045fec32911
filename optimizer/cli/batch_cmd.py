"""`ccopt batch JOBS.toml`: many jobs on shared quotas, owned boxes and reservations."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from optimizer import api
from optimizer.api import check_number
from optimizer.cli.common import (
    EXIT_INFEASIBLE,
    MAX_WORKERS,
    ConfidenceOpt,
    ForceOpt,
    JsonOpt,
    OfflineOpt,
    OldTimeLimitOpt,
    PricesOpt,
    console,
    input_files,
    money,
    price_legend,
    price_mark,
    print_fallback,
    print_json,
    time_limit_help,
    time_limit_s,
    user_errors,
)
from optimizer.cli.export_opts import ExportDirOpt, ExportOpt, TrainScriptOpt, check_export, exported
from optimizer.cli.plot import _pyplot, check_plot_path, save_figure
from optimizer.cli.progress import Progress
from optimizer.errors import Status
from optimizer.files import OutputFile
from optimizer.units import HOURS_PER_DAY, MINUTES_PER_HOUR, quantile_label

__all__ = ["register", "render_batch", "plot_schedule"]

Opt = typer.Option
GANTT_WIDTH = 48  # characters of the horizon bar in the Gantt tables
DEFAULT_BATCH_TIME_LIMIT_S = 30.0  # a batch solves one larger model than plan
_SINGULAR = {"boxes": "box", "instances": "instance"}


def batch(
    jobs: Annotated[
        Path, typer.Argument(help="Batch file (TOML): a [capacity] table and [[job]] tables", metavar="JOBS")
    ],
    json_out: JsonOpt = False,
    plot: Annotated[
        Path | None, Opt("--plot", help="Write the schedule as PNG (needs the 'plot' extra)")
    ] = None,
    time_limit: Annotated[
        float | None,
        Opt("--time-limit-s", help=time_limit_help(DEFAULT_BATCH_TIME_LIMIT_S), show_default=False),
    ] = None,
    workers: Annotated[int, Opt(help=f"CP-SAT worker threads: 1–{MAX_WORKERS}")] = 2,
    prices: PricesOpt = None,
    offline: OfflineOpt = False,
    old_time_limit: OldTimeLimitOpt = None,
    confidence: ConfidenceOpt = None,
    force: ForceOpt = False,
    export: ExportOpt = None,
    out_dir: ExportDirOpt = None,
    train_script: TrainScriptOpt = None,
) -> None:
    """The cheapest plan that runs every job of JOBS on time, on shared capacity."""
    with user_errors():
        check_export(export, out_dir, json_out, train_script)
        time_limit = time_limit_s(time_limit, old_time_limit, DEFAULT_BATCH_TIME_LIMIT_S)
        check_number(workers, "--workers", ge=1, le=MAX_WORKERS, integer=True)
        out = (
            check_plot_path(plot, force=force, inputs=input_files(jobs, prices)) if plot is not None else None
        )
        with Progress("reading the batch…") as progress:
            result = api.batch(
                jobs,
                prices=prices,
                offline=True if offline else None,
                time_limit_s=time_limit,
                workers=workers,
                confidence=confidence,
                on_progress=lambda event: progress.say(_solver_line(event)),
                on_job=lambda i, n, name: progress.say(
                    f"enumerating candidate plans: job {i} of {n} ({name})"
                ),
            )
        data = api.batch_json(result)
        if out is not None and result.jobs:
            plot_schedule(data, out)
    if exported(
        data, export, out_dir, force=force, inputs=input_files(jobs, prices), train_script=train_script
    ):
        return
    if json_out:
        print_json(data)
    else:
        render_batch(data)
        if plot is not None and result.jobs:
            console().print(f"schedule plot written to {plot}")
    if plot is not None and not result.jobs:
        sys.stderr.write(f"no plot written to {plot}: {data['status']}, no schedule to plot\n")
    if data["status"] == Status.INFEASIBLE:
        raise typer.Exit(EXIT_INFEASIBLE)


def _solver_line(event: Any) -> str:
    """A batch solver event (ProgressEvent) as a progress line: objective, bound and gap."""
    gap = (event.objective_usd - event.bound_usd) / max(abs(event.objective_usd), 1e-9)
    return (
        f"CP-SAT {event.wall_s:6.1f} s  best ${event.objective_usd:,.2f}  bound "
        f"${event.bound_usd:,.2f}  gap {gap:.2%}"
    )


def _money(v: float | None) -> str:
    return "-" if v is None else money(v)


def _bar(start: float, end: float, horizon: float, width: int = GANTT_WIDTH) -> str:
    """A text bar of [start, end) over [0, horizon]."""
    a = int(start / horizon * width)
    b = max(a + 1, int(round(end / horizon * width)))
    return "·" * a + "█" * (b - a) + "·" * max(0, width - b)


def render_batch(data: dict[str, Any]) -> None:
    """Totals, the per-job plan, and a Gantt-like table per resource (rich)."""
    c = console()
    s = data["solver"]
    if data["status"] == Status.INFEASIBLE:
        expl = data.get("explanation") or {}
        c.print(f"[red]infeasible[/red]: {expl.get('text', 'no plan meets the constraints')}")
        print_fallback(c, data)
        for f in expl.get("fixes", []):
            c.print(f"  fix: {f['change']} → total {_money(f['cost_usd'])}")
        return
    br = data["cost_breakdown_usd"]
    gap = s.get("gap", 0.0)
    c.print(
        f"[b]{len(data['jobs'])} jobs[/b] — [b]{data['status']}[/b]: total "
        f"[b]{_money(data['total_cost_usd'])}[/b] (cloud {_money(br['cloud'])}, owned "
        f"{_money(br['owned'])}, reservations {_money(br['reservations'])}"
        + (f", dropped value {_money(br['dropped_value'])}" if br["dropped_value"] else "")
        + f"); CP-SAT {s.get('wall_s', 0):.2f} s, {s.get('rows')} options "
        f"({s.get('num_model_rows')} in the model), gap {gap:.2%}, time step "
        f"{s.get('time_unit_hours', 0) * MINUTES_PER_HOUR:g} min"
    )
    print_fallback(c, data)
    quantiles = sorted({j["confidence"] for j in data["jobs"] if j.get("confidence") is not None})
    if quantiles:
        c.print(
            f"  durations and costs at {', '.join(quantile_label(q) for q in quantiles)} of each job's "
            "step-time band: the deadlines hold at that confidence (P50 and P90 in --json)"
        )
    table = Table(title="Jobs")
    for col in ("job", "plan", "GPUs", "start d", "end d", "deadline d", "cost"):
        table.add_column(col, justify="left" if col in ("job", "plan") else "right")
    for j in data["jobs"]:
        if j["status"] != "scheduled":
            table.add_row(
                j["name"],
                f"[dim]{j['status']} (value {_money(j['value_usd'])})[/dim]",
                "",
                "",
                "",
                _days(j["deadline_hour"]),
                "",
            )
            continue
        table.add_row(
            j["name"],
            f"{j['instances']}× {j['instance']} ({j['provider']}, {j['pricing']}{price_mark(j)})",
            str(j["gpus"]),
            _days(j["start_hour"]),
            _days(j["end_hour"]),
            _days(j["deadline_hour"]),
            _money(j["cost_usd"]),
        )
    c.print(table)
    legend = price_legend([j for j in data["jobs"] if j["status"] == "scheduled"])
    if legend:
        c.print(f"  {legend}")
    for j in data["jobs"]:
        if j.get("placement", "").startswith("cloud"):
            c.print(f"  [b]{j['name']}[/b] on the {j['placement']}")
    for note in data.get("notes", []):
        c.print(f"  [dim]note:[/dim] {note}")
    horizon = float(data["horizon_hours"])
    lanes: dict[str, list[dict[str, Any]]] = {}
    for j in data["jobs"]:
        if j["status"] == "scheduled":
            lanes.setdefault(j["resources"][0], []).append(j)
    caps = {r["label"]: r for r in data["resources"]}
    for label, members in lanes.items():
        res = caps.get(label)
        title = (
            label
            if res is None
            else (f"{label}: peak {res['peak']} of {res.get('reserved', res['capacity'])} {res['unit']}")
        )
        gantt = Table(title=title, title_justify="left")
        gantt.add_column("job")
        gantt.add_column("use", justify="right")
        gantt.add_column(f"0 … {horizon / HOURS_PER_DAY:g} days", no_wrap=True)
        for j in sorted(members, key=lambda j: j["start_hour"]):
            n = j["instances"]
            unit = res["unit"] if res is not None else "GPUs"
            use = (
                f"{j['gpus']} GPUs"
                if unit == "GPUs"
                else f"{n} {unit if n != 1 else _SINGULAR.get(unit, unit)}"
            )
            gantt.add_row(j["name"], use, _bar(j["start_hour"], j["end_hour"], horizon))
        c.print(gantt)


def _days(hours: float | None) -> str:
    return "-" if hours is None else f"{hours / HOURS_PER_DAY:.2f}"


def plot_schedule(data: dict[str, Any], out: OutputFile) -> None:
    """One bar per job from start to end, grouped and coloured by resource, with deadlines."""
    plt = _pyplot()
    jobs = [j for j in data["jobs"] if j["status"] == "scheduled"]
    jobs.sort(key=lambda j: (j["resources"][0], j["start_hour"]))
    labels = sorted({j["resources"][0] for j in jobs})
    colours = {lab: plt.get_cmap("tab10")(i % 10) for i, lab in enumerate(labels)}
    fig, ax = plt.subplots(figsize=(10, 0.4 * len(jobs) + 1.5))
    for y, j in enumerate(jobs):
        start, end = j["start_hour"] / HOURS_PER_DAY, j["end_hour"] / HOURS_PER_DAY
        ax.barh(y, end - start, left=start, color=colours[j["resources"][0]], alpha=0.85)
        ax.text(end, y, f" {j['gpus']}× {j['gpu']}", va="center", fontsize=7)
        if j.get("deadline_hour") is not None:
            ax.plot([j["deadline_hour"] / HOURS_PER_DAY] * 2, [y - 0.4, y + 0.4], color="red", lw=1)
    ax.set_yticks(range(len(jobs)), [j["name"] for j in jobs], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, data["horizon_hours"] / HOURS_PER_DAY)
    ax.set_xlabel("days (red tick: deadline)")
    ax.set_title(f"batch schedule — total ${data['total_cost_usd']:,.0f} ({data['status']})")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[lab]) for lab in labels]
    ax.legend(handles, labels, fontsize=7, loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    save_figure(fig, out)
    plt.close(fig)


def register(app: typer.Typer) -> None:
    """Add the `batch` command to the ccopt app."""
    app.command("batch")(batch)
