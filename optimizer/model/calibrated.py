"""What measured runs of a GPU type × precision × stack (`ccopt calibrate`) do to the compute
efficiency of every other layout there: exact where measured, pulled toward the runs elsewhere.

A run k stores its base efficiency e_k (the efficiency before the size factor that reproduces
its measured step with the model's communication, bubble and optimizer times kept:
optimizer.inputs.calibration.fit_efficiency) and its size factor s_k
(optimizer.model.efficiency.size_factor of its micro-batch). With p the uncalibrated base
efficiency of the same GPU × precision × stack (the GPU table × the fitted multipliers), the
run's correction is y_k = log(e_k / p) at x_k = log s_k. The correction of any layout is the
posterior mean of a Gaussian process in x fitted to the runs (kriging; least squares in log
space with a prior, Rasmussen & Williams 2006 §2.2 eq. 2.25 and §2.7 eq. 2.41):

    g(x) = a + b · (clamp(x) − x̄)  +  r(x)
    cov  = τ² + β² (x − x̄)(x' − x̄) + σ² exp(−((x − x')/ℓ)²) + ν² [same run]

- a ~ N(0, τ²): what every layout of the GPU type shares (the GPU, driver, stack version);
- b ~ N(0, β²): a size dependence beyond the model's own size curve, fitted only from runs
  whose size factors differ and held at the nearest run's value outside their span (the
  "clamped slope": the model's own size curve continues from there);
- r(x) (variance σ², length ℓ in log size factor): what belongs to the measured layout itself
  (its parallelism, kernels, input pipeline) and does not transfer to other layouts, but makes
  each run exact at its own size factor;
- ν²: the run-to-run noise of a measurement (two runs of one size factor are averaged).

One run: its own layout exact, every other layout gets w = τ²/(τ² + σ² + ν²) of its log
correction (the share of a run's error a layout of another shape shares, estimated from the
validation residuals below). Two runs: both exact (within ν²), a third layout gets the
averaged level and the shrunk slope. The achieved efficiency of a layout is p · s · exp(g(x)),
never above 1.

The variances are estimated (method of moments) from the uncalibrated leave-one-source-out
residuals of the validation set grouped by source × GPU × precision
(benchmarks/calibration_points.py prints them and checks the rule with nested
leave-one-source-out: the held-out source never informs its own variances).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Protocol

import numpy as np

__all__ = [
    "CalibratedCurve",
    "PowerCurve",
    "EfficiencyCurve",
    "Components",
    "COMPONENTS",
    "fit_curve",
    "CURVE_MODEL",
    "comm_objective",
    "comm_key",
    "COMM_RANGE",
    "COMM_MODEL",
    "COMM_VARIANCE",
]


@dataclass(frozen=True)
class Components:
    """Variances of a run's log efficiency correction (module doc), in (log units)²."""

    shared: float  # τ²: of the level every layout of the GPU × precision × stack shares
    slope: float  # β²: of the slope in log size factor beyond the model's size curve
    own: float  # σ²: of what belongs to the measured layout alone
    length: float  # ℓ: log size factor distance over which a layout is "the measured one"
    noise: float  # ν²: run-to-run noise of one measurement

    @property
    def transfer(self) -> float:
        """The share of one run's log correction another layout gets (module doc)."""
        return self.shared / (self.shared + self.own + self.noise)


#: estimated on the validation set (benchmarks/calibration_points.py, all sources: τ², β², σ²);
#: ℓ GUESS: layouts within 2% in size factor have the measured micro-batch shape; ν² GUESS:
#: 0.5% run-to-run noise of a measured step (repeated published runs agree within ~1%)
COMPONENTS = Components(shared=0.0558, slope=0.3429, own=0.0100, length=0.02, noise=0.005**2)
#: the fitted model in words (output and docs)
CURVE_MODEL = (
    "log(efficiency / uncalibrated) = a + b·(log size factor − mean) + the measured layout's own "
    "term: the posterior mean (kriging, least squares in log space with a prior) over the stored "
    "runs; exact at each run, shared with weight τ²/(τ²+σ²) elsewhere, slope held outside their span"
)


class EfficiencyCurve(Protocol):
    """What the model asks of a calibration: an achieved efficiency per size factor, given the
    uncalibrated base efficiency `prior`, and an upper bound of it."""

    @property
    def points(self) -> int: ...

    def efficiency(self, size: float, prior: float) -> float: ...

    def ceiling(self, prior: float) -> float: ...


@dataclass(frozen=True)
class PowerCurve:
    """A known curve, achieved efficiency = level × size^size_exponent (the prior ignored): an
    explicit assumption (tests, what-if), never fitted."""

    level: float
    size_exponent: float = 1.0
    points: int = 0

    def efficiency(self, size: float, prior: float) -> float:
        """The achieved fraction of the dense peak at size factor `size`."""
        return min(1.0, self.level * size**self.size_exponent)

    def ceiling(self, prior: float) -> float:
        """The highest achieved efficiency of any size factor in (0, 1]."""
        return min(1.0, self.level if self.size_exponent >= 0 else self.level * 1e-3**self.size_exponent)


@dataclass(frozen=True)
class CalibratedCurve:
    """The stored runs [(size factor, base efficiency)] of one GPU × precision × stack and the
    variances of the rule (module doc)."""

    runs: tuple[tuple[float, float], ...]
    components: Components = field(default=COMPONENTS)

    @property
    def points(self) -> int:
        return len(self.runs)

    @property
    def size_low(self) -> float:
        return min(s for s, _ in self.runs)

    @property
    def size_high(self) -> float:
        return max(s for s, _ in self.runs)

    @cached_property
    def _xs(self) -> np.ndarray:
        return np.log(np.array([s for s, _ in self.runs]))

    @cached_property
    def _span(self) -> tuple[float, float, float]:
        """(mean, least, largest) log size factor of the runs."""
        return float(self._xs.mean()), float(self._xs.min()), float(self._xs.max())

    @cached_property
    def _groups(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The distinct log size factors, each run's index among them, the runs of each."""
        distinct, index, counts = np.unique(self._xs, return_inverse=True, return_counts=True)
        return distinct, index.reshape(-1), counts

    @cached_property
    def _fits(self) -> dict[float, np.ndarray]:
        """_fit's answers by prior, computed once per curve (no hashing of the runs)."""
        return {}

    def _kernel(self, x: np.ndarray, xk: np.ndarray) -> np.ndarray:
        """Covariances of the corrections at x (rows) and at the runs (columns), no noise."""
        c, (mid, lo, hi) = self.components, self._span
        u = np.clip(x, lo, hi)[:, None] - mid
        near = np.exp(-(((x[:, None] - xk[None, :]) / c.length) ** 2))
        return c.shared + c.slope * u * (xk[None, :] - mid) + c.own * near

    def _fit(self, prior: float) -> np.ndarray:
        """a: α = K⁻¹ y of the runs' log corrections y_k = log(e_k / prior), summed over the
        runs of each distinct size factor (all the kernel needs: runs of one size factor have
        the same covariances). Computed once per prior (the planner asks once per layout)."""
        if prior not in self._fits:
            self._fits[prior] = _solve(self, prior)
        return self._fits[prior]

    def correction(self, size: float, prior: float) -> float:
        """g(log size): the log multiplier of the uncalibrated base efficiency (module doc)."""
        a = self._fit(prior)
        return float(self._kernel(np.array([math.log(size)]), self._groups[0])[0] @ a)

    def line(self, prior: float) -> tuple[float, float]:
        """(level, size exponent) of the shared part: base efficiency at size factor 1 and the
        exponent of the achieved efficiency (1 + b: the model's size curve is 1)."""
        c, a = self.components, self._fit(prior)
        mid = self._span[0]
        level = c.shared * float(a.sum())
        b = c.slope * float(((self._groups[0] - mid) * a).sum())
        return prior * math.exp(level - b * mid), 1.0 + b

    def efficiency(self, size: float, prior: float) -> float:
        """The achieved fraction of the dense peak of a layout with size factor `size`, given the
        uncalibrated base efficiency `prior`."""
        return min(1.0, prior * size * math.exp(self.correction(size, prior)))

    def ceiling(self, prior: float) -> float:
        """An upper bound of the achieved efficiency of every size factor in (0, 1]: the shared
        part is largest at a breakpoint (the runs' span ends or size 1), the own terms at most
        σ² Σ_i |a_i| (runs of one size factor share their own term, so their α add up before
        the absolute value: a bound no looser than Σ_k σ²|α_k|). In log space: many runs of
        one size factor that disagree (large α) make the bound 1, not an overflow."""
        c, a = self.components, self._fit(prior)
        xs = self._groups[0]
        ends = [x for x in (self._span[1], self._span[2], 0.0) if x <= 0.0]
        own = c.own * float(np.abs(a).sum())
        shared = self._kernel(np.array(ends), xs) - c.own * np.exp(
            -(((np.array(ends)[:, None] - xs[None, :]) / c.length) ** 2)
        )
        top = max(x + float(row @ a) for x, row in zip(ends, shared, strict=True))
        return math.exp(min(0.0, math.log(prior) + top + own))


def _solve(curve: CalibratedCurve, prior: float) -> np.ndarray:
    """CalibratedCurve._fit. With noise ν² > 0 the n runs reduce to the m distinct size
    factors exactly: a solves (K_m + diag(ν²/n_i)) a = ȳ (n_i runs of mean ȳ_i at x_i); the
    per-run α_k = a_i/n_i + (y_k − ȳ_i)/ν² solve (K + ν² I) α = y, as substitution shows, and
    sum to a_i over each size factor. One m×m solve instead of n×n; the runs enter in O(n)."""
    ys = np.log(np.array([e for _, e in curve.runs]) / prior)
    xs, index, counts = curve._groups
    noise = curve.components.noise
    if noise <= 0.0:  # runs of one size factor would make K singular: the full system
        alpha = np.linalg.solve(curve._kernel(curve._xs, curve._xs), ys)
        return np.asarray(np.bincount(index, weights=alpha, minlength=len(xs)))
    mean = np.bincount(index, weights=ys, minlength=len(xs)) / counts
    k = curve._kernel(xs, xs) + np.diag(noise / counts)
    return np.asarray(np.linalg.solve(k, mean))


def fit_curve(runs: Sequence[tuple[float, float]], components: Components = COMPONENTS) -> CalibratedCurve:
    """The calibration of `runs` = [(size factor, base efficiency)] (module doc).

    Raises ValueError when `runs` is empty or holds a value that is not a positive number."""
    if not runs:
        raise ValueError("fit_curve: no runs")
    if any(not (math.isfinite(s) and math.isfinite(e) and s > 0 and e > 0) for s, e in runs):
        raise ValueError(f"fit_curve: size factors and efficiencies must be > 0: {list(runs)}")
    return CalibratedCurve(tuple((float(s), float(e)) for s, e in runs), components)


# ---- communication: a multiplier per fabric, told apart from compute by runs that differ ----
#
# With the fabric's communication μ × the modelled (before overlap hides part of it), each
# run of the fabric is refitted (its base efficiency e_k(μ): the compute that is left, exact
# for the run); log μ is the maximum a posteriori of
#     J(log μ) = ½ y(μ)ᵀ (K_g + ν² I)⁻¹ y(μ) + (log μ)² / (2ω²),   y_k = log e_k(μ),
# K_g the compute covariance of the module doc with the level left free (only differences
# between runs tell communication). Runs of one size factor on one fabric whose communication
# shares differ (the same micro-batch on one node and on four) tell it; runs that differ in
# size as well split the difference between the size dependence, their own terms and the
# fabric by the variances. (optimizer.api.calibrate_comm searches log μ.)

#: GUESS: prior variance of log μ: a fabric's exposed communication within ×/÷ 1.35 of the
#: modelled at one standard deviation (NCCL bus bandwidths reach 70-90% of the link's)
COMM_VARIANCE = 0.09
#: the prior variance of the level while telling communication apart: free (≫ any correction)
FREE_LEVEL = 100.0
#: the communication multiplier is held within [1/3, 3]: beyond, the network model is wrong in
#: kind (a misstated interconnect), not in degree
COMM_RANGE = (1 / 3, 3.0)
COMM_MODEL = (
    "step = compute (1/efficiency) + exposed part of μ × communication + optimizer; log μ per fabric "
    "(GPUs per node × network) is the maximum a posteriori given the runs of that fabric, each "
    "refitted under μ (prior sd 0.3; runs whose communication shares differ tell it), within [1/3, 3]"
)


def comm_key(
    gpu_id: str, precision: str, stack: str, gpus_per_node: int, inter_node_gbps: float
) -> tuple[str, str, str, int, float]:
    """The key of a fabric's communication multiplier: the calibration's GPU × precision × stack
    and the network a run's communication crosses (GPUs per node, the node's Gbit/s)."""
    return (gpu_id, precision, stack, int(gpus_per_node), round(float(inter_node_gbps), 3))


def comm_objective(
    log_mu: float, runs: Sequence[tuple[float, float]], components: Components = COMPONENTS
) -> float:
    """J(log μ) of the comment above for the runs [(size factor, base efficiency e_k(μ))]."""
    c = replace(components, shared=FREE_LEVEL)
    curve = CalibratedCurve(tuple(runs), c)
    ys = np.log(np.array([e for _, e in runs]))
    k = curve._kernel(curve._xs, curve._xs) + c.noise * np.eye(len(runs))
    return 0.5 * float(ys @ np.linalg.solve(k, ys)) + log_mu**2 / (2 * COMM_VARIANCE)
