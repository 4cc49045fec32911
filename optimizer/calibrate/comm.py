"""The communication multiplier of a fabric, fitted when `ccopt calibrate` stores a run: every
stored run of the same GPU × precision × stack on the same fabric (GPUs per node × network) is
rebuilt from its recorded request and refitted under candidate multipliers μ; log μ is the
maximum a posteriori of optimizer.model.calibrated.comm_objective (a golden-section search over
COMM_RANGE), and each run of the fabric stores its base efficiency under it."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from optimizer.calibrate.points import rebuilt_run
from optimizer.errors import ConfigError
from optimizer.inputs.calibration import fit_efficiency
from optimizer.inputs.calibration_store import load_points, point_comm_key, set_fabric_comm
from optimizer.model.calibrated import COMM_RANGE, comm_objective
from optimizer.model.cluster import Cluster
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.step_time import microbatch_size_factor

__all__ = ["FabricRun", "fit_fabric", "golden_section_minimum", "refit_fabric"]

#: golden-section iterations over log μ in COMM_RANGE (width 2.2 → 2.2 × 0.618^40 ≈ 1e-8)
_ITERATIONS = 40


def golden_section_minimum(
    objective: Callable[[float], float], lo: float, hi: float, iterations: int = _ITERATIONS
) -> float:
    """The middle of the bracket a golden-section search of `objective` over [lo, hi] narrows
    to after `iterations` steps (a unimodal objective's minimum)."""
    g = (math.sqrt(5) - 1) / 2
    c, d = hi - g * (hi - lo), lo + g * (hi - lo)
    fc, fd = objective(c), objective(d)
    for _ in range(iterations):
        if fc <= fd:
            hi, d, fd = d, c, fc
            c = hi - g * (hi - lo)
            fc = objective(c)
        else:
            lo, c, fc = c, d, fd
            d = lo + g * (hi - lo)
            fd = objective(d)
    return (lo + hi) / 2


@dataclass(frozen=True)
class FabricRun:
    """A measured run of one fabric, as the model sees it."""

    id: str
    spec: ModelSpec
    setup: TrainingSetup
    layout: Layout
    cluster: Cluster
    measured_s: float


def fit_fabric(
    runs: Sequence[FabricRun],
    fabric: tuple[str, str, str, int, float],
    others: Sequence[tuple[float, float]],
    uncalibrated: PerfAssumptions,
) -> tuple[float, dict[str, float]]:
    """(μ, {run id: base efficiency under μ}) of the fabric's `runs`; `others`: the (size factor,
    base efficiency) of the GPU × precision × stack's runs on other fabrics (they inform the
    size dependence). Fewer than two runs: (1, {})."""
    if len(runs) < 2:
        return 1.0, {}
    sizes = [microbatch_size_factor(r.spec, r.setup, r.layout, uncalibrated) for r in runs]

    def refit(log_mu: float) -> list[float] | None:
        a = replace(uncalibrated, calibrated_comm={fabric: math.exp(log_mu)})
        try:
            return [fit_efficiency(r.spec, r.setup, r.layout, r.cluster, r.measured_s, a) for r in runs]
        except ConfigError:  # communication alone longer than a run: not this μ
            return None

    def objective(log_mu: float) -> float:
        effs = refit(log_mu)
        if effs is None:
            return math.inf
        return comm_objective(log_mu, [*zip(sizes, effs, strict=True), *others])

    log_mu = golden_section_minimum(objective, math.log(COMM_RANGE[0]), math.log(COMM_RANGE[1]))
    effs = refit(log_mu)
    if effs is None or objective(log_mu) >= objective(0.0):
        return 1.0, {}
    return math.exp(log_mu), {r.id: e for r, e in zip(runs, effs, strict=True)}


def _rebuilt(point: dict[str, Any], prices: str | Path | None, offline: bool | None) -> FabricRun | None:
    """A stored run rebuilt from its recorded request (None when it cannot be)."""
    step = (point.get("measured") or {}).get("step_time_s")
    if not step:
        return None
    built = rebuilt_run(point, prices, offline)
    if built is None or built.setup is None or built.layout is None:
        return None
    return FabricRun(point["id"], built.spec, built.setup, built.layout, built.cluster, float(step))


def refit_fabric(
    point: dict[str, Any], uncalibrated: PerfAssumptions, prices: str | Path | None, offline: bool | None
) -> float:
    """Refit the communication multiplier of the fabric of the run `point` just stored, over all
    stored runs of its GPU × precision × stack on that fabric, and store it on them; returns μ
    (1: not told apart, nothing stored)."""
    fabric = point_comm_key(point)
    if fabric is None:
        return 1.0
    stored = [p for p in load_points() if not p.get("legacy")]
    same_key = [p for p in stored if (p["gpu"], p["precision"], p["stack"]) == fabric[:3]]
    on = [r for p in same_key if point_comm_key(p) == fabric and (r := _rebuilt(p, prices, offline))]
    others = [
        (float(p["size_factor"]), float((p.get("comm") or {}).get("efficiency", p["efficiency"])))
        for p in same_key
        if point_comm_key(p) != fabric
    ]
    mu, effs = fit_fabric(on, fabric, others, uncalibrated)
    set_fabric_comm(fabric, mu, effs)
    return mu
