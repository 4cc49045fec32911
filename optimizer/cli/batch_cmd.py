"""`ccopt batch JOBS.toml`: many jobs on shared quotas, owned boxes and reservations."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from optimizer import api
from optimizer.api import check_number
from optimizer.cli.common import (
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
    offline_choice,
    print_fallback,
    time_limit_option,
    time_limit_s,
    user_errors,
)
from optimizer.cli.export_opts import ExportDirOpt, ExportOpt, TrainScriptOpt, check_export
from optimizer.cli.outcome import (
    ExportRequest,
    PlotNote,
    finish,
    offering_words,
    plot_file,
    print_price_legend,
)
from optimizer.cli.plot import _pyplot, save_figure
from optimizer.cli.progress import Progress
from optimizer.errors import Status
from optimizer.files import OutputFile
from optimizer.units import HOURS_PER_DAY, MINUTES_PER_HOUR, quantile_label

__all__ = ["register", "render_batch", "plot_schedule"]

Opt = typer.Option
GANTT_WIDTH = 48  # characters of the horizon bar in the Gantt tables
DEFAULT_BATCH_TIME_LIMIT_S = 30.0  # a batch solves one larger model than plan
_SINGULAR = {"boxes": "box", "instances": "instance"}


JobsArg = Annotated[
    Path, typer.Argument(help="Batch file (TOML): a [capacity] table and [[job]] tables", metavar="JOBS")
]
SchedulePlotOpt = Annotated[
    Path | None, Opt("--plot", help="Write the schedule as PNG (needs the 'plot' extra)")
]
BatchTimeLimitOpt = Annotated[float | None, time_limit_option(DEFAULT_BATCH_TIME_LIMIT_S)]
WorkersOpt = Annotated[int, Opt(help=f"CP-SAT worker threads: 1–{MAX_WORKERS}")]


def batch(
    jobs: JobsArg,
    json_out: JsonOpt = False,
    plot: SchedulePlotOpt = None,
    time_limit: BatchTimeLimitOpt = None,
    workers: WorkersOpt = 2,
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
    inputs = input_files(jobs, prices)
    with user_errors():
        check_export(export, out_dir, json_out, train_script)
        time_limit = time_limit_s(time_limit, old_time_limit, DEFAULT_BATCH_TIME_LIMIT_S)
        check_number(workers, "--workers", ge=1, le=MAX_WORKERS, integer=True)
        out = plot_file(plot, force=force, inputs=inputs)
        with Progress("reading the batch…") as progress:
            result = api.batch(
                jobs,
                prices=prices,
                offline=offline_choice(offline),
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
    plotted = PlotNote(plot, plot is not None and bool(result.jobs), "schedule plot", "no schedule to plot")
    finish(data, json_out, render_batch, ExportRequest(export, out_dir, force, inputs, train_script), plotted)


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
    if data["status"] == Status.INFEASIBLE:
        _render_infeasible(c, data)
        return
    _render_totals(c, data)
    c.print(_jobs_table(data["jobs"]))
    print_price_legend(c, [j for j in data["jobs"] if j["status"] == "scheduled"])
    for j in data["jobs"]:
        if j.get("placement", "").startswith("cloud"):
            c.print(f"  [b]{j['name']}[/b] on the {j['placement']}")
    for note in data.get("notes", []):
        c.print(f"  [dim]note:[/dim] {note}")
    _render_lanes(c, data)


def _render_infeasible(c: Any, data: dict[str, Any]) -> None:
    """Why no batch plan exists, and the fixes with what each would cost."""
    expl = data.get("explanation") or {}
    c.print(f"[red]infeasible[/red]: {expl.get('text', 'no plan meets the constraints')}")
    print_fallback(c, data)
    for f in expl.get("fixes", []):
        c.print(f"  fix: {f['change']} → total {_money(f['cost_usd'])}")


def _render_totals(c: Any, data: dict[str, Any]) -> None:
    """The first line (total, its parts, the solver) and the confidence the durations are at."""
    s = data["solver"]
    br = data["cost_breakdown_usd"]
    gap = s.get("gap", 0.0)
    # capacity blocks are reservations with a window (resources' window_h): named as such
    blocks = any(r.get("window_h") for r in data.get("resources", []) if r.get("kind") == "reservation")
    reserved = "reservations and blocks" if blocks else "reservations"
    c.print(
        f"[b]{len(data['jobs'])} jobs[/b] — [b]{data['status']}[/b]: total "
        f"[b]{_money(data['total_cost_usd'])}[/b] (cloud {_money(br['cloud'])}, owned "
        f"{_money(br['owned'])}, {reserved} {_money(br['reservations'])}"
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


def _jobs_table(jobs: list[dict[str, Any]]) -> Table:
    """One row per job: its plan, GPUs, start, end and deadline (days) and cost; or why dropped."""
    table = Table(title="Jobs")
    for col in ("job", "plan", "GPUs", "start d", "end d", "deadline d", "cost"):
        table.add_column(col, justify="left" if col in ("job", "plan") else "right")
    for j in jobs:
        if j["status"] != "scheduled":
            dropped = f"[dim]{j['status']} (value {_money(j['value_usd'])})[/dim]"
            table.add_row(j["name"], dropped, "", "", "", _days(j["deadline_hour"]), "")
            continue
        table.add_row(
            j["name"],
            offering_words(j),
            str(j["gpus"]),
            _days(j["start_hour"]),
            _days(j["end_hour"]),
            _days(j["deadline_hour"]),
            _money(j["cost_usd"]),
        )
    return table


def _render_lanes(c: Any, data: dict[str, Any]) -> None:
    """A Gantt-like table per resource: its scheduled jobs as bars over the horizon."""
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
