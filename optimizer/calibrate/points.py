"""What a GPU × precision × stack's stored calibration runs change: the curve, each run
re-predicted, the scope in words, and a run's compute / communication split."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from optimizer.configuration.build import Built, build_configuration
from optimizer.configuration.evaluate import evaluate
from optimizer.errors import ConfigError
from optimizer.inputs.calibration import recorded_request
from optimizer.inputs.calibration_store import (
    LEGACY_STACK,
    comm_share,
    load_points,
    point_comm_key,
)
from optimizer.inputs.gpus import get_gpu
from optimizer.inputs.request import request_from_options
from optimizer.model.calibrated import COMM_MODEL, CURVE_MODEL, CalibratedCurve
from optimizer.model.cluster import Cluster
from optimizer.model.efficiency import uncalibrated_efficiency
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.step_time import training_step_time

__all__ = [
    "rebuilt_run",
    "group_runs",
    "scope_sentence",
    "layout_words",
    "step_split",
    "transfer_share",
]


def layout_words(measured: dict[str, Any]) -> str | None:
    """A stored run's layout in a few words: "8 GPUs dp8 tp1 pp1 z1 mb2 ga4 seq 4096"."""
    lay = measured.get("layout")
    if not isinstance(lay, dict):
        return None
    parts = [f"{measured['num_gpus']} GPUs"] if measured.get("num_gpus") else []
    for key, short in (("dp", "dp"), ("tp", "tp"), ("pp", "pp"), ("cp", "cp"), ("zero_stage", "z")):
        if lay.get(key) is not None and not (key == "cp" and lay[key] == 1):
            parts.append(f"{short}{lay[key]}")
    for key, short in (("micro_batch", "mb"), ("grad_accum", "ga")):
        if lay.get(key) is not None:
            parts.append(f"{short}{lay[key]}")
    if measured.get("seq_len"):
        parts.append(f"seq {measured['seq_len']}")
    return " ".join(parts)


def rebuilt_run(point: dict[str, Any], prices: str | Path | None, offline: bool | None) -> Built | None:
    """The configuration a stored run was measured on, rebuilt from its recorded request as
    estimate builds one (None: the run records no request, or it no longer builds)."""
    request = recorded_request(point)
    if request is None:
        return None
    try:
        req = request_from_options({"gpu": point["gpu"], "precision": point["precision"], **request})
        return build_configuration(req, prices, offline)
    except ConfigError:
        return None


def _predicted_step_s(
    point: dict[str, Any], a: PerfAssumptions, prices: str | Path | None, offline: bool | None
) -> float | None:
    """Estimate of a stored run's recorded request under `a` (None when it cannot be rebuilt)."""
    built = rebuilt_run(point, prices, offline)
    if built is None:
        return None
    try:
        out = evaluate(built, a)
    except ConfigError:
        return None
    return out["step"]["time_s"] if out.get("step") else None


#: relative step of the efficiency for the compute sensitivity of a run's step (step_split)
_SENSITIVITY_STEP = 1e-3


def step_split(
    spec: ModelSpec, setup: TrainingSetup, layout: Layout, cluster: Cluster, a: PerfAssumptions
) -> dict[str, float]:
    """The model's parts of a run's step under `a` (calibrate: at the fitted efficiency e, so
    they add up to the measured step), linearised where the run is: compute_s = −e·∂step/∂e
    (what scales as 1/efficiency, the attention kernel's cap and the data-parallel overlap
    window included; a finite difference), comm_s the exposed communication with its bubble
    share (linear in a fabric's multiplier), fixed_s the rest (optimizer update)
    (reported as a run's communication share)."""
    assert a.efficiency is not None
    step = training_step_time(spec, setup, layout, cluster, a)
    h = _SENSITIVITY_STEP
    faster = training_step_time(spec, setup, layout, cluster, replace(a, efficiency=a.efficiency * (1 + h)))
    parts = step.parts_s
    per = parts["compute"] + parts["tp"] + parts["pp"]
    bubble_comm = parts["bubble"] * (parts["tp"] + parts["pp"]) / per if per > 0 else 0.0
    comm = parts["tp"] + parts["pp"] + parts["dp_exposed"] + bubble_comm
    compute = min((step.time_s - faster.time_s) * (1 + h) / h, step.time_s - comm)
    return {"compute_s": compute, "comm_s": comm, "fixed_s": max(0.0, step.time_s - comm - compute)}


def group_runs(
    key: tuple[str, str, str],
    curve: CalibratedCurve,
    a: PerfAssumptions,
    prices: str | Path | None = None,
    offline: bool | None = None,
    point: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the fit, every stored run of GPU × precision × stack `key` re-predicted under `a`);
    the fit names the communication multiplier of `point`'s fabric (1: the model's)."""
    prior = uncalibrated_efficiency(get_gpu(key[0]), key[1], a, key[2])
    runs = []
    for p in load_points():
        if p.get("legacy") or (p["gpu"], p["precision"], p["stack"]) != key:
            continue
        size, measured = float(p["size_factor"]), p.get("measured") or {}
        step = measured.get("step_time_s")
        predicted = _predicted_step_s(p, a, prices, offline)
        runs.append(
            {
                "id": p["id"],
                "model": measured.get("model"),
                "layout": layout_words(measured),
                "size_factor": round(size, 6),
                "measured_efficiency": round(size * float(p["efficiency"]), 6),
                **({"comm_share": round(share, 4)} if (share := comm_share(p)) is not None else {}),
                "fitted_efficiency": round(curve.efficiency(size, prior), 6),
                "measured_step_s": step,
                "predicted_step_s": predicted,
                "error_pct": round((predicted / step - 1) * 100, 3) if predicted and step else None,
            }
        )
    level, exponent = curve.line(prior)
    fit = {
        "model": CURVE_MODEL,
        "level": round(level, 6),
        "size_exponent": round(exponent, 6),
        "size_range": [round(curve.size_low, 6), round(curve.size_high, 6)],
        "runs": curve.points,
        "uncalibrated_efficiency": round(prior, 6),
        "transfer": round(transfer_share(curve), 4),
        "shared_change_pct": round((level / prior - 1) * 100, 2),
    }
    fabric = point_comm_key(point) if point is not None else None
    if point is not None and fabric is not None:
        share = comm_share(point)
        fit.update(
            comm_model=COMM_MODEL,
            comm_multiplier=round(a.calibrated_comm.get(fabric, 1.0), 6),
            fabric=f"{fabric[3]} GPUs per node, {fabric[4]:g} Gbit/s between nodes",
            fabric_runs=sum(point_comm_key(p) == fabric for p in load_points()),
            comm_share=round(share, 4) if share is not None else None,
        )
    return fit, runs


def transfer_share(curve: CalibratedCurve) -> float:
    """The share of the runs' mean log correction a layout of another size factor gets: the
    posterior weight of the shared level over the runs (one run: τ²/(τ²+σ²+ν²))."""
    c = curve.components
    return c.shared / (c.shared + (c.own + c.noise) / curve.points)


def scope_sentence(
    gpu: str, precision: str, stack: str, curve: CalibratedCurve, legacy: bool, fit: dict
) -> str:
    """Which predictions the stored runs of `gpu` × `precision` × `stack` change, and by how
    much, in words (`fit`: group_runs' fit of the run just stored)."""
    prior = fit["uncalibrated_efficiency"]
    level, exponent = curve.line(prior)
    runs = f"{curve.points} stored run{'s' if curve.points != 1 else ''}"
    shape = (
        ""
        if abs(exponent - 1.0) < 5e-3
        else f", size dependence × size factor^{exponent - 1:+.2f} within size factors "
        f"{curve.size_low:.3f}-{curve.size_high:.3f}"
    )
    words = (
        f"affects training estimates and plans on {gpu} in {precision} with stack {stack} ({runs}): "
        f"each run's own layout reproduced; every other layout's compute efficiency "
        f"{(level / prior - 1) * 100:+.1f}%{shape} (the runs' correction shared with weight "
        f"{transfer_share(curve):.2f}, the rest belongs to the measured layouts); "
    )
    mu, share = fit.get("comm_multiplier"), fit.get("comm_share")
    if share is not None:
        words += (
            f"this run's step is {100 * (1 - share):.0f}% compute and optimizer, "
            f"{100 * share:.0f}% communication; "
        )
    if mu is not None and mu != 1.0:
        words += (
            f"exposed communication on this fabric ({fit['fabric']}) × {mu:.2f} (fitted from its "
            f"{fit['fabric_runs']} runs; other fabrics keep the modelled communication); "
        )
    else:
        words += (
            "communication is modelled from each layout's own network, not fitted (a fabric's "
            "multiplier needs two runs on it whose communication shares differ, best of one "
            "micro-batch on one node and on several); "
        )
    words += "other GPU types, precisions and stacks keep their own"
    if legacy:
        words += f"; an old entry of {gpu}/{precision} (stack {LEGACY_STACK}) still applies to other stacks"
    return words
