"""Calibration of per-sample models: store a measured run (samples/s over its GPUs) and report
the prediction and band before and after."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optimizer.configuration.build import (
    DEFAULT_TRAIN_PRECISION,
    check_seq_len,
    request_offering,
    resolve_model,
)
from optimizer.errors import ConfigError
from optimizer.inputs.calibration_file import check_memory, check_speed
from optimizer.inputs.gpus import get_gpu
from optimizer.inputs.models import load_model
from optimizer.inputs.profile_store import save_profile_point
from optimizer.inputs.request import ConfigRequest
from optimizer.inputs.validation import check_number
from optimizer.model.presets import PROFILE_PRESETS
from optimizer.model.profile import MeasuredPoint, is_profile
from optimizer.model.profile_time import predicted_samples_per_s, profile_interval
from optimizer.model.setup import PerfAssumptions, TrainingSetup
from optimizer.report.contract.calibration import CalibrateOutput
from optimizer.report.contract.common import emit

__all__ = ["calibrate_profile", "calibrate_profile_request", "is_profile_name"]


def is_profile_name(model: object) -> bool:
    """Whether `model` names a per-sample preset (resnet50, ...): calibrated by samples/s."""
    return isinstance(model, str) and model.strip().lower() in PROFILE_PRESETS


def _prediction(name: str, point: MeasuredPoint) -> dict[str, Any] | None:
    """Samples/s and (P10, P90) on the point's GPU at its micro-batch, or None when the model
    is no preset (an inline [model.profile]) or cannot be planned yet."""
    if name not in PROFILE_PRESETS:
        return None
    try:
        model = load_model(name)
    except ConfigError:
        return None
    assert is_profile(model)
    gpu = get_gpu(point.gpu_id)
    setup = TrainingSetup(seq_len=1, precision=point.precision, optimizer=point.optimizer)
    a = PerfAssumptions()
    return {
        "samples_per_s": round(predicted_samples_per_s(model, setup, gpu, point.micro_batch, a), 4),
        "band": list(profile_interval(model, gpu, a, point.precision)),
    }


def calibrate_profile(name: str, point: MeasuredPoint, force: bool = False) -> dict[str, Any]:
    """Store `point` for model `name` in the calibration store; what the model predicted on that
    GPU before and predicts after (samples/s of one GPU, P10-P90 band; the measured run is
    also given per GPU, `samples_per_s_per_gpu`, to compare on the same basis). Raises
    ConfigError for an unknown GPU, a run wildly faster or slower than predicted (unless
    `force`: calibration_file.check_speed) or a run the store refuses."""
    gpu = get_gpu(point.gpu_id, "--gpu")
    if not gpu.supports(point.precision):
        raise ConfigError(f"--precision: {gpu.gpu_id} has no {point.precision} tensor path")
    point = MeasuredPoint(**{**point.__dict__, "gpu_id": gpu.gpu_id, "gpu": None})
    before = _prediction(name, point)
    if before is not None:  # one GPU's step of one sample, predicted and measured
        check_speed(point.num_gpus / point.samples_per_s, 1 / before["samples_per_s"], force)
    path = save_profile_point(name, point)
    after = _prediction(name, point)
    return {
        "model": name,
        "gpu": gpu.gpu_id,
        "precision": point.precision,
        "samples_per_s": point.samples_per_s,
        "num_gpus": point.num_gpus,
        "samples_per_s_per_gpu": round(point.samples_per_s / point.num_gpus, 4),
        "micro_batch": point.micro_batch,
        "before": before,
        "after": after,
        "file": str(path),
    }


def calibrate_profile_request(
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
    request_offering(req, prices, offline)  # --instance's GPU must be --gpu
    if samples_per_s is None:
        raise ConfigError(
            f"--samples-per-s: {model} is a per-sample model; give the measured samples/s of the run"
        )
    check_number(samples_per_s, "--samples-per-s", gt=0, le=1e12)
    check_number(peak_memory_gib, "--peak-memory-gib", gt=0, le=1e5)
    check_memory(peak_memory_gib, gpu)
    name = model.strip().lower() if is_profile_name(model) else model
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
