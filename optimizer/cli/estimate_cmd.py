"""`ccopt estimate` (memory and speed of one configuration). Its configuration options are the
request's (cli/request_options.py), shared with `ccopt calibrate`; --from-plan, --row,
--efficiency and the serving workload (--mode serve ...) are estimate's own."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from optimizer import api
from optimizer.cli.common import (
    JsonOpt,
    OfflineOpt,
    PricesOpt,
    console,
    offline_choice,
    print_json,
    user_errors,
)
from optimizer.cli.request_options import with_request_options
from optimizer.errors import ConfigError
from optimizer.vocabulary import borrowed_words

__all__ = ["register", "ESTIMATE_ONLY"]

Opt = typer.Option

#: estimate's own options (calibrate has the other configuration options too)
ESTIMATE_ONLY = ("from_plan", "row", "efficiency", *api.SERVE_FIELDS)
#: options that may go with --from-plan (the plan's row sets everything else)
_WITH_FROM_PLAN = {"model"}


@with_request_options()
def estimate(
    ctx: typer.Context,
    config: dict[str, Any] | None = None,
    from_plan: Annotated[
        Path | None,
        Opt(
            "--from-plan",
            help="A saved `ccopt plan --json`: "
            "estimate its row's own configuration (model, "
            "instance, layout, workload) instead of giving flags (estimate only)",
        ),
    ] = None,
    row: Annotated[
        int, Opt("--row", help="With --from-plan: 0 the plan, k its k-th alternative (estimate only)")
    ] = 0,
    efficiency: Annotated[
        float | None,
        Opt(
            help=f"Override the base compute efficiency: "
            f"{api.MIN_EFFICIENCY:g}–1 (default: calibrated, else "
            "the GPU type's; estimate only)"
        ),
    ] = None,
    prices: PricesOpt = None,
    offline: OfflineOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Memory per GPU and step time (or serving speed) of one fixed configuration.

    Estimate only: --from-plan, --row, --efficiency and the serving options (--mode serve, --batch,
    --prompt-tokens, --output-tokens, --context, --kv-cache-precision); every other option is
    also `ccopt calibrate`'s."""
    config = config or {}
    with user_errors():
        a = api.assumptions_with(efficiency)
        if from_plan is not None:
            given = [
                name for name, value in config.items() if value is not None and name not in _WITH_FROM_PLAN
            ]
            if given:
                raise ConfigError(
                    f"--from-plan sets the configuration from the plan's row; "
                    f"leave out --{given[0].replace('_', '-')}"
                )
            request = api.plan_row_request(api.read_plan_file(from_plan), row, config.get("model"))
        elif _given_on_command_line(ctx, "row"):
            raise ConfigError("--row picks a row of --from-plan; give --from-plan PLAN.json too")
        elif config.get("model") is None:
            raise ConfigError(
                "--model is required (a preset or a config.json), or give --from-plan PLAN.json"
            )
        else:
            request = api.request_from_options(config)
        result = api.estimate_request(request, prices=prices, offline=offline_choice(offline), assumptions=a)
    if json_out:
        print_json(result)
        return
    _render(result)


def _render(r: dict[str, Any]) -> None:
    """One configuration's estimate: what runs where, memory per GPU, then speed."""
    c = console()
    title = f"{r['model']['name']} ({r['model']['params'] / 1e9:.2f}B) on {r['gpus']}× {r['gpu']}"
    layout = ", ".join(f"{k} {v}" for k, v in r["layout"].items())
    c.print(f"[b]{title}[/b] — {r['mode']}: {layout}; stack {r.get('stack', 'generic')}")
    where = r.get("instance") or f"{r.get('gpus_per_instance')} GPUs per instance"
    c.print(
        f"hardware: {where}, {r.get('inter_node_gbps', 0):g} Gbit/s between instances"
        + (" (a documented default)" if r.get("inter_node_is_default") else "")
    )
    if r.get("note"):
        c.print(f"[yellow]note:[/yellow] {r['note']}")
    c.print(_memory_table(r))
    if r["mode"] == "train" and r.get("step"):
        _render_step(c, r)
    elif r["mode"] == "serve":
        _render_serving(c, r)


def _memory_table(r: dict[str, Any]) -> Table:
    """Memory per GPU by part, the peak allocated, reserved and device, and the verdict."""
    mem = r["memory_gib"]
    table = Table()
    table.add_column("memory per GPU")
    table.add_column("GiB", justify="right")
    for key in ("weights", "gradients", "optimizer", "activations", "kv_cache", "overhead"):
        label = key
        if key == "activations" and r.get("memory_calibrated"):
            label = f"activations (calibrated ×{r['memory_activation_factor']:.2f})"
        table.add_row(label, f"{mem[key]:.2f}")
    table.add_row("[b]total (peak allocated)[/b]", f"[b]{mem['total']:.2f}[/b]")
    for key, label in (("reserved", "reserved (allocator)"), ("device", "device (nvidia-smi)")):
        if mem.get(key) is not None:
            table.add_row(label, f"{mem[key]:.2f}")
    if r.get("memory_device_gib_p90") is not None:
        # the memory band (measured ÷ predicted, widened for stacks the model was not shaped on)
        band = f"{r['memory_device_gib_p10']:.2f}–{r['memory_device_gib_p90']:.2f}"
        table.add_row("device, P10–P90", band)
    table.add_row("GPU memory", f"{r['gpu_memory_gib']:g}")
    verdict = "[green]fits[/green]" if r["fits"] else "[red]does NOT fit[/red]"
    table.add_row("verdict", verdict)
    return table


def _render_step(c: Any, r: dict[str, Any]) -> None:
    """A training estimate's step: its parts, the rate, MFU, and the P10–P90 band."""
    s = r["step"]
    unit = f"{r['sample_unit']}s" if r.get("sample_unit") else "tokens"
    rate = r["samples_per_s"] if r.get("sample_unit") else r["tokens_per_s"]
    per_gpu = rate * r["tokens_per_s_per_gpu"] / r["tokens_per_s"] if r["tokens_per_s"] else 0
    base = f" (base {r['base_efficiency']:.3f} × size factor)" if r.get("base_efficiency") else ""
    flops = (
        (f"MFU {r['mfu']:.1%}, HFU {r['hfu']:.1%}; effective compute efficiency {r['efficiency']:.3f}{base}")
        if r["mfu"]
        else "MFU unknown (no FLOPs source)"
    )
    cal = (
        ("scaled to a measured run" if r.get("band_source") else "calibrated")
        if r.get("calibrated")
        else "default, uncalibrated"
    )
    host = f" + waiting for the host's kernel launches {s['host_wait_s']:.3f}" if s.get("host_wait_s") else ""
    c.print(
        f"step {s['time_s']:.3f} s = compute {s['compute_s']:.3f} + communication "
        f"{s['communication_s']:.3f} + bubble {s['bubble_s']:.3f}{host}; "
        f"{rate:,.{1 if r.get('sample_unit') else 0}f} {unit}/s "
        f"({per_gpu:,.{1 if r.get('sample_unit') else 0}f} per GPU), {flops} ({cal})"
    )
    if r.get("step_time_s_p10") is not None:
        basis = r.get("interval_basis") or {}
        source = (
            ("the profile's band: measured GPU type, its generation, or across generations")
            if r.get("band_source")
            else "no measured training run of this GPU generation and precision: the wide prior"
            if basis.get("group") == "prior"
            else "no measured training run of this GPU generation and precision: "
            f"{borrowed_words(basis['borrowed'])}"
            if basis.get("borrowed")
            else f"cross-validated residuals of {basis.get('cases', 0)} measured runs from "
            f"{basis.get('sources', 0)} sources, {basis.get('group')}"
        )
        median = f", P50 {r['step_time_s_p50']:.3f} s" if r.get("step_time_s_p50") is not None else ""
        c.print(
            f"P10–P90 of the step time: {r['step_time_s_p10']:.3f}–"
            f"{r['step_time_s_p90']:.3f} s{median} ({source})"
        )
    if r.get("mfu_ceiling_note"):
        c.print(f"[yellow]check:[/yellow] {r['mfu_ceiling_note']}")


def _render_serving(c: Any, r: dict[str, Any]) -> None:
    """A serving estimate's speeds: TTFT, TPOT, tokens and requests per second."""
    c.print(
        f"TTFT {r['ttft_s'] * 1e3:.4g} ms, TPOT {r['tpot_ms']:.2f} ms, "
        f"{r['output_tokens_per_s']:,.0f} output tokens/s, {r['requests_per_s']:.2f} "
        f"requests/s ({r['requests_per_s_per_replica']:.2f} per replica; "
        f"{r['bound']}-bound decode)"
    )


def register(app: typer.Typer) -> None:
    app.command("estimate")(estimate)


def _given_on_command_line(ctx: typer.Context, name: str) -> bool:
    """Whether option `name` was typed (not a default): click's ParameterSource, by its name."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"
