"""`ccopt estimate` (memory and speed of one configuration) and `ccopt calibrate`."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

import typer
from rich.table import Table

from optimizer.api import estimate as run
from optimizer.api import resolve_model
from optimizer.api.calibrate import calibrate_profile, read_point_file
from optimizer.cli.common import (
    JsonOpt,
    OfflineOpt,
    PricesOpt,
    console,
    print_json,
    renamed_flag,
    user_errors,
)
from optimizer.errors import ConfigError
from optimizer.inputs.calibration import base_assumptions, fit_efficiency, save_calibration
from optimizer.inputs.calibration_file import (
    EFFICIENCY_RANGE,
    MIN_EFFICIENCY,
)
from optimizer.inputs.gpus import get_gpu
from optimizer.inputs.validation import check_number
from optimizer.model.presets import PROFILE_PRESETS
from optimizer.model.profile import MeasuredPoint
from optimizer.model.setup import Layout, TrainingSetup
from optimizer.model.step_time import Cluster
from optimizer.report.contract.common import emit
from optimizer.report.contract.train import CalibrateOutput

__all__ = ["register"]

Opt = typer.Option


def estimate(
    model: Annotated[str, Opt("--model", "-m", help="Preset name or path of a HF config.json")],
    gpu: Annotated[str | None, Opt("--gpu", "-g", help="GPU id or alias (A100-80GB, h100, "
                                   "4090, ...); not needed with --instance")] = None,
    instance: Annotated[str | None, Opt(help="PROVIDER:INSTANCE from the catalog (e.g. "
                                        "aws:p5.48xlarge): its GPUs per node, links and "
                                        "network, as the planner uses them")] = None,
    num_gpus: Annotated[int | None, Opt(help="Total GPUs (default: one instance, or 1)")] = None,
    gpus_per_node: Annotated[int | None, Opt(help="GPUs per node (default min(num_gpus, 8))")] = None,
    tp: Annotated[int, Opt(help="Tensor-parallel degree")] = 1,
    pp: Annotated[int, Opt(help="Pipeline-parallel degree")] = 1,
    context_parallel: Annotated[int, Opt(help="Context-parallel degree (sequence split, "
                                         "ring attention)")] = 1,
    virtual_stages: Annotated[int, Opt(help="Virtual pipeline stages per GPU (interleaved "
                                       "1F1B)")] = 1,
    zero_stage: Annotated[int | None, Opt(help="ZeRO stage 0-3 (3 = FSDP)")] = None,
    activation_checkpointing: Annotated[str | None, Opt(help="none | selective | full")] = None,
    sequence_parallel: Annotated[bool | None, Opt("--sequence-parallel/--no-sequence-parallel",
                                                  help="Megatron SP with tp > 1 (default: the "
                                                  "stack's)")] = None,
    micro_batch: Annotated[int, Opt(help="Sequences per GPU per micro-step")] = 1,
    global_batch: Annotated[int | None, Opt(help="Sequences per step (sets grad accumulation)")] = None,
    seq_len: Annotated[int | None, Opt(help="Tokens per sequence (default: the model's sample "
                                        "length; 2048 for LMs)")] = None,
    precision: Annotated[str, Opt(help="train: fp32 | bf16 | fp16 | fp8; serve (weights): fp16 | "
                                  "bf16 | fp8 | int8 | int4")] = "bf16",
    optimizer: Annotated[str, Opt(help="adamw | adam-8bit | sgd | adafactor")] = "adamw",
    method: Annotated[str, Opt(help="full | lora | qlora")] = "full",
    lora_rank: Annotated[int, Opt(help="LoRA rank")] = 16,
    attention: Annotated[str | None, Opt(help="flash | eager (default: the stack's)")] = None,
    stack: Annotated[str, Opt(help="Software stack profile (ccopt stacks)")] = "generic",
    inter_node_gbps: Annotated[float | None, Opt(help="Network per node, Gbit/s (default: the "
                                                 "instance's, else the GPU class's)")] = None,
    offload_optimizer: Annotated[bool, Opt(help="ZeRO-Offload optimizer state to CPU")] = False,
    offload_params: Annotated[bool, Opt(help="ZeRO-Infinity: parameters in CPU (zero 3)")] = False,
    lora_targets: Annotated[str | None, Opt(help="LoRA modules, comma-separated: "
                                                "q,k,v,o,gate,up,down (default all)")] = None,
    efficiency: Annotated[float | None, Opt(help="Override achievable compute efficiency")] = None,
    mode: Annotated[str, Opt(help="train | serve")] = "train",
    batch: Annotated[str, Opt(help="serve: concurrent sequences per replica, or max (the "
                              "largest that fits)")] = "1",
    prompt_tokens: Annotated[int | None, Opt(help="serve: prompt tokens per request "
                                             "(default 1024)")] = None,
    output_tokens: Annotated[int, Opt(help="serve: output tokens per request")] = 256,
    context: Annotated[int | None, Opt(help="serve: KV tokens per sequence (default prompt + "
                                       "output)")] = None,
    kv_cache_precision: Annotated[str, Opt(help="serve: fp16 | bf16 | fp8 | int8")] = "fp16",
    prices: PricesOpt = None, offline: OfflineOpt = False,
    json_out: JsonOpt = False,
    gpus: Annotated[int | None, Opt("--gpus", hidden=True)] = None,
    zero: Annotated[int | None, Opt("--zero", hidden=True)] = None,
    checkpointing: Annotated[str | None, Opt("--checkpointing", hidden=True)] = None,
    quantization: Annotated[str | None, Opt("--quantization", hidden=True)] = None,
) -> None:
    """Memory per GPU and step time (or serving speed) of one fixed configuration."""
    with user_errors():
        a = base_assumptions()
        if efficiency is not None:
            if not 0 < efficiency <= 1:
                raise ConfigError(f"--efficiency: must be in (0, 1], got {efficiency}")
            a = replace(a, efficiency=efficiency)
        result = run(model, gpu, num_gpus=num_gpus, gpus_per_node=gpus_per_node,
                     instance=instance, prices=prices, offline=True if offline else None,
                     tp=tp, pp=pp, context_parallel=context_parallel,
                     virtual_stages=virtual_stages, zero_stage=zero_stage,
                     activation_checkpointing=activation_checkpointing,
                     sequence_parallel=sequence_parallel, micro_batch=micro_batch,
                     global_batch=global_batch, seq_len=seq_len, precision=precision,
                     optimizer=optimizer, method=method, lora_rank=lora_rank, attention=attention,
                     stack=stack, inter_node_gbps=inter_node_gbps, mode=mode,
                     batch=_batch(batch), context=context, prompt_tokens=prompt_tokens,
                     output_tokens=output_tokens, kv_cache_precision=kv_cache_precision,
                     assumptions=a, offload_optimizer=offload_optimizer,
                     offload_params=offload_params,
                     lora_targets=tuple(t.strip() for t in lora_targets.split(",") if t.strip())
                     if lora_targets else None,
                     gpus=gpus, zero=zero, checkpointing=checkpointing, quantization=quantization)
    if json_out:
        print_json(result)
        return
    _render(result)


def _batch(value: str) -> int | str:
    """--batch: an integer, or "max"."""
    text = value.strip().lower()
    if text == "max":
        return text
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"--batch: {value!r} is not allowed; allowed: an integer > 0 or max") \
            from None


def _render(r: dict[str, Any]) -> None:

    c = console()
    mem = r["memory_gib"]
    title = f"{r['model']['name']} ({r['model']['params'] / 1e9:.2f}B) on {r['gpus']}× {r['gpu']}"
    layout = ", ".join(f"{k} {v}" for k, v in r["layout"].items())
    c.print(f"[b]{title}[/b] — {r['mode']}: {layout}; stack {r.get('stack', 'generic')}")
    where = r.get("instance") or f"{r.get('gpus_per_node')} GPUs per node"
    c.print(f"hardware: {where}, {r.get('inter_node_gbps', 0):g} Gbit/s between nodes"
            + (" (assumed)" if r.get("inter_node_assumed") else ""))
    if r.get("note"):
        c.print(f"[yellow]note:[/yellow] {r['note']}")
    table = Table()
    table.add_column("memory per GPU")
    table.add_column("GiB", justify="right")
    for key in ("weights", "gradients", "optimizer", "activations", "kv_cache", "overhead"):
        table.add_row(key, f"{mem[key]:.2f}")
    table.add_row("[b]total (peak allocated)[/b]", f"[b]{mem['total']:.2f}[/b]")
    for key, label in (("reserved", "reserved (allocator)"), ("device", "device (nvidia-smi)")):
        if mem.get(key) is not None:
            table.add_row(label, f"{mem[key]:.2f}")
    table.add_row("GPU memory", f"{r['gpu_memory_gib']:g}")
    verdict = "[green]fits[/green]" if r["fits"] else "[red]does NOT fit[/red]"
    table.add_row("verdict", verdict)
    c.print(table)
    if r["mode"] == "train" and r.get("step"):
        s = r["step"]
        cal = "calibrated" if r.get("calibrated") else "default, uncalibrated"
        unit = f"{r['sample_unit']}s" if r.get("sample_unit") else "tokens"
        rate = r["samples_per_s"] if r.get("sample_unit") else r["tokens_per_s"]
        per_gpu = rate * r["tokens_per_s_per_gpu"] / r["tokens_per_s"] if r["tokens_per_s"] else 0
        flops = (f"MFU {r['mfu']:.1%}, HFU {r['hfu']:.1%}; compute efficiency "
                 f"{r['efficiency']:.3f}") if r["mfu"] else "MFU unknown (no FLOPs source)"
        cal = ("scaled to a measured run" if r.get("band_source") else "calibrated") \
            if r.get("calibrated") else "default, uncalibrated"
        c.print(f"step {s['time_s']:.3f} s = compute {s['compute_s']:.3f} + communication "
                f"{s['communication_s']:.3f} + bubble {s['bubble_s']:.3f}; "
                f"{rate:,.{1 if r.get('sample_unit') else 0}f} {unit}/s "
                f"({per_gpu:,.{1 if r.get('sample_unit') else 0}f} per GPU), {flops} ({cal})")
        if r.get("step_time_s_p10") is not None:
            source = ("the profile's band: measured GPU type, its generation, or across "
                      "generations") if r.get("band_source") else \
                "cross-validated residuals of this stack and GPU class"
            c.print(f"P10–P90 of the step time: {r['step_time_s_p10']:.3f}–"
                    f"{r['step_time_s_p90']:.3f} s ({source})")
    elif r["mode"] == "serve":
        c.print(f"TTFT {r['ttft_s'] * 1e3:.1f} ms, TPOT {r['tpot_ms']:.2f} ms, "
                f"{r['output_tokens_per_s']:,.0f} output tokens/s, {r['requests_per_s']:.2f} "
                f"requests/s ({r['requests_per_s_per_replica']:.2f} per replica; "
                f"{r['bound']}-bound decode)")


def calibrate(
    model: Annotated[str | None, Opt("--model", "-m", help="Preset name or HF config.json "
                                     "(default: the --from file's)")] = None,
    gpu: Annotated[str | None, Opt("--gpu", "-g", help="GPU id or alias of the measured run "
                                   "(default: the --from file's)")] = None,
    tokens_per_s: Annotated[float | None, Opt(help="Measured tokens/s of the whole run")] = None,
    step_time_s: Annotated[float | None, Opt(help="Measured seconds per optimizer step")] = None,
    samples_per_s: Annotated[float | None, Opt(help="Per-sample models: measured samples/s of "
                                               "the whole run")] = None,
    peak_memory_gib: Annotated[float | None, Opt(help="Per-sample models: measured peak memory "
                                                 "per GPU")] = None,
    memory_metric: Annotated[str, Opt(help="allocated | reserved | device (nvidia-smi)")] = "device",
    optimizer: Annotated[str, Opt(help="Per-sample models: optimizer of the run")] = "adamw",
    from_file: Annotated[str | None, Opt("--from", help="A calibration point written by "
                                         "`ccopt measure`")] = None,
    num_gpus: Annotated[int | None, Opt(help="GPUs of the measured run")] = None,
    gpus_per_node: Annotated[int | None, Opt(help="GPUs per node")] = None,
    tp: Annotated[int, Opt()] = 1,
    pp: Annotated[int, Opt()] = 1,
    zero_stage: Annotated[int | None, Opt()] = None,
    activation_checkpointing: Annotated[str | None, Opt()] = None,
    micro_batch: Annotated[int, Opt()] = 1,
    global_batch: Annotated[int | None, Opt()] = None,
    seq_len: Annotated[int, Opt()] = 2048,
    precision: Annotated[str, Opt()] = "bf16",
    method: Annotated[str, Opt()] = "full",
    stack: Annotated[str, Opt(help="Software stack of the measured run")] = "generic",
    inter_node_gbps: Annotated[float | None, Opt(help="Network per node of the measured run, "
                                                 "Gbit/s (default: the GPU class's)")] = None,
    json_out: JsonOpt = False,
    gpus: Annotated[int | None, Opt("--gpus", hidden=True)] = None,
    zero: Annotated[int | None, Opt("--zero", hidden=True)] = None,
    checkpointing: Annotated[str | None, Opt("--checkpointing", hidden=True)] = None,
) -> None:
    """Fit the compute efficiency of a GPU type to one measured run and store it for later
    estimates and plans (file: $CCOPT_CALIBRATION or ~/.config/ccopt/calibration.json)."""
    with user_errors():
        if from_file is not None:
            point = read_point_file(from_file)
            model = model or point["model"]
            if gpu is None and point["device"] == "cpu":
                raise ConfigError(f"--gpu: {from_file} was measured on the CPU ({point.get('note')}); "
                                  "give --gpu to say which catalog GPU type the run stands for")
            gpu = gpu or point.get("gpu")
            precision, micro_batch = point["precision"], int(point["micro_batch"])
            if point.get("model_kind") == "lm":
                tokens_per_s, seq_len = float(point["tokens_per_s"]), int(point["seq_len"])
                global_batch = micro_batch
            else:
                samples_per_s = float(point["samples_per_s"])
                peak_memory_gib = point.get("peak_memory_gib")
                memory_metric = point.get("memory_metric") or "allocated"
                optimizer = point.get("optimizer", optimizer)
        if model is None or gpu is None:
            raise ConfigError("give --model and --gpu (or --from a `ccopt measure` file)")
        if samples_per_s is not None or _is_profile_name(model):
            _calibrate_profile(model, gpu, samples_per_s, peak_memory_gib, memory_metric,
                               optimizer, precision, micro_batch, num_gpus or gpus or 1,
                               activation_checkpointing or checkpointing or "none",
                               from_file, json_out)
            return
        if (tokens_per_s is None) == (step_time_s is None):
            raise ConfigError("give exactly one of --tokens-per-s or --step-time-s")
        check_number(tokens_per_s, "--tokens-per-s", gt=0, le=1e12)
        check_number(step_time_s, "--step-time-s", gt=0, le=1e6)
        num_gpus = renamed_flag(num_gpus, gpus, "--num-gpus", "--gpus", 1)
        zero_stage = renamed_flag(zero_stage, zero, "--zero-stage", "--zero", 0)
        ckpt = renamed_flag(activation_checkpointing, checkpointing, "--activation-checkpointing",
                            "--checkpointing", "none")
        uncalibrated = replace(base_assumptions(), efficiency=None, calibrated={})
        shape = dict(num_gpus=num_gpus, gpus_per_node=gpus_per_node, tp=tp, pp=pp,
                     zero_stage=zero_stage, activation_checkpointing=ckpt,
                     micro_batch=micro_batch, global_batch=global_batch, seq_len=seq_len,
                     precision=precision, method=method, stack=stack,
                     inter_node_gbps=inter_node_gbps)
        probe = run(model, gpu, assumptions=uncalibrated, **shape)
        if probe.get("step") is None:
            raise ConfigError(f"--precision: {probe.get('note')}")
        spec, g = resolve_model(model), get_gpu(gpu, "--gpu")
        lay = probe["layout"]
        layout = Layout(dp=lay["dp"], tp=tp, pp=pp, zero_stage=zero_stage, checkpointing=ckpt,
                        micro_batch=micro_batch, grad_accum=lay["grad_accum"])
        setup = TrainingSetup(seq_len=seq_len, precision=precision, method=method, stack=stack)
        cluster = Cluster(g, probe["gpus_per_node"], num_gpus // probe["gpus_per_node"],
                          probe["inter_node_gbps"])
        measured = step_time_s or layout.global_batch * seq_len / float(tokens_per_s or 1)
        eff = fit_efficiency(spec, setup, layout, cluster, measured, uncalibrated)
        if not MIN_EFFICIENCY <= eff <= 1:  # never store what the check would refuse
            raise ConfigError(f"calibrate: the fit gave efficiency {eff!r}; allowed: "
                              f"{EFFICIENCY_RANGE}; check the measurement and the layout")
        path = save_calibration(g.gpu_id, precision, eff, {
            "model": spec.name, "gpus": num_gpus, "layout": lay, "seq_len": seq_len,
            "stack": stack, "step_time_s": measured,
            "tokens_per_s": layout.global_batch * seq_len / measured})
        after = run(model, gpu, **shape)  # what estimate and plan now report for this run
    out = emit(CalibrateOutput, {
        "gpu": g.gpu_id, "precision": precision, "efficiency": round(eff, 6),
        "effective_efficiency": after["efficiency"],
        "default_prediction_step_s": probe["step"]["time_s"],
        "calibrated_prediction_step_s": after["step"]["time_s"], "measured_step_s": measured,
        "file": str(path)})
    if json_out:
        print_json(out)
    else:
        console().print(
            f"{g.gpu_id} {precision}: base efficiency {eff:.4f} stored in {path}; estimate and "
            f"plan now predict {after['step']['time_s']:.3f} s/step for this run (measured "
            f"{measured:.3f} s, default model {probe['step']['time_s']:.3f} s) at an effective "
            f"efficiency of {after['efficiency']:.3f} (the base × this layout's size factor)")


def _is_profile_name(model: str) -> bool:
    return model.strip().lower() in PROFILE_PRESETS


def _calibrate_profile(model: str, gpu: str, samples_per_s: float | None,
                       peak_memory_gib: float | None, memory_metric: str, optimizer: str,
                       precision: str, micro_batch: int, num_gpus: int, checkpointing: str,
                       source: str | None, json_out: bool) -> None:
    """Store a measured run of a per-sample model; print the prediction before and after."""
    if samples_per_s is None:
        raise ConfigError(f"--samples-per-s: {model} is a per-sample model; give the measured "
                          "samples/s of the run")
    check_number(samples_per_s, "--samples-per-s", gt=0, le=1e12)
    check_number(peak_memory_gib, "--peak-memory-gib", gt=0, le=1e5)
    check_number(micro_batch, "--micro-batch", gt=0, le=2**20)
    name = model.strip().lower() if _is_profile_name(model) else model
    point = MeasuredPoint(gpu_id=gpu, precision=precision, micro_batch=micro_batch,
                          samples_per_s=samples_per_s, num_gpus=num_gpus,
                          peak_memory_gib=peak_memory_gib, memory_metric=memory_metric,
                          checkpointing=checkpointing, optimizer=optimizer,
                          source=f"ccopt calibrate{' --from ' + source if source else ''}")
    out = emit(CalibrateOutput, dict(calibrate_profile(name, point), kind="profile_point"))
    if json_out:
        print_json(out)
        return
    words = f"{name} on {out['gpu']} {precision}: run stored in {out['file']}"
    before, after = out.get("before"), out.get("after")
    if before and after:
        words += (f"; predicted {before['samples_per_s']:,.1f} samples/s before (band "
                  f"{before['band'][0]:g}-{before['band'][1]:g}×), {after['samples_per_s']:,.1f} "
                  f"now (band {after['band'][0]:g}-{after['band'][1]:g}×); measured "
                  f"{samples_per_s:,.1f}")
    console().print(words)


def register(app: typer.Typer) -> None:
    app.command("estimate")(estimate)
    app.command("calibrate")(calibrate)
