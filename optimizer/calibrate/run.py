"""Calibrate a configuration request against one measured run: fit the base compute
efficiency of its GPU type × precision × stack to the measured step (the same request
`estimate` takes, built by the same builder, optimizer.configuration.build, so the fit is of
exactly the configuration estimate then reports), store the run with its whole request, refit
its fabric's communication multiplier (comm.py) and, with a measured peak, the activation
factor of its model × stack (memory.py)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from optimizer.calibrate.comm import refit_fabric
from optimizer.calibrate.memory import MemoryPoint, check_memory_point, store_memory_point
from optimizer.calibrate.points import group_runs, scope_sentence, step_split
from optimizer.configuration.build import Built, build_configuration
from optimizer.configuration.evaluate import evaluate
from optimizer.errors import ConfigError
from optimizer.inputs.calibration import base_assumptions, fit_efficiency
from optimizer.inputs.calibration_file import (
    DEFAULT_MEMORY_KIND,
    EFFICIENCY_RANGE,
    MIN_EFFICIENCY,
    calibration_path,
    check_achieved,
    check_speed,
)
from optimizer.inputs.calibration_store import add_point
from optimizer.inputs.request import ConfigRequest
from optimizer.inputs.validation import check_number
from optimizer.model.calibrated import CalibratedCurve
from optimizer.model.setup import PerfAssumptions
from optimizer.model.step_time import microbatch_size_factor
from optimizer.report.contract.calibration import CalibrateOutput
from optimizer.report.contract.common import emit

__all__ = ["calibrate_request", "MAX_STEP_S", "MAX_TOKENS_PER_S", "MAX_PEAK_MEMORY_GIB"]

#: the longest measured step calibrate takes, seconds (--step-time-s, or implied by --tokens-per-s)
MAX_STEP_S = 1e6
#: the highest measured throughput calibrate takes, tokens/s of the whole run (--tokens-per-s)
MAX_TOKENS_PER_S = 1e12
#: the highest measured peak memory calibrate takes, GiB per GPU (--peak-memory-gib; the card's
#: own memory bounds it first: calibration_file.check_memory)
MAX_PEAK_MEMORY_GIB = 1e5
#: what the output states of the hardware the run was estimated on (when the estimate says it)
_HARDWARE_KEYS = (
    "gpus_per_instance",
    "inter_node_gbps",
    "inter_node_is_default",
    "instance",
    "provider",
    "instance_type",
)


@dataclass(frozen=True)
class _FittedRun:
    """A measured step and what it fits: the base efficiency and the layout's size factor."""

    step_s: float
    tokens_per_step: int
    efficiency: float
    size_factor: float
    peak_memory_gib: float | None


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
    (calibrate/memory.py); with a peak alone only that is stored (kind "memory").

    Raises:
        ConfigError: bad input; a run wildly outside the model's band (calibration_file's
            thresholds: faster or slower than predicted, above the plausible efficiency, more
            memory than the card; `force` stores the first three); a store that cannot be
            written (it is unchanged).
    """
    _check_measurement(tokens_per_s, step_time_s, peak_memory_gib)
    built = build_configuration(req, prices, offline)
    if built.setup is None or built.layout is None:
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
    run = _fit_run(built, probe, uncalibrated, tokens_per_s, step_time_s, force, peak_memory_gib)
    key = (built.gpu.gpu_id, built.precision, built.setup.stack)
    previous = evaluate(built, stored) if key in stored.calibrated_curves else None
    point, replaced = add_point(_point(built, req, probe, run, uncalibrated))
    refit_fabric(point, uncalibrated, prices, offline)  # its fabric's communication (calibrate.comm)
    memory_out = store_memory_point(built, req, memory, probe["layout"]) if memory is not None else None
    out = _calibrated(built, probe, previous, run, point, (prices, offline))
    return emit(
        CalibrateOutput,
        {
            **out,
            "replaced": replaced,
            **({"memory": memory_out} if memory_out is not None else {}),
            "file": str(calibration_path()),
        },
    )


def _check_measurement(
    tokens_per_s: float | None, step_time_s: float | None, peak_memory_gib: float | None
) -> None:
    """One throughput (tokens/s or step time) and/or a peak, each within its range."""
    if tokens_per_s is not None and step_time_s is not None:
        raise ConfigError("give one of --tokens-per-s or --step-time-s, not both")
    if tokens_per_s is None and step_time_s is None and peak_memory_gib is None:
        raise ConfigError("give --tokens-per-s or --step-time-s, and/or --peak-memory-gib (a measured peak)")
    check_number(tokens_per_s, "--tokens-per-s", gt=0, le=MAX_TOKENS_PER_S)
    check_number(step_time_s, "--step-time-s", gt=0, le=MAX_STEP_S)
    check_number(peak_memory_gib, "--peak-memory-gib", gt=0, le=MAX_PEAK_MEMORY_GIB)


def _fit_run(
    built: Built,
    probe: dict[str, Any],
    uncalibrated: PerfAssumptions,
    tokens_per_s: float | None,
    step_time_s: float | None,
    force: bool,
    peak_memory_gib: float | None,
) -> _FittedRun:
    """The measured step, checked against the uncalibrated prediction `probe`, and the base
    efficiency it fits (refused outside the plausible range unless `force`)."""
    setup, layout = built.setup, built.layout
    assert setup is not None and layout is not None  # a training configuration (caller checks)
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
    return _FittedRun(measured, tokens_per_step, eff, size, peak_memory_gib)


def _point(
    built: Built, req: ConfigRequest, probe: dict[str, Any], run: _FittedRun, uncalibrated: PerfAssumptions
) -> dict[str, Any]:
    """The store's entry of a fitted run: its key, fit, split, fabric and whole request."""
    setup, layout = built.setup, built.layout
    assert setup is not None and layout is not None
    fitted = replace(uncalibrated, efficiency=run.efficiency)
    peak = run.peak_memory_gib
    return {
        "gpu": built.gpu.gpu_id,
        "precision": built.precision,
        "stack": setup.stack,
        "efficiency": run.efficiency,
        "size_factor": run.size_factor,
        "split": step_split(built.spec, setup, layout, built.cluster, fitted),
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
            "step_time_s": run.step_s,
            "tokens_per_s": run.tokens_per_step / run.step_s,
            **({"peak_memory_gib": peak} if peak is not None else {}),
            "request": {**req.recorded(), "precision": built.precision},
        },
    }


def _calibrated(
    built: Built,
    probe: dict[str, Any],
    previous: dict[str, Any] | None,
    run: _FittedRun,
    point: dict[str, Any],
    catalog: tuple[str | Path | None, bool | None],
) -> dict[str, Any]:
    """What estimate predicted before and predicts now that `point` is stored, the fit of its
    GPU × precision × stack and its runs re-predicted (`catalog`: prices, offline)."""
    assert built.setup is not None
    key = (built.gpu.gpu_id, built.precision, built.setup.stack)
    now = base_assumptions()
    after = evaluate(built, now)  # what estimate and plan now report for this run
    curve = now.calibrated_curves[key]
    assert isinstance(curve, CalibratedCurve)  # the store's runs: load_curves
    fit, runs = group_runs(key, curve, now, catalog[0], catalog[1], point)
    before_eff, after_eff = probe["effective_efficiency"], after["effective_efficiency"]
    peak = run.peak_memory_gib
    return {
        "status": "calibrated",
        "gpu": key[0],
        "precision": key[1],
        "stack": key[2],
        "id": point["id"],
        "efficiency": round(run.efficiency, 6),
        "base_efficiency": round(run.efficiency, 6),
        "effective_efficiency": after["effective_efficiency"],
        "efficiency_before": before_eff,
        "efficiency_after": after_eff,
        "efficiency_change_pct": round((after_eff / before_eff - 1) * 100, 2),
        "scope": scope_sentence(*key, curve, key[:2] in now.calibrated, fit),
        "default_prediction_step_s": probe["step"]["time_s"],
        **({"previous_prediction_step_s": previous["step"]["time_s"]} if previous else {}),
        "calibrated_prediction_step_s": after["step"]["time_s"],
        "measured_step_s": run.step_s,
        "measured_tokens_per_s": round(run.tokens_per_step / run.step_s, 1),
        **({"peak_memory_gib": peak} if peak is not None else {}),
        "gpus": built.num_gpus,
        **{k: probe[k] for k in _HARDWARE_KEYS if probe.get(k) is not None},
        "fit": fit,
        "runs": runs,
    }


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
