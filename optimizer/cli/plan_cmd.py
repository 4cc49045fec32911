"""`ccopt plan JOB.toml` and `ccopt compare JOB.toml`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from optimizer import api
from optimizer.api import check_number
from optimizer.cli.best_table import best_per_table
from optimizer.cli.common import (
    MAX_ALTERNATIVES,
    AlternativesOpt,
    ConfidenceOpt,
    ForceOpt,
    JobArg,
    JsonOpt,
    OfflineOpt,
    OldTimeLimitOpt,
    PricesOpt,
    TimeLimitOpt,
    answer,
    console,
    goodput_words,
    header_or_infeasible,
    input_files,
    interconnect_words,
    layout_words,
    memory_calibration_words,
    money,
    offline_choice,
    price_mark,
    price_words,
    print_notes,
    print_solved_header,
    signed_money,
    time_limit_s,
    user_errors,
)
from optimizer.cli.export_opts import ExportDirOpt, ExportOpt, TrainScriptOpt, check_export
from optimizer.cli.mix_view import compare_mix_line, mix_pointer, print_mix
from optimizer.cli.outcome import ExportRequest, PlotNote, finish, plot_file, print_price_legend
from optimizer.cli.plot import plot_pareto
from optimizer.cli.rent_buy_view import print_break_even, print_by_utilisation, print_verdict
from optimizer.units import quantile_label
from optimizer.vocabulary import borrowed_words

__all__ = ["register", "render_plan", "data_lines"]

Opt = typer.Option


def plan(
    job: JobArg,
    json_out: JsonOpt = False,
    pareto: Annotated[bool, Opt("--pareto", help="Also the cost-vs-time Pareto front")] = False,
    plot: Annotated[
        Path | None, Opt("--plot", help="Write the Pareto front as PNG (needs the 'plot' extra)")
    ] = None,
    alternatives: AlternativesOpt = 3,
    prices: PricesOpt = None,
    offline: OfflineOpt = False,
    time_limit: TimeLimitOpt = None,
    old_time_limit: OldTimeLimitOpt = None,
    confidence: ConfidenceOpt = None,
    force: ForceOpt = False,
    export: ExportOpt = None,
    out_dir: ExportDirOpt = None,
    train_script: TrainScriptOpt = None,
) -> None:
    """The cheapest cluster that finishes JOB by its deadline (and within budget)."""
    inputs = input_files(job, prices)
    with user_errors():
        check_export(export, out_dir, json_out, train_script)
        time_limit = time_limit_s(time_limit, old_time_limit)
        check_number(alternatives, "--alternatives", ge=0, le=MAX_ALTERNATIVES, integer=True)
        out = plot_file(plot, force=force, inputs=inputs)
        data = api.plan(
            job,
            prices=prices,
            offline=offline_choice(offline),
            alternatives=alternatives,
            pareto=pareto or plot is not None,
            time_limit_s=time_limit,
            confidence=confidence,
        )
        written = False
        if out is not None and data.get("pareto"):
            plot_pareto(data["pareto"], out, title=data["job"]["name"])
            written = True
    plotted = PlotNote(plot, written, "Pareto plot", "no plans to plot")
    finish(data, json_out, render_plan, ExportRequest(export, out_dir, force, inputs, train_script), plotted)


def confidence_words(p: dict[str, Any]) -> str:
    """ " at P80", the quantile the plan's days and cost are at."""
    return "" if p.get("confidence") is None else f" at {quantile_label(p['confidence'])}"


def band_lines(p: dict[str, Any], data: dict[str, Any]) -> list[str]:
    """P50 and P90 days and cost, the evidence of the band, and the P50 plan when it differs."""
    if p.get("days_p50") is None:
        return []
    basis = p.get("interval_basis") or {}
    cases = basis.get("cases", 0)
    group = basis.get("group")
    sources = basis.get("sources", 0)
    of_sources = f"{sources} source{'' if sources == 1 else 's'}"
    evidence = (
        "no measured run: the wide prior band"
        if group == "prior"
        else f"no measured run of this GPU generation and precision: {borrowed_words(basis['borrowed'])}"
        if basis.get("borrowed")
        else "the profile's own band"
        if group == "profile"
        else f"calibrated from your measured runs on {p['gpu']} (`ccopt calibrate --list`); band of "
        f"calibrated predictions of {cases} held-out runs, {of_sources}"
        if group == "calibrated"
        else f"band from {cases} measured run{'' if cases == 1 else 's'}, {of_sources} ({group})"
    )
    out = [
        f"P50 {p['days_p50']:.2f} days, {money(p['cost_usd_p50'])}; P90 {p['days_p90']:.2f} days, "
        f"{money(p['cost_usd_p90'])} ({evidence})"
    ]
    median = data.get("median_plan")
    if median:
        out.append(
            f"a P50 plan would take {median['gpus']}× {median['gpu']} ({median['provider']} "
            f"{median['instance']}, {median['pricing']}) for {money(median['cost_usd'])} in "
            f"{median['days']:.2f} days; not taken: {median.get('rejected_because')}"
        )
    if data.get("sizing_run"):
        out.append(sizing_run_line(data["sizing_run"]))
    return out


def sizing_run_line(s: dict[str, Any]) -> str:
    """The measurement that settles the plan (issue 45), in one line."""
    t = s["target"]
    gain = s["expected_saving_usd"]
    worth = (
        f"expected saving {money(gain)}"
        if gain > 0
        else f"not worth it: the reading costs more than the {money(gain + s['cost_usd'])} "
        "it is expected to save"
    )
    net = (
        f"; its {t['instances']} instances' network stays modelled (a one-node reading is compute)"
        if s["network_matters"]
        else ""
    )
    return (
        f"sizing run: {s['instances']}× {s['instance']} ({s['provider']}, {s['gpus']}× {s['gpu']}), "
        f"{s['warmup_steps']}+{s['measured_steps']} steps (±{s['reading_precision']:.0%} at "
        f"{s['reading_level']:.0%}), {s['minutes']:.0f} min, {money(s['cost_usd'])}: if a step takes "
        f"≤ {s['threshold_multiplier']:.2f}× the prediction ({s['p_holds']:.0%} by its band), "
        f"{t['gpus']}× {t['gpu']} ({t['provider']}) holds at {quantile_label(s['confidence'])}, "
        f"for a median {money(t['cost_if_holds_usd'])} if it holds ({money(s['saving_usd'])} less); {worth} "
        f"(`ccopt sizing` ranks the contenders){net}"
    )


def speed_words(p: dict[str, Any]) -> str:
    """ "201,203 tokens/s, MFU 51.5%", or samples/s in the job's unit; MFU unknown without FLOPs."""
    mfu = f"MFU {p['mfu']:.1%}" if p["mfu"] > 0 else "MFU unknown (no FLOPs source)"
    if p.get("sample_unit"):
        rate = f"{p['samples_per_s']:,.1f} {p['sample_unit']}s/s"
        if p["tokens_per_s"] > 1.5 * p["samples_per_s"]:  # samples of several tokens
            rate += f" ({p['tokens_per_s']:,.0f} tokens/s)"
        return f"{rate}, {mfu}"
    return f"{p['tokens_per_s']:,.0f} tokens/s, {mfu}"


def render_plan(data: dict[str, Any]) -> None:
    """A plan on the terminal: the header and notes, the cluster and what it costs, the facts
    lines, the why and the checks, then the alternatives and the Pareto front."""
    shown = print_solved_header(data, "candidates", lambda job, _plan: str(job.get("model")))
    if shown is None:
        for r in data.get("loader_bound", [])[:3]:  # what the hosts' vCPUs cost in speed
            console().print(f"  loader-bound: {escape(r['option'])}: {escape(r['reason'])}")
        print_mix(console(), data.get("mix"))
        return
    c, _job, p = shown
    print_notes(c, data)
    for line in _plan_lines(p, data):
        c.print(line)
    print_verdict(c, data.get("rent_or_buy"))
    print_mix(c, data.get("mix"))
    for warning in p.get("warnings", []):
        c.print(f"  [yellow]check:[/yellow] {warning}")
    _print_alternatives(c, p, data["alternatives"])
    if data.get("pareto"):
        _print_pareto(c, data["pareto"])


def _plan_lines(p: dict[str, Any], data: dict[str, Any]) -> list[str]:
    """The plan's own lines: the cluster and its cost, the term paid, the band, the price,
    layout, speed, whole run, memory and data lines, and what binds."""
    lay = p["layout"]
    lines = [
        f"  [b]{p['instances']}× {p['instance']}[/b] ({p['gpus']}× {p['gpu']}) on "
        f"{p['provider']} {p['region']}, {p['pricing']} — [b]{money(p['cost_usd'])}[/b] "
        f"in {p['days']:.2f} days ({p['hours']:,.1f} h at ${p['usd_per_hour']:,.2f}/h)" + confidence_words(p)
    ]
    terms = p.get("terms")
    if terms:
        lines.append(
            f"  term paid: {terms['billed_hours']:,.1f} h billed for {terms['run_hours']:,.1f} h run "
            f"({escape(terms['words'])})"
        )
    pointer = mix_pointer(data.get("mix"))
    if pointer:
        lines.append(f"  [b]{escape(pointer)}[/b]")
    lines += [f"  {line}" for line in band_lines(p, data)]
    lines.append(f"  {price_words(p)}")
    lines.append(
        f"  layout: {layout_words(lay)}; micro-batch {lay['micro_batch']} × grad-accum "
        f"{lay['grad_accum']} × dp {lay['dp']} = global batch {p['global_batch']}"
    )
    lines.append(f"  speed: {p['steps']:,} steps of {p['step_time_s']:.2f} s; {speed_words(p)}")
    if p.get("goodput"):
        lines.append(f"  {goodput_words(p['goodput'])}")
    lines.append(
        f"  memory: {p['memory_gib']['device']:.1f} of {p.get('gpu_memory_gib', 0):g} GiB "
        f"per GPU on the device ({p['memory_gib']['total']:.1f} allocated; "
        f"{p.get('memory_headroom_gib', 0):.1f} GiB free, "
        f"{p.get('memory_headroom_required_gib') or 0:.1f} GiB required"
        f"{memory_calibration_words(p)}{_memory_band_words(p)}); relies on {interconnect_words(p)}"
    )
    lines += [f"  {line}" for line in data_lines(p, data)]
    if data.get("binding_constraint") == "deadline":
        lines.append(f"  why this plan: the deadline binds ({_slower_words(data.get('cheaper_if_later'))})")
    return lines


def _memory_band_words(p: dict[str, Any]) -> str:
    """The device peak's P10–P90 (the memory band), and whether its P90 passes the card."""
    low, high = p.get("memory_device_gib_p10"), p.get("memory_device_gib_p90")
    if low is None or high is None:
        return ""
    over = high > (p.get("gpu_memory_gib") or float("inf"))
    planned = p.get("memory_confidence")
    if planned is not None:
        return f"; P10–P90 {low:.1f}–{high:.1f} GiB, fitted at P{planned * 100:g}"
    return f"; P10–P90 {low:.1f}–{high:.1f} GiB" + (
        " — over the card at P90: constraints.memory_confidence plans for it" if over else ""
    )


def _slower_words(late: dict[str, Any] | None) -> str:
    """The cheaper plan the deadline rules out, in words (or that one exists)."""
    if not late:
        return "a cheaper, slower plan would finish late"
    return (
        f"{late['gpus']}× {late['gpu']} ({late['provider']} {late['instance']}, "
        f"{late['pricing']}) would cost {money(late['cost_usd'])} but needs {late['days']:.1f} days"
    )


def _print_alternatives(c: Console, p: dict[str, Any], alternatives: list[dict[str, Any]]) -> None:
    """The plan and its next-best distinct alternatives as one table, with the price legend."""
    rows = [("plan", p)] + [(f"alt {i + 1}", a) for i, a in enumerate(alternatives)]
    table = Table(title="Plan and next-best distinct alternatives")
    for col in ("", "gpu", "provider", "instance", "pricing", "GPUs", "days", "cost", "extra", "layout"):
        table.add_column(col, justify="right" if col in ("GPUs", "days", "cost", "extra") else "left")
    for label, r in rows:
        extra = "" if label == "plan" else signed_money(r.get("extra_cost_usd", 0))
        table.add_row(
            label,
            r["gpu"],
            r["provider"],
            r["instance"],
            r["pricing"] + price_mark(r),
            str(r["gpus"]),
            f"{r['days']:.2f}",
            money(r["cost_usd"]),
            extra,
            layout_words(r["layout"], short=True),
        )
    c.print(table)
    print_price_legend(c, [r for _, r in rows])


def _print_pareto(c: Console, front_rows: list[dict[str, Any]]) -> None:
    """The cost-vs-finish-time front as a table."""
    front = Table(title="Pareto front: cost vs finish time")
    for col in ("days", "cost", "gpus", "gpu", "provider", "pricing"):
        front.add_column(col, justify="right" if col in ("days", "cost", "gpus") else "left")
    for r in front_rows:
        front.add_row(
            f"{r['days']:.2f}", money(r["cost_usd"]), str(r["gpus"]), r["gpu"], r["provider"], r["pricing"]
        )
    c.print(front)


def data_lines(p: dict[str, Any], data: dict[str, Any]) -> list[str]:
    """The plan's data and host lines: what the data costs, whether the loader keeps up, and
    which cheaper GPUs their hosts slow down."""
    out: list[str] = []
    d, h = p.get("data") or {}, p.get("host") or {}
    if d.get("counted"):
        ckpt = (
            f"{d['checkpoints_kept']}× {d['checkpoint_gb']:,.1f} GB checkpoints every "
            f"{d['checkpoint_every_hours']:g} h"
            if d.get("checkpoint_gb")
            else "checkpoints on local disk"
        )
        out.append(
            f"data: {money(d['total_usd'])} ({d['share_of_cost']:.1%} of the plan) = "
            f"transfer {money(d['egress_usd'])} ({d['egress_gb']:,.0f} GB, {d['route']}) + "
            f"storage {money(d['dataset_storage_usd'] + d['checkpoint_storage_usd'])} "
            f"(dataset {money(d['dataset_storage_usd'])}, {ckpt} "
            f"{money(d['checkpoint_storage_usd'])})"
        )
        if d.get("unknown"):
            out.append("[yellow]check:[/yellow] prices unknown, counted as $0: " + "; ".join(d["unknown"]))
    elif d:
        out.append(f"data: {escape(d.get('note') or '')}")
    if h and h.get("loader_samples_per_s") is not None:
        words = (
            f"host: {h['vcpus'] * p['instances']:,.0f} vCPUs load "
            f"{h['loader_samples_per_s']:,.0f} {h.get('unit', 'samples/s')}, the GPUs need "
            f"{h['gpu_samples_per_s']:,.0f}"
        )
        if h.get("loader_bound"):
            words += f" — [b]loader-bound[/b]: the step is slowed {h['slowdown']:.2f}× to the loader's rate"
        out.append(
            words + f"; host RAM {h['ram_needed_gib']:,.0f} of {h['ram_gib'] or 0:,.0f} GiB per instance"
            if h.get("ram_gib")
            else words + "; host RAM unknown"
        )
    for note in h.get("notes", []):
        out.append(f"[yellow]check:[/yellow] {note}")
    plan_price = p["usd_per_hour"] / max(1, p["gpus"])
    cheaper = [r for r in data.get("loader_bound", []) if r["usd_per_gpu_hour"] < plan_price]
    for r in cheaper[:3]:
        out.append(f"loader-bound (cheaper GPU-hour): {escape(r['option'])}: {escape(r['reason'])}")
    if len(cheaper) > 3:
        out.append(f"(+{len(cheaper) - 3} more loader-bound offerings in --json loader_bound)")
    return out


def compare(
    job: JobArg,
    json_out: JsonOpt = False,
    prices: PricesOpt = None,
    offline: OfflineOpt = False,
    confidence: ConfidenceOpt = None,
) -> None:
    """Best plan per GPU type and per provider; cloud vs owned/bought with the break-even."""
    with user_errors():
        data = api.compare(job, prices=prices, offline=offline_choice(offline), confidence=confidence)
    answer(data, json_out, render_compare)


def render_compare(data: dict[str, Any]) -> None:
    """The per-GPU and per-provider tables, cloud vs owned, and the break-even table (rich)."""
    mixed = compare_mix_line(data.get("mix"))
    if header_or_infeasible(data) is None:
        if mixed:
            console().print(f"  {escape(mixed)}")
        return
    c = console()
    for title, key in (("Best plan per GPU type", "per_gpu"), ("Best plan per provider", "per_provider")):
        why = data.get(f"{key}_explanation") or {}
        no_plan = {name: f"no plan: {escape(why.get(name, 'deadline/budget'))}" for name in data[key]}
        table = best_per_table(
            title,
            ("", "plan", "GPUs", "days", "cost"),
            ("GPUs", "days", "cost"),
            data[key],
            "cost_usd",
            _compare_cells,
            no_plan,
        )
        c.print(table)
        print_price_legend(c, [r for r in data[key].values() if r])
    cloud, local = data["cloud"], data["owned_or_bought"]
    if cloud:
        c.print(
            f"cloud: {money(cloud['cost_usd'])} in {cloud['days']:.2f} days "
            f"({cloud['gpus']}× {cloud['gpu']}, {cloud['provider']})"
        )
    if local:
        c.print(
            f"owned/bought: {money(local['cost_usd'])} in {local['days']:.2f} days "
            f"({local['gpus']}× {local['gpu']}, capital {money(local['capital_usd'])})"
        )
    if mixed:
        c.print(escape(mixed))
    print_verdict(c, data.get("rent_or_buy"))
    print_break_even(c, data)
    print_by_utilisation(c, data.get("rent_or_buy"))


def _compare_cells(r: dict[str, Any]) -> list[str]:
    """A best plan of `ccopt compare`: the offering, GPUs, days and cost."""
    return [
        f"{r['instances']}× {r['instance']} ({r['provider']}, {r['pricing']}{price_mark(r)})",
        str(r["gpus"]),
        f"{r['days']:.2f}",
        money(r["cost_usd"]),
    ]


def register(app: typer.Typer) -> None:
    app.command("plan")(plan)
    app.command("compare")(compare)
