"""`ccopt serve JOB.toml` and `ccopt serve-compare JOB.toml`: size an inference deployment."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from optimizer.api import serve as run_serve
from optimizer.api import serve_compare as run_serve_compare
from optimizer.api import warn_renamed
from optimizer.cli.best_table import best_per_table
from optimizer.cli.common import (
    JsonOpt,
    OfflineOpt,
    OldTimeLimitOpt,
    PricesOpt,
    TimeLimitOpt,
    answer,
    console,
    input_files,
    money,
    offline_choice,
    price_mark,
    price_words,
    print_notes,
    print_solved_header,
    time_limit_s,
    user_errors,
)
from optimizer.cli.export_opts import ExportDirOpt, ExportOpt, check_export
from optimizer.cli.outcome import ExportRequest, finish, print_price_legend
from optimizer.units import quantile_label

__all__ = ["register", "render_serve", "render_compare"]

Opt = typer.Option
JobArg = Annotated[
    Path, typer.Argument(help='Serving job file (TOML, workload.kind = "serve")', metavar="JOB")
]


def _subject(job: dict[str, Any], p: dict[str, Any]) -> str:
    """What the first line names: the model, its precision and the load served."""
    return f"{job.get('model')} {job.get('precision')}, {p['load_requests_per_s']:.3g} requests/s"


def render_serve(data: dict[str, Any]) -> None:
    """Rich rendering of a serve_json answer."""
    shown = print_solved_header(data, "replica options", _subject)
    if shown is None:
        return
    c, job, p = shown
    print_notes(c, data)
    c.print(
        f"  [b]{money(p['usd_per_hour'])}/h[/b], {money(p['usd_per_month'])}/month "
        f"({job.get('hours_per_day', 24):g} h/day); capacity "
        f"{p['capacity_requests_per_s']:.3g} requests/s (headroom {p['headroom']:.0%}); "
        f"TTFT ≤ {p['ttft_s']:.3g} s, TPOT ≤ {p['tpot_ms']:.3g} ms"
        + (f" at {quantile_label(job['confidence'])}" if job.get("confidence") is not None else "")
    )
    if job.get("confidence") is not None:
        c.print(
            f"  speeds, latencies and capacity at {quantile_label(job['confidence'])} of each GPU's serving "
            "band (measured ÷ predicted times of published runs; the wide prior where none)"
        )
    c.print(_deployments_table(p["deployments"]))
    for d in p["deployments"]:
        c.print(f"  {d['provider']} {d['instance']}: {price_words(d)}")
    print_price_legend(c, p["deployments"])


def _deployments_table(deployments: list[dict[str, Any]]) -> Table:
    """One row per deployment: instances, offering, TP × replicas × batch, speed and price."""
    table = Table(title="Deployments")
    cols = (
        "instances",
        "instance",
        "provider",
        "pricing",
        "GPUs",
        "TP",
        "replicas",
        "batch",
        "req/s",
        "TTFT s",
        "TPOT ms",
        "$/h",
    )
    for col in cols:
        table.add_column(col, justify="left" if col in ("instance", "provider", "pricing") else "right")
    for d in deployments:
        table.add_row(
            str(d["instances"]),
            d["instance"],
            d["provider"],
            d["pricing"] + price_mark(d),
            f"{d['gpus']}× {d['gpu']}",
            str(d["tp"]),
            str(d["replicas"]),
            str(d["batch"]),
            f"{d['requests_per_s']:.3g}",
            f"{d['ttft_s']:.3g}",
            f"{d['tpot_ms']:.3g}",
            money(d["usd_per_hour"]),
        )
    return table


def render_compare(data: dict[str, Any]) -> None:
    """Rich table of the best deployment per GPU type."""
    c = console()
    why = data.get("per_gpu_explanation", {})
    table = best_per_table(
        "Best deployment per GPU type",
        ("gpu", "deployment", "$/h", "$/month", "capacity req/s"),
        ("$/h", "$/month", "capacity req/s"),
        data["per_gpu"],
        "usd_per_hour",
        _compare_cells,
        {gpu: why.get(gpu, {}).get("text", "") for gpu in data["per_gpu"]},
    )
    c.print(table)
    best = data["best"]
    if best["plan"]:
        c.print(f"best overall (mixes allowed): {money(best['plan']['usd_per_hour'])}/h")


def _compare_cells(p: dict[str, Any]) -> list[str]:
    """A best deployment of `ccopt serve-compare`: its replicas, price and capacity."""
    what = " + ".join(
        f"{d['instances']}× {d['instance']} ({d['provider']}, TP{d['tp']}, "
        f"{d['replicas']} replica{'s' if d['replicas'] != 1 else ''})"
        for d in p["deployments"]
    )
    return [what, money(p["usd_per_hour"]), money(p["usd_per_month"]), f"{p['capacity_requests_per_s']:.3g}"]


def serve(
    job: JobArg,
    json_out: JsonOpt = False,
    prices: PricesOpt = None,
    offline: OfflineOpt = False,
    time_limit: TimeLimitOpt = None,
    old_time_limit: OldTimeLimitOpt = None,
    compare: Annotated[bool, Opt("--compare", hidden=True)] = False,
    export: ExportOpt = None,
    out_dir: ExportDirOpt = None,
) -> None:
    """The cheapest replica mix that serves JOB's load within its latency targets."""
    if compare:  # the old spelling of `serve-compare`
        warn_renamed("serve --compare", "serve-compare")
        serve_compare(job, json_out, prices, offline, time_limit, old_time_limit)
        return
    with user_errors():
        check_export(export, out_dir, json_out)
        limit = time_limit_s(time_limit, old_time_limit)
        data = run_serve(job, prices=prices, offline=offline_choice(offline), time_limit_s=limit)
    finish(data, json_out, render_serve, ExportRequest(export, out_dir, inputs=input_files(job, prices)))


def serve_compare(
    job: JobArg,
    json_out: JsonOpt = False,
    prices: PricesOpt = None,
    offline: OfflineOpt = False,
    time_limit: TimeLimitOpt = None,
    old_time_limit: OldTimeLimitOpt = None,
) -> None:
    """Best serving deployment per GPU type (and the best mix over all types)."""
    with user_errors():
        limit = time_limit_s(time_limit, old_time_limit)
        data = run_serve_compare(job, prices=prices, offline=offline_choice(offline), time_limit_s=limit)
    answer(data, json_out, render_compare, data["best"]["status"])


def register(app: typer.Typer) -> None:
    """Add `serve` and `serve-compare` to the ccopt app."""
    app.command("serve")(serve)
    app.command("serve-compare")(serve_compare)
