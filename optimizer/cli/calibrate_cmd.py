"""`ccopt calibrate`: fit a GPU type's compute efficiency to one measured run (or store a
per-sample model's run), with estimate's options and hardware resolver (--instance)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from optimizer.api import estimate as run
from optimizer.api import resolve_model
from optimizer.api.calibrate import calibrate_profile, read_point_file
from optimizer.api.estimate import DEFAULT_TRAIN_PRECISION, check_seq_len, instance_offering
from optimizer.cli.common import (
    JsonOpt,
    OfflineOpt,
    PricesOpt,
    console,
    print_json,
    renamed_flag,
    user_errors,
)
from optimizer.cli.estimate_cmd import (
    CheckpointingOpt,
    GlobalBatchOpt,
    GpusPerInstanceOpt,
    InstanceOpt,
    InterNodeOpt,
    KindOpt,
    MicroBatchOpt,
    OldCheckpointingOpt,
    OldGpusOpt,
    OldGpusPerNodeOpt,
    OldMethodOpt,
    OldZeroOpt,
    PpOpt,
    SeqLenOpt,
    TpOpt,
    TrainPrecisionOpt,
    ZeroStageOpt,
    training_method,
)
from optimizer.errors import ConfigError
from optimizer.inputs.calibration import base_assumptions, fit_efficiency, save_calibration
from optimizer.inputs.calibration_file import EFFICIENCY_RANGE, MIN_EFFICIENCY
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


def calibrate(
    model: Annotated[
        str | None, Opt("--model", "-m", help="Preset name or HF config.json (default: the --from file's)")
    ] = None,
    gpu: Annotated[
        str | None,
        Opt(
            "--gpu",
            "-g",
            help="GPU id or alias of the measured run (default: the --from file's, or the --instance's)",
        ),
    ] = None,
    instance: InstanceOpt = None,
    tokens_per_s: Annotated[float | None, Opt(help="Measured tokens/s of the whole run")] = None,
    step_time_s: Annotated[float | None, Opt(help="Measured seconds per optimizer step")] = None,
    samples_per_s: Annotated[
        float | None, Opt(help="Per-sample models: measured samples/s of the whole run")
    ] = None,
    peak_memory_gib: Annotated[
        float | None, Opt(help="Per-sample models: measured peak memory per GPU")
    ] = None,
    memory_metric: Annotated[str, Opt(help="allocated | reserved | device (nvidia-smi)")] = "device",
    optimizer: Annotated[str, Opt(help="Per-sample models: optimizer of the run")] = "adamw",
    from_file: Annotated[
        Path | None, Opt("--from", help="A calibration point written by `ccopt measure`")
    ] = None,
    num_gpus: Annotated[
        int | None, Opt(help="GPUs of the measured run (default: one instance, or 1)")
    ] = None,
    gpus_per_instance: GpusPerInstanceOpt = None,
    tp: TpOpt = 1,
    pp: PpOpt = 1,
    zero_stage: ZeroStageOpt = None,
    activation_checkpointing: CheckpointingOpt = None,
    micro_batch: MicroBatchOpt = 1,
    global_batch: GlobalBatchOpt = None,
    seq_len: SeqLenOpt = None,
    precision: TrainPrecisionOpt = None,
    kind: KindOpt = None,
    stack: Annotated[str, Opt(help="Software stack of the measured run")] = "generic",
    inter_node_gbps: InterNodeOpt = None,
    prices: PricesOpt = None,
    offline: OfflineOpt = False,
    json_out: JsonOpt = False,
    gpus: OldGpusOpt = None,
    zero: OldZeroOpt = None,
    checkpointing: OldCheckpointingOpt = None,
    gpus_per_node: OldGpusPerNodeOpt = None,
    method: OldMethodOpt = None,
) -> None:
    """Fit the compute efficiency of a GPU type to one measured run and store it for later
    estimates and plans (file: $CCOPT_CALIBRATION or ~/.config/ccopt/calibration.json)."""
    with user_errors():
        # old spellings first, on every path: they warn once, and a clash is bad input
        num_gpus = renamed_flag(num_gpus, gpus, "--num-gpus", "--gpus", None)
        zero_stage = renamed_flag(zero_stage, zero, "--zero-stage", "--zero", None)
        ckpt = renamed_flag(
            activation_checkpointing, checkpointing, "--activation-checkpointing", "--checkpointing", "none"
        )
        gpn = renamed_flag(gpus_per_instance, gpus_per_node, "--gpus-per-instance", "--gpus-per-node", None)
        method_name = training_method(kind, method)
        offering = instance_offering(instance, prices, True if offline else None) if instance else None
        if from_file is not None:
            point = read_point_file(from_file)
            model = model or point["model"]
            if gpu is None and offering is None and point["device"] == "cpu":
                raise ConfigError(
                    f"--gpu: {from_file} was measured on the CPU ({point.get('note')}); "
                    "give --gpu to say which catalog GPU type the run stands for"
                )
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
        gpu = gpu or (offering.gpu_id if offering else None)
        if model is None or gpu is None:
            raise ConfigError("give --model and --gpu or --instance (or --from a `ccopt measure` file)")
        precision = precision or DEFAULT_TRAIN_PRECISION
        if samples_per_s is not None or _is_profile_name(model):
            if seq_len is not None:
                check_seq_len(resolve_model(model), seq_len)
            if offering is not None and get_gpu(gpu, "--gpu").gpu_id != offering.gpu_id:
                raise ConfigError(f"--gpu: {gpu} differs from the GPUs of {instance} ({offering.gpu_id})")
            _calibrate_profile(
                model,
                gpu,
                samples_per_s,
                peak_memory_gib,
                memory_metric,
                optimizer,
                precision,
                micro_batch,
                num_gpus or 1,
                ckpt,
                str(from_file) if from_file else None,
                json_out,
            )
            return
        if (tokens_per_s is None) == (step_time_s is None):
            raise ConfigError("give exactly one of --tokens-per-s or --step-time-s")
        check_number(tokens_per_s, "--tokens-per-s", gt=0, le=1e12)
        check_number(step_time_s, "--step-time-s", gt=0, le=1e6)
        zero_stage = zero_stage or 0
        uncalibrated = replace(base_assumptions(), efficiency=None, calibrated={})
        shape = dict(
            num_gpus=num_gpus,
            gpus_per_instance=gpn,
            instance=instance,
            prices=prices,
            offline=True if offline else None,
            tp=tp,
            pp=pp,
            zero_stage=zero_stage,
            activation_checkpointing=ckpt,
            micro_batch=micro_batch,
            global_batch=global_batch,
            seq_len=seq_len,
            precision=precision,
            method=method_name,
            stack=stack,
            inter_node_gbps=inter_node_gbps,
        )
        probe = run(model, gpu, assumptions=uncalibrated, **shape)
        if probe.get("step") is None:
            raise ConfigError(f"--precision: {probe.get('note')}")
        spec = resolve_model(model)
        g = offering.gpu if offering else get_gpu(gpu, "--gpu")
        lay, seq, n_gpus, per_instance = (
            probe["layout"],
            probe["seq_len"],
            probe["gpus"],
            probe["gpus_per_instance"],
        )
        layout = Layout(
            dp=lay["dp"],
            tp=tp,
            pp=pp,
            zero_stage=zero_stage,
            checkpointing=ckpt,
            micro_batch=micro_batch,
            grad_accum=lay["grad_accum"],
        )
        setup = TrainingSetup(seq_len=seq, precision=precision, method=method_name, stack=stack)
        cluster = Cluster(g, per_instance, n_gpus // per_instance, probe["inter_node_gbps"])
        measured = step_time_s or layout.global_batch * seq / float(tokens_per_s or 1)
        eff = fit_efficiency(spec, setup, layout, cluster, measured, uncalibrated)
        if not MIN_EFFICIENCY <= eff <= 1:  # never store what the check would refuse
            raise ConfigError(
                f"calibrate: the fit gave efficiency {eff!r}; allowed: "
                f"{EFFICIENCY_RANGE}; check the measurement and the layout"
            )
        path = save_calibration(
            g.gpu_id,
            precision,
            eff,
            {
                "model": spec.name,
                "num_gpus": n_gpus,
                "layout": lay,
                "seq_len": seq,
                "stack": stack,
                "step_time_s": measured,
                "tokens_per_s": layout.global_batch * seq / measured,
            },
        )
        after = run(model, gpu, **shape)  # what estimate and plan now report for this run
    hardware = {
        k: probe.get(k)
        for k in (
            "gpus_per_instance",
            "inter_node_gbps",
            "inter_node_is_default",
            "instance",
            "provider",
            "instance_type",
        )
        if probe.get(k) is not None
    }
    out = emit(
        CalibrateOutput,
        {
            "status": "calibrated",
            "gpu": g.gpu_id,
            "precision": precision,
            "efficiency": round(eff, 6),
            "base_efficiency": round(eff, 6),
            "effective_efficiency": after["effective_efficiency"],
            "default_prediction_step_s": probe["step"]["time_s"],
            "calibrated_prediction_step_s": after["step"]["time_s"],
            "measured_step_s": measured,
            "measured_tokens_per_s": round(layout.global_batch * seq / measured, 1),
            "gpus": n_gpus,
            **hardware,
            "file": str(path),
        },
    )
    if json_out:
        print_json(out)
    else:
        console().print(
            f"{g.gpu_id} {precision}: base efficiency {eff:.4f} (the GPU type × precision, "
            f"before the size factor; JSON base_efficiency) stored in {path}; estimate and "
            f"plan now predict {after['step']['time_s']:.3f} s/step for this run (measured "
            f"{measured:.3f} s, default model {probe['step']['time_s']:.3f} s) at an effective "
            f"efficiency of {after['effective_efficiency']:.3f} (base × this layout's size "
            f"factor; what estimate reports as efficiency and effective_efficiency), "
            f"{probe['inter_node_gbps']:g} Gbit/s between instances"
        )


def _is_profile_name(model: str) -> bool:
    return model.strip().lower() in PROFILE_PRESETS


def _calibrate_profile(
    model: str,
    gpu: str,
    samples_per_s: float | None,
    peak_memory_gib: float | None,
    memory_metric: str,
    optimizer: str,
    precision: str,
    micro_batch: int,
    num_gpus: int,
    checkpointing: str,
    source: str | None,
    json_out: bool,
) -> None:
    """Store a measured run of a per-sample model; print the prediction before and after."""
    if samples_per_s is None:
        raise ConfigError(
            f"--samples-per-s: {model} is a per-sample model; give the measured samples/s of the run"
        )
    check_number(samples_per_s, "--samples-per-s", gt=0, le=1e12)
    check_number(peak_memory_gib, "--peak-memory-gib", gt=0, le=1e5)
    check_number(micro_batch, "--micro-batch", gt=0, le=2**20)
    name = model.strip().lower() if _is_profile_name(model) else model
    point = MeasuredPoint(
        gpu_id=gpu,
        precision=precision,
        micro_batch=micro_batch,
        samples_per_s=samples_per_s,
        num_gpus=num_gpus,
        peak_memory_gib=peak_memory_gib,
        memory_metric=memory_metric,
        checkpointing=checkpointing,
        optimizer=optimizer,
        source=f"ccopt calibrate{' --from ' + source if source else ''}",
    )
    out = emit(
        CalibrateOutput, dict(calibrate_profile(name, point), kind="profile_point", status="calibrated")
    )
    if json_out:
        print_json(out)
        return
    words = f"{name} on {out['gpu']} {precision}: run stored in {out['file']}"
    before, after = out.get("before"), out.get("after")
    if before and after:  # the prediction is of one GPU: the measured run too, per GPU
        words += (
            f"; predicted {before['samples_per_s']:,.1f} samples/s per GPU before (band "
            f"{before['band'][0]:g}-{before['band'][1]:g}×), {after['samples_per_s']:,.1f} "
            f"now (band {after['band'][0]:g}-{after['band'][1]:g}×); measured "
            f"{samples_per_s / num_gpus:,.1f} per GPU ({samples_per_s:,.1f} over "
            f"{num_gpus} GPU{'s' if num_gpus != 1 else ''})"
        )
    console().print(words)


def register(app: typer.Typer) -> None:
    app.command("calibrate")(calibrate)
