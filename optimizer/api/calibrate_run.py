"""`ccopt calibrate`: fit a GPU type's base compute efficiency to one measured run of a
configuration request — the same request `estimate` takes, built by the same builder
(api/configuration.py), so the fit is of exactly the configuration estimate then reports — or
store a per-sample model's run. The store records the measured run's whole request."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from optimizer.api.calibrate import calibrate_profile, read_point_file
from optimizer.api.calibrate_comm import refit_fabric
from optimizer.api.calibrate_memory import MemoryPoint, check_memory_point, store_memory_point
from optimizer.api.calibration_points import group_runs, scope_sentence, step_split
from optimizer.api.configuration import (
    DEFAULT_TRAIN_PRECISION,
    Built,
    build_configuration,
    check_seq_len,
    instance_offering,
    resolve_model,
)
from optimizer.api.estimate_run import evaluate
from optimizer.errors import ConfigError
from optimizer.inputs.calibration import base_assumptions, fit_efficiency
from optimizer.inputs.calibration_file import (
    DEFAULT_MEMORY_KIND,
    EFFICIENCY_RANGE,
    MIN_EFFICIENCY,
    calibration_path,
    check_achieved,
    check_memory,
    check_speed,
    memory_kind,
)
from optimizer.inputs.calibration_store import add_point
from optimizer.inputs.gpus import get_gpu
from optimizer.inputs.request import ConfigRequest, request_from_options
from optimizer.inputs.validation import check_number
from optimizer.model.calibrated import CalibratedCurve
from optimizer.model.presets import PROFILE_PRESETS
from optimizer.model.profile import MeasuredPoint
from optimizer.model.step_time import microbatch_size_factor
from optimizer.report.contract.calibration import CalibrateOutput
from optimizer.report.contract.common import emit

__all__ = ["calibrate_run", "point_request", "calibrate_request"]

#: the longest measured step calibrate takes, seconds (--step-time-s, or implied by --tokens-per-s)
MAX_STEP_S = 1e6
#: the request fields a `ccopt measure` point fixes (what was run), over the flags given
_POINT_FIELDS = ("precision", "micro_batch", "seq_len", "global_batch")


def point_request(point: Mapping[str, Any]) -> dict[str, Any]:
    """The request fields of a calibration point written by `ccopt measure`: its model, GPU,
    precision, optimizer and batch (an LM step is one micro-batch of seq_len tokens)."""
    out: dict[str, Any] = {
        "model": point["model"],
        "gpu": point.get("gpu"),
        "precision": point["precision"],
        "micro_batch": int(point["micro_batch"]),
        "optimizer": point.get("optimizer"),
    }
    if point.get("model_kind") == "lm":
        out.update(seq_len=int(point["seq_len"]), global_batch=int(point["micro_batch"]))
    return out


def _is_profile_name(model: Any) -> bool:
    return isinstance(model, str) and model.strip().lower() in PROFILE_PRESETS


def calibrate_run(
    options: Mapping[str, Any],
    *,
    tokens_per_s: float | None = None,
    step_time_s: float | None = None,
    samples_per_s: float | None = None,
    peak_memory_gib: float | None = None,
    memory_metric: str | None = None,
    from_file: str | Path | None = None,
    force: bool = False,
    prices: str | Path | None = None,
    offline: bool | None = None,
) -> dict[str, Any]:
    """`ccopt calibrate` from its options: the request fields by name (None: not given; old
    names warn once), the measurement, or a `ccopt measure` point file; `force` stores a run
    the plausibility checks refuse (calibration_file thresholds). Returns the
    `ccopt calibrate --json` contract.

    Raises:
        ConfigError: bad input (names the flag and the allowed values), or a fit outside
            the stored range.
    """
    values = dict(options)
    kind_source = "default" if memory_metric is None else "given"
    if from_file is not None:
        point = read_point_file(from_file)
        if values.get("gpu") is None and values.get("instance") is None and point["device"] == "cpu":
            raise ConfigError(
                f"--gpu: {from_file} was measured on the CPU ({point.get('note')}); "
                "give --gpu to say which catalog GPU type the run stands for"
            )
        fields = point_request(point)
        values["model"] = values.get("model") or fields["model"]
        values["gpu"] = values.get("gpu") or fields["gpu"]
        values.update({k: fields[k] for k in _POINT_FIELDS if k in fields})  # what was run
        if point.get("model_kind") == "lm":
            tokens_per_s = float(point["tokens_per_s"])
        else:
            samples_per_s = float(point["samples_per_s"])
            values["optimizer"] = fields["optimizer"] or values.get("optimizer")
        if point.get("peak_memory_gib") is not None:  # measured on a GPU: the file says its kind
            peak_memory_gib = float(point["peak_memory_gib"])
            memory_metric, kind_source = point.get("memory_metric") or "allocated", "file"
    if values.get("gpu") is None and values.get("instance"):
        values["gpu"] = instance_offering(values["instance"], prices, offline).gpu_id
    if values.get("model") is None or values.get("gpu") is None:
        raise ConfigError("give --model and --gpu or --instance (or --from a `ccopt measure` file)")
    req = request_from_options(values)
    kind = memory_kind(memory_metric)
    if samples_per_s is not None or _is_profile_name(req.model):
        profile_kind = "device" if kind == "nvidia-smi" else kind  # MeasuredPoint's names
        return _calibrate_profile(
            req, samples_per_s, peak_memory_gib, profile_kind, from_file, force, prices, offline
        )
    return calibrate_request(
        req,
        tokens_per_s=tokens_per_s,
        step_time_s=step_time_s,
        peak_memory_gib=peak_memory_gib,
        memory_kind=kind,
        memory_kind_source=kind_source,
        force=force,
        prices=prices,
        offline=offline,
    )


def calibrate_request(
    req: ConfigRequest,
    *,
    tokens_per_s: float | None = None,
    step_time_s: float | None = None,
    peak_memory_gib: float | None = None,
    memory_kind: str = DEFAULT_MEMORY_KIND,
    memory_kind_source: str = "default",
    force: bool = False,
    prices: str | Path | None = None,
    offline: bool | None = None,
) -> dict[str, Any]:
    """Fit the base efficiency of the request's GPU type × precision × stack to its measured
    step time (or tokens/s over all GPUs), store the run with the request, refit the curve of
    every stored run of that GPU × precision × stack (model.calibrated), and return what
    estimate predicted before and predicts now, the scope and the runs re-predicted (the
    `ccopt calibrate --json` contract). A measured peak memory (`memory_kind`: allocated,
    reserved or nvidia-smi) also stores the activation factor of the model × stack
    (api/calibrate_memory.py); with a peak alone only that is stored (kind "memory").

    Raises:
        ConfigError: bad input; a run wildly outside the model's band (calibration_file's
            thresholds: faster or slower than predicted, above the plausible efficiency, more
            memory than the card; `force` stores the first three); a store that cannot be
            written (it is unchanged).
    """
    if tokens_per_s is not None and step_time_s is not None:
        raise ConfigError("give one of --tokens-per-s or --step-time-s, not both")
    if tokens_per_s is None and step_time_s is None and peak_memory_gib is None:
        raise ConfigError("give --tokens-per-s or --step-time-s, and/or --peak-memory-gib (a measured peak)")
    check_number(tokens_per_s, "--tokens-per-s", gt=0, le=1e12)
    check_number(step_time_s, "--step-time-s", gt=0, le=MAX_STEP_S)
    check_number(peak_memory_gib, "--peak-memory-gib", gt=0, le=1e5)
    built = build_configuration(req, prices, offline)
    setup, layout = built.setup, built.layout
    if setup is None or layout is None:
        raise ConfigError("--mode: a calibration is of a training run; allowed: train")
    stored = base_assumptions()
    uncalibrated = replace(stored, efficiency=None, calibrated={}, calibrated_curves={}, calibrated_comm={})
    probe = evaluate(built, uncalibrated)
    # the peak is checked before anything is stored: a refused peak stores no run either
    memory = (
        check_memory_point(built, peak_memory_gib, memory_kind, memory_kind_source, force, stored)
        if peak_memory_gib is not None
        else None
    )
    if tokens_per_s is None and step_time_s is None:
        assert memory is not None
        return _memory_only(built, req, memory, probe)
    if probe.get("step") is None:
        raise ConfigError(f"--precision: {probe.get('note')}")
    tokens_per_step = layout.global_batch * built.seq_len
    measured = step_time_s or tokens_per_step / float(tokens_per_s or 1)
    if not measured <= MAX_STEP_S:  # a tiny --tokens-per-s: a step of days (or inf)
        raise ConfigError(
            f"--tokens-per-s: {tokens_per_s!r} means {measured:.3g} s per step of {tokens_per_step} "
            f"tokens; allowed: a step of at most {MAX_STEP_S:g} s (tokens/s of the whole run)"
        )
    check_speed(measured, probe["step"]["time_s"], force)
    eff = fit_efficiency(built.spec, setup, layout, built.cluster, measured, uncalibrated)
    if not MIN_EFFICIENCY <= eff <= 1:  # never store what the check would refuse
        raise ConfigError(
            f"calibrate: the fit gave efficiency {eff!r}; allowed: "
            f"{EFFICIENCY_RANGE}; check the measurement and the layout"
        )
    size = microbatch_size_factor(built.spec, setup, layout, uncalibrated)
    check_achieved(eff * size, force)
    key = (built.gpu.gpu_id, built.precision, setup.stack)
    previous = evaluate(built, stored) if key in stored.calibrated_curves else None
    point, replaced = add_point(
        {
            "gpu": key[0],
            "precision": key[1],
            "stack": key[2],
            "efficiency": eff,
            "size_factor": size,
            "split": step_split(
                built.spec, setup, layout, built.cluster, replace(uncalibrated, efficiency=eff)
            ),
            "fabric": {
                "gpus_per_node": built.cluster.gpus_per_node,
                "inter_node_gbps": built.cluster.inter_node_gbps,
            },
            "measured": {
                "model": built.spec.name,
                "num_gpus": built.num_gpus,
                "layout": probe["layout"],
                "seq_len": built.seq_len,
                "stack": built.stack,
                "step_time_s": measured,
                "tokens_per_s": tokens_per_step / measured,
                **({"peak_memory_gib": peak_memory_gib} if peak_memory_gib is not None else {}),
                "request": {**req.recorded(), "precision": built.precision},
            },
        }
    )
    refit_fabric(point, uncalibrated, prices, offline)  # its fabric's communication (api.calibrate_comm)
    memory_out = store_memory_point(built, req, memory, probe["layout"]) if memory is not None else None
    now = base_assumptions()
    after = evaluate(built, now)  # what estimate and plan now report for this run
    curve = now.calibrated_curves[key]
    assert isinstance(curve, CalibratedCurve)  # the store's runs: load_curves
    fit, runs = group_runs(key, curve, now, prices, offline, point)
    before_eff, after_eff = probe["effective_efficiency"], after["effective_efficiency"]
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
    return emit(
        CalibrateOutput,
        {
            "status": "calibrated",
            "gpu": key[0],
            "precision": key[1],
            "stack": key[2],
            "id": point["id"],
            "replaced": replaced,
            "efficiency": round(eff, 6),
            "base_efficiency": round(eff, 6),
            "effective_efficiency": after["effective_efficiency"],
            "efficiency_before": before_eff,
            "efficiency_after": after_eff,
            "efficiency_change_pct": round((after_eff / before_eff - 1) * 100, 2),
            "scope": scope_sentence(*key, curve, key[:2] in now.calibrated, fit),
            "default_prediction_step_s": probe["step"]["time_s"],
            **({"previous_prediction_step_s": previous["step"]["time_s"]} if previous else {}),
            "calibrated_prediction_step_s": after["step"]["time_s"],
            "measured_step_s": measured,
            "measured_tokens_per_s": round(tokens_per_step / measured, 1),
            **({"peak_memory_gib": peak_memory_gib} if peak_memory_gib is not None else {}),
            "gpus": built.num_gpus,
            **hardware,
            "fit": fit,
            "runs": runs,
            **({"memory": memory_out} if memory_out is not None else {}),
            "file": str(calibration_path()),
        },
    )


def _memory_only(
    built: Built, req: ConfigRequest, memory: MemoryPoint, probe: dict[str, Any]
) -> dict[str, Any]:
    """A measured peak alone (no throughput): store the model × stack's activation factor."""
    out = store_memory_point(built, req, memory, probe["layout"])
    return emit(
        CalibrateOutput,
        {
            "status": "calibrated",
            "kind": "memory",
            "gpu": built.gpu.gpu_id,
            "precision": built.precision,
            "stack": out["stack"],
            "model": out["model"],
            "id": out["id"],
            "replaced": out["replaced"],
            "peak_memory_gib": memory.peak_gib,
            "gpus": built.num_gpus,
            "memory": out,
            "file": str(calibration_path()),
        },
    )


def _calibrate_profile(
    req: ConfigRequest,
    samples_per_s: float | None,
    peak_memory_gib: float | None,
    memory_metric: str,
    source: str | Path | None,
    force: bool,
    prices: str | Path | None,
    offline: bool | None,
) -> dict[str, Any]:
    """Store a measured run of a per-sample model (its samples/s over all its GPUs)."""
    model = req.model_name
    if req.seq_len is not None:
        check_seq_len(resolve_model(model), req.seq_len)
    gpu = get_gpu(str(req.gpu), "--gpu")
    if req.instance is not None:
        offering = instance_offering(req.instance, prices, offline)
        if gpu.gpu_id != offering.gpu_id:
            raise ConfigError(f"--gpu: {req.gpu} differs from the GPUs of {req.instance} ({offering.gpu_id})")
    if samples_per_s is None:
        raise ConfigError(
            f"--samples-per-s: {model} is a per-sample model; give the measured samples/s of the run"
        )
    check_number(samples_per_s, "--samples-per-s", gt=0, le=1e12)
    check_number(peak_memory_gib, "--peak-memory-gib", gt=0, le=1e5)
    check_memory(peak_memory_gib, gpu)
    name = model.strip().lower() if _is_profile_name(model) else model
    point = MeasuredPoint(
        gpu_id=str(req.gpu),
        precision=req.precision or DEFAULT_TRAIN_PRECISION,
        micro_batch=req.micro_batch,
        samples_per_s=samples_per_s,
        num_gpus=req.num_gpus or 1,
        peak_memory_gib=peak_memory_gib,
        memory_metric=memory_metric,
        checkpointing=req.activation_checkpointing,
        optimizer=req.optimizer,
        source=f"ccopt calibrate{' --from ' + str(source) if source else ''}",
    )
    return emit(
        CalibrateOutput,
        dict(calibrate_profile(name, point, force), kind="profile_point", status="calibrated"),
    )
