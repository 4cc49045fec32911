"""`ccopt estimate` (memory and speed of one configuration), and the options it shares with
`ccopt calibrate` (cli/calibrate_cmd.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from typer._click.core import ParameterSource  # typer vendors click: its own enum

from optimizer.api import estimate as run
from optimizer.api.estimate import (
    method_of_kind,
)
from optimizer.api.plan_row import plan_row_settings, read_plan_file
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
from optimizer.inputs.calibration import base_assumptions
from optimizer.inputs.calibration_file import (
    MIN_EFFICIENCY,
)
from optimizer.inputs.validation import check_number

__all__ = ["register", "training_method"]

Opt = typer.Option

#: help of the options estimate and calibrate share (one definition each)
_SEQUENCES = "sequences (samples for per-sample models)"
_TRAIN_PRECISION = "fp32 | bf16 | fp16 | fp8 (default bf16)"
_SERVE_PRECISION = "fp16 | bf16 | fp8 | int8 | int4 (default: a serving job file's, fp16)"
InstanceOpt = Annotated[
    str | None,
    Opt(
        "--instance",
        help="PROVIDER:INSTANCE from the catalog "
        "(e.g. aws:p5.48xlarge): its GPU, GPUs per instance, "
        "links and network, as the planner uses them",
    ),
]
GpusPerInstanceOpt = Annotated[
    int | None,
    Opt(
        "--gpus-per-instance", help="GPUs per instance (node); default: the instance's, else min(num-gpus, 8)"
    ),
]
TpOpt = Annotated[int, Opt("--tp", help="Tensor-parallel degree")]
PpOpt = Annotated[int, Opt("--pp", help="Pipeline-parallel degree")]
ZeroStageOpt = Annotated[int | None, Opt("--zero-stage", help="ZeRO stage 0-3 (3 = FSDP; default 0)")]
CheckpointingOpt = Annotated[
    str | None, Opt("--activation-checkpointing", help="none | selective | full (default none)")
]
MicroBatchOpt = Annotated[int, Opt("--micro-batch", help=f"{_SEQUENCES.capitalize()} per GPU per micro-step")]
GlobalBatchOpt = Annotated[
    int | None,
    Opt(
        "--global-batch",
        help=f"{_SEQUENCES.capitalize()} "
        "per optimizer step (sets grad accumulation; "
        "default dp × micro-batch)",
    ),
]
SeqLenOpt = Annotated[
    int | None,
    Opt(
        "--seq-len",
        help="Tokens per sequence (default: the "
        "model's sample length; 2048 for LMs); not for "
        "per-sample models",
    ),
]
TrainPrecisionOpt = Annotated[str | None, Opt("--precision", help=_TRAIN_PRECISION)]
PrecisionOpt = Annotated[
    str | None, Opt("--precision", help=f"train: {_TRAIN_PRECISION}; serve (weights): {_SERVE_PRECISION}")
]
KindOpt = Annotated[
    str | None,
    Opt(
        "--kind",
        help="pretrain | finetune (both full training) | "
        "lora | qlora, as workload.kind of a job file (default "
        "pretrain)",
    ),
]
InterNodeOpt = Annotated[
    float | None,
    Opt(
        "--inter-node-gbps",
        help="Network per instance, Gbit/s (default: the instance's, else the GPU class's)",
    ),
]
#: old spellings: hidden, still accepted, warn once
OldGpusOpt = Annotated[int | None, Opt("--gpus", hidden=True)]
OldZeroOpt = Annotated[int | None, Opt("--zero", hidden=True)]
OldCheckpointingOpt = Annotated[str | None, Opt("--checkpointing", hidden=True)]
OldGpusPerNodeOpt = Annotated[int | None, Opt("--gpus-per-node", hidden=True)]
OldMethodOpt = Annotated[str | None, Opt("--method", hidden=True)]


def training_method(kind: str | None, method: str | None) -> str:
    """The training method from --kind (job-file vocabulary) or its old flag --method (full |
    lora | qlora; warns once); both given and meaning different methods: bad input."""
    new = None if kind is None else method_of_kind(kind)
    old = None if method is None else method.strip().lower()
    return renamed_flag(new, old, "--kind", "--method", "full", new_text=kind)


#: options that may go with --from-plan (the plan's row sets everything else)
_WITH_FROM_PLAN = {"from_plan", "row", "prices", "offline", "json_out", "efficiency", "model"}


def estimate(
    ctx: typer.Context,
    model: Annotated[
        str | None,
        Opt(
            "--model",
            "-m",
            help="Preset name or path of a HF "
            "config.json (with --from-plan: only for a job whose model "
            "is an inline shape)",
        ),
    ] = None,
    from_plan: Annotated[
        Path | None,
        Opt(
            "--from-plan",
            help="A saved `ccopt plan --json`: "
            "estimate its row's own configuration (model, "
            "instance, layout, workload) instead of giving flags",
        ),
    ] = None,
    row: Annotated[int, Opt("--row", help="With --from-plan: 0 the plan, k its k-th alternative")] = 0,
    gpu: Annotated[
        str | None,
        Opt("--gpu", "-g", help="GPU id or alias (A100-80GB, h100, 4090, ...); not needed with --instance"),
    ] = None,
    instance: InstanceOpt = None,
    num_gpus: Annotated[int | None, Opt(help="Total GPUs (default: one instance, or 1)")] = None,
    gpus_per_instance: GpusPerInstanceOpt = None,
    tp: TpOpt = 1,
    pp: PpOpt = 1,
    context_parallel: Annotated[
        int, Opt(help="Context-parallel degree (sequence split, ring attention)")
    ] = 1,
    virtual_stages: Annotated[int, Opt(help="Virtual pipeline stages per GPU (interleaved 1F1B)")] = 1,
    zero_stage: ZeroStageOpt = None,
    activation_checkpointing: CheckpointingOpt = None,
    sequence_parallel: Annotated[
        bool | None,
        Opt(
            "--sequence-parallel/--no-sequence-parallel",
            help="Megatron SP with tp > 1 (default: the stack's)",
        ),
    ] = None,
    micro_batch: MicroBatchOpt = 1,
    global_batch: GlobalBatchOpt = None,
    seq_len: SeqLenOpt = None,
    precision: PrecisionOpt = None,
    optimizer: Annotated[str, Opt(help="adamw | adam-8bit | sgd | adafactor")] = "adamw",
    kind: KindOpt = None,
    lora_rank: Annotated[int, Opt(help="LoRA rank")] = 16,
    attention: Annotated[str | None, Opt(help="flash | eager (default: the stack's)")] = None,
    stack: Annotated[str, Opt(help="Software stack profile (ccopt stacks)")] = "generic",
    inter_node_gbps: InterNodeOpt = None,
    offload_optimizer: Annotated[bool, Opt(help="ZeRO-Offload optimizer state to CPU")] = False,
    offload_params: Annotated[bool, Opt(help="ZeRO-Infinity: parameters in CPU (zero 3)")] = False,
    lora_targets: Annotated[
        str | None, Opt(help="LoRA modules, comma-separated: q,k,v,o,gate,up,down (default all)")
    ] = None,
    efficiency: Annotated[
        float | None,
        Opt(
            help=f"Override the base compute efficiency: "
            f"{MIN_EFFICIENCY:g}–1 (default: calibrated, else "
            "the GPU type's)"
        ),
    ] = None,
    mode: Annotated[str, Opt(help="train | serve")] = "train",
    batch: Annotated[
        str, Opt(help="serve: concurrent sequences per replica, or max (the largest that fits)")
    ] = "1",
    prompt_tokens: Annotated[int | None, Opt(help="serve: prompt tokens per request (default 1024)")] = None,
    output_tokens: Annotated[int, Opt(help="serve: output tokens per request")] = 256,
    context: Annotated[
        int | None, Opt(help="serve: KV tokens per sequence (default prompt + output)")
    ] = None,
    kv_cache_precision: Annotated[str, Opt(help="serve: fp16 | bf16 | fp8 | int8")] = "fp16",
    prices: PricesOpt = None,
    offline: OfflineOpt = False,
    json_out: JsonOpt = False,
    gpus: OldGpusOpt = None,
    zero: OldZeroOpt = None,
    checkpointing: OldCheckpointingOpt = None,
    quantization: Annotated[str | None, Opt("--quantization", hidden=True)] = None,
    gpus_per_node: OldGpusPerNodeOpt = None,
    method: OldMethodOpt = None,
) -> None:
    """Memory per GPU and step time (or serving speed) of one fixed configuration."""
    with user_errors():
        a = base_assumptions()
        if efficiency is not None:
            check_number(efficiency, "--efficiency", ge=MIN_EFFICIENCY, le=1)
            a = replace(a, efficiency=efficiency)
        if from_plan is not None:
            given = sorted(
                name
                for name in ctx.params
                if name not in _WITH_FROM_PLAN
                and ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE
            )
            if given:
                raise ConfigError(
                    f"--from-plan sets the configuration from the plan's row; "
                    f"leave out --{given[0].replace('_', '-')}"
                )
            settings = plan_row_settings(read_plan_file(from_plan), row, model)
            result = run(**settings, prices=prices, offline=True if offline else None, assumptions=a)
        elif ctx.get_parameter_source("row") == ParameterSource.COMMANDLINE:
            raise ConfigError("--row picks a row of --from-plan; give --from-plan PLAN.json too")
        elif model is None:
            raise ConfigError(
                "--model is required (a preset or a config.json), or give --from-plan PLAN.json"
            )
        else:
            result = run(
                model,
                gpu,
                num_gpus=num_gpus,
                gpus_per_instance=gpus_per_instance,
                instance=instance,
                prices=prices,
                offline=True if offline else None,
                tp=tp,
                pp=pp,
                context_parallel=context_parallel,
                virtual_stages=virtual_stages,
                zero_stage=zero_stage,
                activation_checkpointing=activation_checkpointing,
                sequence_parallel=sequence_parallel,
                micro_batch=micro_batch,
                global_batch=global_batch,
                seq_len=seq_len,
                precision=precision,
                optimizer=optimizer,
                method=training_method(kind, method),
                lora_rank=lora_rank,
                attention=attention,
                stack=stack,
                inter_node_gbps=inter_node_gbps,
                mode=mode,
                batch=_batch(batch),
                context=context,
                prompt_tokens=prompt_tokens,
                output_tokens=output_tokens,
                kv_cache_precision=kv_cache_precision,
                assumptions=a,
                offload_optimizer=offload_optimizer,
                offload_params=offload_params,
                lora_targets=tuple(t.strip() for t in lora_targets.split(",") if t.strip())
                if lora_targets
                else None,
                gpus=gpus,
                zero=zero,
                checkpointing=checkpointing,
                quantization=quantization,
                gpus_per_node=gpus_per_node,
            )
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
        raise ConfigError(f"--batch: {value!r} is not allowed; allowed: an integer > 0 or max") from None


def _render(r: dict[str, Any]) -> None:

    c = console()
    mem = r["memory_gib"]
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
        base = f" (base {r['base_efficiency']:.3f} × size factor)" if r.get("base_efficiency") else ""
        flops = (
            (
                f"MFU {r['mfu']:.1%}, HFU {r['hfu']:.1%}; effective compute efficiency "
                f"{r['efficiency']:.3f}{base}"
            )
            if r["mfu"]
            else "MFU unknown (no FLOPs source)"
        )
        cal = (
            ("scaled to a measured run" if r.get("band_source") else "calibrated")
            if r.get("calibrated")
            else "default, uncalibrated"
        )
        c.print(
            f"step {s['time_s']:.3f} s = compute {s['compute_s']:.3f} + communication "
            f"{s['communication_s']:.3f} + bubble {s['bubble_s']:.3f}; "
            f"{rate:,.{1 if r.get('sample_unit') else 0}f} {unit}/s "
            f"({per_gpu:,.{1 if r.get('sample_unit') else 0}f} per GPU), {flops} ({cal})"
        )
        if r.get("step_time_s_p10") is not None:
            source = (
                ("the profile's band: measured GPU type, its generation, or across generations")
                if r.get("band_source")
                else "cross-validated residuals of this stack and GPU class"
            )
            c.print(
                f"P10–P90 of the step time: {r['step_time_s_p10']:.3f}–"
                f"{r['step_time_s_p90']:.3f} s ({source})"
            )
    elif r["mode"] == "serve":
        c.print(
            f"TTFT {r['ttft_s'] * 1e3:.4g} ms, TPOT {r['tpot_ms']:.2f} ms, "
            f"{r['output_tokens_per_s']:,.0f} output tokens/s, {r['requests_per_s']:.2f} "
            f"requests/s ({r['requests_per_s_per_replica']:.2f} per replica; "
            f"{r['bound']}-bound decode)"
        )


def register(app: typer.Typer) -> None:
    app.command("estimate")(estimate)
