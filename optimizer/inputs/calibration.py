"""User calibration: fit the compute efficiency of a GPU type to a measured run, and the
assumptions every estimate and plan starts from (defaults + the stored runs' curves).

The store ($CCOPT_CALIBRATION, else ~/.config/ccopt/calibration.json) is kept by
optimizer.inputs.calibration_store (a lock around every read-modify-write, atomic replace).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optimizer.errors import ConfigError
from optimizer.inputs.calibration_file import calibration_path, check_calibration_store
from optimizer.inputs.calibration_store import (
    load_comm,
    load_curves,
    load_memory_factors,
    load_points,
    read_store,
    write_store,
)
from optimizer.inputs.gpus import get_gpu
from optimizer.inputs.jobs.common import AssumptionOverrides, Calibration
from optimizer.inputs.jobs.train import Job
from optimizer.inputs.request_layout import request_gpus, request_layout
from optimizer.model.calibrated import EfficiencyCurve, fit_curve
from optimizer.model.hardware import GpuSpec
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.step_time import Cluster, microbatch_size_factor, training_step_time

if TYPE_CHECKING:  # the request loads the serving job's types: `ccopt plan` needs it only here
    from optimizer.inputs.request import ConfigRequest

__all__ = [
    "calibration_path",
    "load_calibration",
    "fit_efficiency",
    "assumptions_for_job",
    "base_assumptions",
    "read_store",
    "write_store",
    "calibration_requests",
    "calibration_request",
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
    """{(gpu_id, precision): the newest stored run's request (recorded_request, with the run's
    GPU and precision when it names none)} of the store."""
    out: dict[tuple[str, str], dict[str, Any] | None] = {}
    for point in reversed(load_points(path)):  # old entries first, then runs oldest first
        request = recorded_request(point)
        gpu, precision = point["gpu"], point["precision"]
        out[(gpu, precision)] = None if request is None else {"gpu": gpu, "precision": precision, **request}
    return out


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


def base_assumptions(overrides: AssumptionOverrides | None = None) -> PerfAssumptions:
    """Defaults + stored calibration (+ overrides from a job's [assumptions])."""
    curves: dict[tuple[str, str, str], EfficiencyCurve] = dict(load_curves())
    a = PerfAssumptions(
        calibrated=load_calibration(),
        calibrated_curves=curves,
        calibrated_comm=load_comm(),
        memory_calibrated=load_memory_factors(),
    )
    return overrides.apply(a) if overrides is not None else a


def calibration_request(cal: Calibration, model: ModelSpec, setup: TrainingSetup) -> ConfigRequest:
    """The ConfigRequest of a job file's `[calibration]` run — what `ccopt calibrate` takes as
    flags for the same run: its GPU type, GPUs, network, layout and batch (global batch = dp ×
    micro-batch × grad_accum) and the workload's sequence length, precision and stack.

    Raises:
        ConfigError: "calibration.num_gpus: must be a multiple of tp × pp", or a value the
            request refuses (named by its job-file field).
    """
    if cal.num_gpus % (cal.tp * cal.pp):
        raise ConfigError("calibration.num_gpus: must be a multiple of tp × pp")
    from optimizer.inputs.request import request_from_options  # lazy: only a job with [calibration]

    dp = cal.num_gpus // (cal.tp * cal.pp)
    try:
        return request_from_options(
            {
                "model": model,
                "gpu": cal.gpu,
                "num_gpus": cal.num_gpus,
                "gpus_per_instance": cal.gpus_per_instance,
                "inter_node_gbps": cal.inter_node_gbps,
                "tp": cal.tp,
                "pp": cal.pp,
                "zero_stage": cal.zero_stage,
                "activation_checkpointing": cal.activation_checkpointing,
                "micro_batch": cal.micro_batch,
                "global_batch": dp * cal.micro_batch * cal.grad_accum,
                "seq_len": setup.seq_len,
                "precision": setup.precision,
                "stack": setup.stack,
            }
        )
    except ConfigError as exc:
        raise ConfigError(f"calibration: {exc}") from None


def assumptions_for_job(job: Job, model: ModelSpec) -> PerfAssumptions:
    """Assumptions for a job: defaults, stored calibration, the job's [calibration] and
    [assumptions] tables (the job's own calibration wins for its GPU type × precision: one
    point of optimizer.model.calibrated's rule, exact for its layout). The [calibration] run
    is a ConfigRequest (calibration_request), split as `ccopt calibrate` splits one
    (inputs/request_layout.py); the workload says what was trained."""
    a = base_assumptions(job.assumptions)
    cal = job.calibration
    if cal is None:
        return a
    gpu: GpuSpec = get_gpu(cal.gpu, "calibration.gpu")
    setup = job.workload.setup()
    req = calibration_request(cal, model, setup)
    num_gpus, per_instance = request_gpus(req)
    layout = request_layout(req, num_gpus)
    cluster = Cluster(gpu, per_instance, max(1, num_gpus // per_instance), cal.inter_node_gbps)
    step_s = cal.step_time_s or layout.global_batch * setup.seq_len / (cal.tokens_per_s or 1)
    key = (gpu.gpu_id, setup.precision)
    # the job's run wins for its GPU type × precision: the stored runs, communication fits and
    # old entries of it are set aside, the run is one point of the rule of model.calibrated
    comm = {k: v for k, v in a.calibrated_comm.items() if k[:2] != key}
    base = replace(a, efficiency=None, calibrated_comm=comm)
    eff = fit_efficiency(model, setup, layout, cluster, step_s, base)
    size = microbatch_size_factor(model, setup, layout, base)
    curves: dict[tuple[str, str, str], EfficiencyCurve] = {
        k: v for k, v in a.calibrated_curves.items() if k[:2] != key
    }
    curves[(*key, setup.stack)] = fit_curve([(size, eff)])
    old = {k: v for k, v in a.calibrated.items() if k != key}
    return replace(a, calibrated=old, calibrated_curves=curves, calibrated_comm=comm)
