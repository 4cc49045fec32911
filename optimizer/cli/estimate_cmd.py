"""`ccopt estimate` (memory and speed of one configuration) and `ccopt calibrate`."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

import typer
from rich.table import Table

from optimizer.api import estimate as run
from optimizer.api import resolve_model
from optimizer.cli.common import console, print_json, user_errors
from optimizer.errors import ConfigError
from optimizer.inputs.calibration import base_assumptions, fit_efficiency, save_calibration
from optimizer.inputs.gpus import get_gpu
from optimizer.model.setup import Layout, TrainingSetup
from optimizer.model.step_time import Cluster

__all__ = ["register"]

Opt = typer.Option


def estimate(
    model: Annotated[str, Opt("--model", "-m", help="Preset name or path of a HF config.json")],
    gpu: Annotated[str, Opt("--gpu", "-g", help="GPU id or alias (A100-80GB, h100, 4090, ...)")],
    gpus: Annotated[int, Opt(help="Total GPUs")] = 1,
    gpus_per_node: Annotated[int | None, Opt(help="GPUs per node (default min(gpus, 8))")] = None,
    tp: Annotated[int, Opt(help="Tensor-parallel degree")] = 1,
    pp: Annotated[int, Opt(help="Pipeline-parallel degree")] = 1,
    zero: Annotated[int, Opt(help="ZeRO stage 0-3 (3 = FSDP)")] = 0,
    checkpointing: Annotated[str, Opt(help="none | selective | full")] = "none",
    micro_batch: Annotated[int, Opt(help="Sequences per GPU per micro-step")] = 1,
    global_batch: Annotated[int | None, Opt(help="Sequences per step (sets grad accumulation)")] = None,
    seq_len: Annotated[int, Opt(help="Tokens per sequence")] = 2048,
    precision: Annotated[str, Opt(help="fp32 | bf16 | fp16 | fp8 (serve: + int8, int4)")] = "bf16",
    optimizer: Annotated[str, Opt(help="adamw | adam-8bit | sgd | adafactor")] = "adamw",
    method: Annotated[str, Opt(help="full | lora | qlora")] = "full",
    lora_rank: Annotated[int, Opt(help="LoRA rank")] = 16,
    attention: Annotated[str, Opt(help="flash | eager")] = "flash",
    inter_node_gbps: Annotated[float, Opt(help="Network per node, Gbit/s")] = 100.0,
    offload_optimizer: Annotated[bool, Opt(help="ZeRO-Offload optimizer state to CPU")] = False,
    offload_params: Annotated[bool, Opt(help="ZeRO-Infinity: parameters in CPU (zero 3)")] = False,
    lora_targets: Annotated[str | None, Opt(help="LoRA modules, comma-separated: "
                                                "q,k,v,o,gate,up,down (default all)")] = None,
    efficiency: Annotated[float | None, Opt(help="Override achievable compute efficiency")] = None,
    mode: Annotated[str, Opt(help="train | serve")] = "train",
    batch: Annotated[int, Opt(help="serve: concurrent sequences")] = 1,
    context: Annotated[int, Opt(help="serve: tokens per sequence in the KV cache")] = 2048,
    quantization: Annotated[str | None, Opt(help="serve: fp16 | bf16 | fp8 | int8 | int4")] = None,
    output_tokens: Annotated[int, Opt(help="serve: output tokens per request")] = 256,
    json_out: Annotated[bool, Opt("--json", help="JSON output")] = False,
) -> None:
    """Memory per GPU and step time of one fixed configuration."""


    with user_errors():
        a = base_assumptions()
        if efficiency is not None:
            if not 0 < efficiency <= 1:

                raise ConfigError(f"--efficiency: must be in (0, 1], got {efficiency}")
            a = replace(a, efficiency=efficiency)
        result = run(model, gpu, gpus=gpus, gpus_per_node=gpus_per_node, tp=tp, pp=pp, zero=zero,
                     checkpointing=checkpointing, micro_batch=micro_batch,
                     global_batch=global_batch, seq_len=seq_len, precision=precision,
                     optimizer=optimizer, method=method, lora_rank=lora_rank, attention=attention,
                     inter_node_gbps=inter_node_gbps, mode=mode, batch=batch, context=context,
                     quantization=quantization, output_tokens=output_tokens, assumptions=a,
                     offload_optimizer=offload_optimizer, offload_params=offload_params,
                     lora_targets=tuple(t.strip() for t in lora_targets.split(",") if t.strip())
                     if lora_targets else None)
    if json_out:
        print_json(result)
        return
    _render(result)


def _render(r: dict[str, Any]) -> None:

    c = console()
    mem = r["memory_gib"]
    title = f"{r['model']['name']} ({r['model']['params'] / 1e9:.2f}B) on {r['gpus']}× {r['gpu']}"
    layout = ", ".join(f"{k} {v}" for k, v in r["layout"].items())
    c.print(f"[b]{title}[/b] — {r['mode']}: {layout}")
    table = Table()
    table.add_column("memory per GPU")
    table.add_column("GiB", justify="right")
    for key in ("weights", "gradients", "optimizer", "activations", "kv_cache", "overhead"):
        table.add_row(key, f"{mem[key]:.2f}")
    table.add_row("[b]total[/b]", f"[b]{mem['total']:.2f}[/b]")
    table.add_row("GPU memory", f"{r['gpu_memory_gib']:g}")
    verdict = "[green]fits[/green]" if r["fits"] else "[red]does NOT fit[/red]"
    table.add_row("verdict", verdict)
    c.print(table)
    if r["mode"] == "train" and r.get("step"):
        s = r["step"]
        cal = "calibrated" if r.get("calibrated") else "default, uncalibrated"
        c.print(f"step {s['time_s']:.3f} s = compute {s['compute_s']:.3f} + communication "
                f"{s['communication_s']:.3f} + bubble {s['bubble_s']:.3f}; "
                f"{r['tokens_per_s']:,.0f} tokens/s ({r['tokens_per_s_per_gpu']:,.0f} per GPU), "
                f"MFU {r['mfu']:.1%}, HFU {r['hfu']:.1%}; compute efficiency {r['efficiency']:.3f} "
                f"({cal})")
    elif r["mode"] == "serve":
        c.print(f"TTFT {r['ttft_s'] * 1e3:.1f} ms, TPOT {r['tpot_ms']:.2f} ms, "
                f"{r['output_tokens_per_s']:,.0f} output tokens/s, {r['requests_per_s']:.2f} "
                f"requests/s ({r['bound']}-bound decode)")


def calibrate(
    model: Annotated[str, Opt("--model", "-m", help="Preset name or HF config.json")],
    gpu: Annotated[str, Opt("--gpu", "-g", help="GPU id or alias of the measured run")],
    tokens_per_s: Annotated[float | None, Opt(help="Measured tokens/s of the whole run")] = None,
    step_time_s: Annotated[float | None, Opt(help="Measured seconds per optimizer step")] = None,
    gpus: Annotated[int, Opt(help="GPUs of the measured run")] = 1,
    gpus_per_node: Annotated[int | None, Opt(help="GPUs per node")] = None,
    tp: Annotated[int, Opt()] = 1,
    pp: Annotated[int, Opt()] = 1,
    zero: Annotated[int, Opt()] = 0,
    checkpointing: Annotated[str, Opt()] = "none",
    micro_batch: Annotated[int, Opt()] = 1,
    global_batch: Annotated[int | None, Opt()] = None,
    seq_len: Annotated[int, Opt()] = 2048,
    precision: Annotated[str, Opt()] = "bf16",
    method: Annotated[str, Opt()] = "full",
    inter_node_gbps: Annotated[float, Opt()] = 100.0,
    json_out: Annotated[bool, Opt("--json", help="JSON output")] = False,
) -> None:
    """Fit the compute efficiency of a GPU type to one measured run and store it for later
    estimates and plans (file: $CCOPT_CALIBRATION or ~/.config/ccopt/calibration.json)."""

    with user_errors():
        if (tokens_per_s is None) == (step_time_s is None):
            raise ConfigError("give exactly one of --tokens-per-s or --step-time-s")

        probe = run(model, gpu, gpus=gpus, gpus_per_node=gpus_per_node, tp=tp, pp=pp, zero=zero,
                    checkpointing=checkpointing, micro_batch=micro_batch,
                    global_batch=global_batch, seq_len=seq_len, precision=precision,
                    method=method, inter_node_gbps=inter_node_gbps)
        if probe.get("step") is None:
            raise ConfigError(f"--precision: {probe.get('note')}")

        spec, g = resolve_model(model), get_gpu(gpu, "--gpu")
        lay = probe["layout"]
        layout = Layout(dp=lay["dp"], tp=tp, pp=pp, zero_stage=zero, checkpointing=checkpointing,
                        micro_batch=micro_batch, grad_accum=lay["grad_accum"])
        setup = TrainingSetup(seq_len=seq_len, precision=precision, method=method)
        gpn = gpus_per_node or min(gpus, 8)
        cluster = Cluster(g, gpn, gpus // gpn, inter_node_gbps)
        measured = step_time_s or layout.global_batch * seq_len / float(tokens_per_s or 1)

        eff = fit_efficiency(spec, setup, layout, cluster, measured,
                             replace(base_assumptions(), efficiency=None))
        path = save_calibration(g.gpu_id, precision, eff, {
            "model": spec.name, "gpus": gpus, "layout": lay, "seq_len": seq_len,
            "step_time_s": measured, "tokens_per_s": layout.global_batch * seq_len / measured})
    out = {"gpu": g.gpu_id, "precision": precision, "efficiency": round(eff, 6),
           "default_prediction_step_s": probe["step"]["time_s"], "measured_step_s": measured,
           "file": str(path)}
    if json_out:
        print_json(out)
    else:
        console().print(f"{g.gpu_id} {precision}: efficiency {eff:.4f} (default model predicted "
                        f"{probe['step']['time_s']:.3f} s/step, measured {measured:.3f} s); "
                        f"saved to {path}")


def register(app: typer.Typer) -> None:
    app.command("estimate")(estimate)
    app.command("calibrate")(calibrate)
