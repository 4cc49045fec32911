"""User calibration: fit the compute efficiency of a GPU type to one measured run, store it.

The store is a small JSON file ($CCOPT_CALIBRATION, else ~/.config/ccopt/calibration.json)
mapping "GPU_ID/precision" to an efficiency; it is written atomically (temp file + rename).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from optimizer.errors import ConfigError
from optimizer.inputs.calibration_file import (
    EFFICIENCY_RANGE,
    MIN_EFFICIENCY,
    calibration_path,
    check_calibration_store,
)
from optimizer.inputs.gpus import get_gpu
from optimizer.model.hardware import GpuSpec
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.step_time import Cluster, training_step_time

__all__ = [
    "calibration_path",
    "load_calibration",
    "save_calibration",
    "fit_efficiency",
    "assumptions_for_job",
    "base_assumptions",
    "read_store",
    "write_store",
    "calibration_requests",
    "recorded_request",
]


def load_calibration(path: Path | None = None) -> dict[tuple[str, str], float]:
    """{(gpu_id, precision): efficiency}; empty when no file. Raises ConfigError if corrupt or
    out of range (calibration_file.check_calibration_store)."""
    file = path or calibration_path()
    check_calibration_store(file)
    if not file.is_file():
        return {}
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
        return {
            tuple(k.split("/", 1)): float(v["efficiency"])  # type: ignore[misc]
            for k, v in data.get("entries", {}).items()
        }
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"calibration file {file} is corrupt ({exc}); delete or fix it") from None


def save_calibration(
    gpu_id: str, precision: str, efficiency: float, measured: dict[str, Any], path: Path | None = None
) -> Path:
    """Add/replace one entry and write the file atomically."""
    file = path or calibration_path()
    check_calibration_store(file)  # never rewrite a store we could not read back
    if not (math.isfinite(efficiency) and MIN_EFFICIENCY <= efficiency <= 1):
        raise ConfigError(
            f"calibration {gpu_id}/{precision}: efficiency {efficiency!r} is not "
            f"allowed; allowed: {EFFICIENCY_RANGE}"
        )
    data = read_store(file)
    data.setdefault("entries", {})[f"{gpu_id}/{precision}"] = {"efficiency": efficiency, "measured": measured}
    write_store(file, data)
    return file


def recorded_request(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The request of the run a stored efficiency was fitted to (ConfigRequest fields; the
    GPU and precision are the entry's key). Entries stored before the whole request was kept
    give what they recorded: the model, GPUs, layout, sequence length and stack. None when
    the entry records no run."""
    measured = entry.get("measured") if isinstance(entry, dict) else None
    if not isinstance(measured, dict):
        return None
    if isinstance(measured.get("request"), dict):
        return dict(measured["request"])
    if "model" not in measured:
        return None
    lay = measured.get("layout") or {}
    old = {
        "model": measured["model"],
        "num_gpus": measured.get("num_gpus"),
        "tp": lay.get("tp"),
        "pp": lay.get("pp"),
        "context_parallel": lay.get("cp"),
        "virtual_stages": lay.get("vp"),
        "zero_stage": lay.get("zero_stage"),
        "activation_checkpointing": lay.get("activation_checkpointing"),
        "micro_batch": lay.get("micro_batch"),
        "global_batch": (lay["dp"] * lay["micro_batch"] * lay["grad_accum"])
        if {"dp", "micro_batch", "grad_accum"} <= set(lay)
        else None,
        "seq_len": measured.get("seq_len"),
        "stack": measured.get("stack"),
    }
    return {k: v for k, v in old.items() if v is not None}


def calibration_requests(path: Path | None = None) -> dict[tuple[str, str], dict[str, Any] | None]:
    """{(gpu_id, precision): the measured run's request (recorded_request, with the entry's GPU
    and precision when it names none)} of the store."""
    file = path or calibration_path()
    check_calibration_store(file)
    out: dict[tuple[str, str], dict[str, Any] | None] = {}
    for key, entry in read_store(file).get("entries", {}).items():
        gpu, precision = key.split("/", 1)
        request = recorded_request(entry)
        out[(gpu, precision)] = None if request is None else {"gpu": gpu, "precision": precision, **request}
    return out


def read_store(file: Path) -> dict[str, Any]:
    """The store's JSON document ({"entries": {}} when absent). Raises ConfigError if corrupt."""
    if not file.is_file():
        return {"entries": {}}
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except ValueError:
        raise ConfigError(f"calibration file {file} is corrupt; delete or fix it") from None
    return data if isinstance(data, dict) else {"entries": {}}


def write_store(file: Path, data: dict[str, Any]) -> None:
    """Write the store atomically (temp file + fsync + rename)."""
    file.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=".calibration-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, file)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def fit_efficiency(
    model: ModelSpec,
    setup: TrainingSetup,
    layout: Layout,
    cluster: Cluster,
    measured_step_s: float,
    assumptions: PerfAssumptions | None = None,
) -> float:
    """Efficiency e such that the predicted step time equals `measured_step_s` (bisection).

    Step time falls monotonically as efficiency rises, so bisection on e in (0, 1] converges;
    the size factor is kept (e is the base efficiency of the GPU type and precision).
    Raises ConfigError when the measurement is faster than the model allows at e = 1
    (communication alone exceeds it) or slower than at e = 0.001.
    """
    a = assumptions or PerfAssumptions()

    def step(e: float) -> float:
        return training_step_time(model, setup, layout, cluster, replace(a, efficiency=e)).time_s

    lo, hi = 1e-3, 1.0
    if step(hi) > measured_step_s:
        raise ConfigError(
            f"measured step {measured_step_s:.4g} s is faster than the model allows even at 100% "
            f"efficiency ({step(hi):.4g} s): check the layout and the interconnect"
        )
    if step(lo) < measured_step_s:
        raise ConfigError(f"measured step {measured_step_s:.4g} s implies < 0.1% efficiency")
    for _ in range(200):
        mid = (lo + hi) / 2
        if step(mid) > measured_step_s:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return (lo + hi) / 2


def base_assumptions(overrides: Any = None) -> PerfAssumptions:
    """Defaults + stored calibration (+ overrides from a job's [assumptions])."""
    a = PerfAssumptions(calibrated=load_calibration())
    return overrides.apply(a) if overrides is not None else a


def assumptions_for_job(job: Any, model: ModelSpec) -> PerfAssumptions:
    """Assumptions for a job: defaults, stored calibration, the job's [calibration] and
    [assumptions] tables (the job's own calibration wins for its GPU type)."""

    a = base_assumptions(job.assumptions)
    cal = job.calibration
    if cal is None:
        return a
    gpu: GpuSpec = get_gpu(cal.gpu, "calibration.gpu")
    setup = job.workload.setup()
    dp = cal.num_gpus // (cal.tp * cal.pp)
    if dp < 1 or cal.num_gpus % (cal.tp * cal.pp):
        raise ConfigError("calibration.num_gpus: must be a multiple of tp × pp")
    layout = Layout(
        dp=dp,
        tp=cal.tp,
        pp=cal.pp,
        zero_stage=cal.zero_stage,
        checkpointing=cal.activation_checkpointing,
        micro_batch=cal.micro_batch,
        grad_accum=cal.grad_accum,
    )
    gpn = cal.gpus_per_instance or min(cal.num_gpus, 8)
    cluster = Cluster(gpu, gpn, max(1, cal.num_gpus // gpn), cal.inter_node_gbps)
    step_s = cal.step_time_s or layout.global_batch * setup.seq_len / (cal.tokens_per_s or 1)
    eff = fit_efficiency(model, setup, layout, cluster, step_s, replace(a, efficiency=None))
    return replace(a, calibrated={**a.calibrated, (gpu.gpu_id, setup.precision): eff})
