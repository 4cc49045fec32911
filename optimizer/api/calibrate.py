"""`calibrate` for per-sample models: store a measured run and report the prediction and band
before and after; and the calibration-point file `ccopt measure` writes (`--from FILE`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optimizer.errors import ConfigError
from optimizer.files import parse_json, read_input_text
from optimizer.inputs.calibration_file import check_speed
from optimizer.inputs.gpus import get_gpu
from optimizer.inputs.models import load_model
from optimizer.inputs.profile_store import save_profile_point
from optimizer.model.presets import PROFILE_PRESETS
from optimizer.model.profile import MeasuredPoint, is_profile
from optimizer.model.profile_time import predicted_samples_per_s, profile_interval
from optimizer.model.setup import PerfAssumptions, TrainingSetup

__all__ = ["calibrate_profile", "read_point_file", "POINT_FILE_KIND"]

#: the "kind" of a calibration-point file written by `ccopt measure`
POINT_FILE_KIND = "ccopt-calibration-point"


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


def read_point_file(path: str | Path) -> dict[str, Any]:
    """A calibration-point file of `ccopt measure` (JSON), checked: kind, model, device and the
    measured numbers. Raises ConfigError naming the file and the field."""
    file = Path(path)
    try:
        data = parse_json(read_input_text(file, "--from:"), f"--from: {file}")
    except ConfigError:
        raise
    except FileNotFoundError:
        raise ConfigError(f"--from: file not found: {file}") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"--from: {file} is not a JSON calibration point ({exc})") from None
    if not isinstance(data, dict) or data.get("kind") != POINT_FILE_KIND:
        raise ConfigError(
            f"--from: {file}: kind must be {POINT_FILE_KIND!r} (a file written by `ccopt measure`)"
        )
    for key in ("model", "device", "precision", "micro_batch", "samples_per_s"):
        if key not in data:
            raise ConfigError(f"--from: {file}: {key} is missing")
    return data
