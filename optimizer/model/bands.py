"""Prediction bands: how far a measured step time may land from the model's point.

A band is three multipliers of the predicted time (P10, P50, P90 of measured/predicted) and the
evidence behind it. The fit (benchmarks/fit_constants.py, benchmarks/folds.py) stores one per
GPU generation × precision (training) and per generation (serving, "serve:<generation>"),
calibrated across sources, not rows: split conformal on leave-one-source-out residuals with a
source (a publisher's versions once) as the exchangeable unit, so that 80% of a new source's runs
fall between P10 and P90 on average. With >= 4 sources P50 is the group's centre (its sources'
median residual, pulled toward the pooled one) and P10/P90 = centre ∓ q × spread (log space)
with its own spread and quantile; a thinner group keeps the fitted point (P50 1) with the pooled
spread and the quantile of all such thin groups (`any`, `serve:any`: also the band of a
generation × precision with no measured run). The training bands are then widened for sources
the model was never shaped on: each log half-width h becomes sqrt(h² + d²), d fitted.toml's
`new_source_discrepancy`, the smallest at which 80% of the runs of the kept-aside collections,
as each was scored once before any change for it, fall inside (benchmarks/new_sources.py: 0.30
from 24 sources of six collections, 68% of their runs inside the unwidened bands).

The point of a training step IS its band's P50: the step model multiplies the predicted time by
the centre (`point_centre`), and `band_for` returns the band relative to that corrected point
(P50 = 1). A GPU with no fitted band and no pooled one gets the stated prior
(PerfAssumptions.band_prior). A calibrated GPU type (`ccopt calibrate`) has its own band, shrunk
once toward the prior (`shrink`: w = n/(n + K), n = min(cases, C × sources)).

A quantile q between the stated ones is read off a split log-normal through P10, P50 and P90
(the band's two halves may differ in width): log m(q) = log P50 + z(q)/z(0.9) · (log P90 − log P50)
for q ≥ 0.5, with the P10 half below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import TYPE_CHECKING

from optimizer.model.efficiency import fitted_constants
from optimizer.model.fitted import band_key
from optimizer.model.hardware import GpuSpec

if TYPE_CHECKING:  # setup.py is above this module
    from optimizer.model.cluster import StepTime
    from optimizer.model.setup import PerfAssumptions

__all__ = [
    "DEFAULT_CONFIDENCE",
    "Band",
    "band_for",
    "point_centre",
    "serve_centre",
    "POOLED_KEY",
    "MEMORY_KEY",
    "memory_band",
    "memory_factor",
    "POOLED_SERVE_KEY",
    "SERVE_PREFIX",
    "profile_band",
    "quantile_multiplier",
    "shrink",
    "CONFIDENCE_RANGE",
]

#: the confidences a plan may be asked for (plan --confidence, constraints.confidence)
CONFIDENCE_RANGE = (0.5, 0.99)
#: the confidence a deadline or budget is met at when the job does not say (issue 25)
DEFAULT_CONFIDENCE = 0.8
_Z90 = NormalDist().inv_cdf(0.9)


@dataclass(frozen=True)
class Band:
    """P10 / P50 / P90 multipliers of a predicted step time and the evidence they rest on."""

    p10: float
    p50: float
    p90: float
    cases: int  # measured runs behind the band (0: the prior alone)
    sources: int  # distinct sources among them
    basis: str  # the evidence key ("hopper/16", "any"), "prior", "calibrated" or "profile"
    #: the multiplier the point was already given (the fitted band's P50; 1: none): P10..P90 are
    #: relative to the corrected point
    centre: float = 1.0

    def multiplier(self, q: float) -> float:
        """The step-time multiplier at quantile `q` (0 < q < 1)."""
        return quantile_multiplier((self.p10, self.p50, self.p90), q)


def quantile_multiplier(band: tuple[float, float, float], q: float) -> float:
    """Multiplier at quantile q of a split log-normal through (P10, P50, P90) (module doc)."""
    p10, p50, p90 = band
    z = NormalDist().inv_cdf(q)
    half = math.log(p90 / p50) if z >= 0 else math.log(p50 / p10)
    return p50 * math.exp(z / _Z90 * half)


def shrink(
    data: tuple[float, float, float, int, int] | None,
    toward: tuple[float, float, float],
    prior_cases: float,
    cases_per_source: float,
) -> tuple[float, float, float]:
    """(P10, P50, P90) of `data` pulled toward `toward` in log space by w = n/(n + K) (module doc)."""
    if data is None:
        return toward
    p10, p50, p90, cases, sources = data
    n = min(float(cases), cases_per_source * sources)
    w = n / (n + prior_cases)
    out = tuple(
        math.exp(w * math.log(d) + (1 - w) * math.log(t))
        for d, t in zip((p10, p50, p90), toward, strict=True)
    )
    return out[0], out[1], out[2]


#: hardware tiers of the training band groups: a thin or empty generation × precision borrows
#: the band of its tier ("any:<tier>", benchmarks/folds.py borrowed_scores: calibrated by how
#: each group of the tier is predicted from the tier's other groups), not of every thin group.
#: Data-centre NVIDIA parts (SXM/HGX, HBM, NVLink, the NeMo/Megatron recipes' home), NVIDIA
#: workstation and consumer cards (GDDR, PCIe, GeForce/RTX accumulate rates: pricing_data
#: gpus.csv notes) and AMD Instinct (ROCm: another compiler, BLAS and attention stack)
TIERS = {
    "volta": "nvidia-dc",
    "ampere-dc": "nvidia-dc",
    "hopper": "nvidia-dc",
    "blackwell": "nvidia-dc",
    "blackwell-rtx": "nvidia-ws",  # GeForce RTX 50 (GB20x, sm_120): pricing_data gpus_consumer.csv
    "ampere": "nvidia-ws",
    "ada": "nvidia-ws",
    "turing": "nvidia-ws",
    "cdna": "amd",
}


#: the tiers in words (what a borrowed band says it rests on)
TIER_NAMES = {
    "nvidia-dc": "NVIDIA data-centre",
    "nvidia-ws": "NVIDIA workstation and consumer",
    "amd": "AMD Instinct",
}


def borrowed_from(basis: str) -> str | None:
    """What a band no run of its own group backs is borrowed from: "pooled" (every thinly
    measured group's band), the tier's name for "any:<tier>", None for a measured group."""
    if basis in (POOLED_KEY, POOLED_SERVE_KEY):
        return "pooled"
    if basis.startswith(POOLED_KEY + ":"):
        tier = basis.split(":", 1)[1]
        return TIER_NAMES.get(tier, tier)
    return None


def tier_of(generation: str) -> str:
    """The band tier of a GPU generation (TIERS; an unlisted one is its own tier)."""
    return TIERS.get(generation, generation)


#: the band of a training generation × precision / serving generation with no measured run
POOLED_KEY = "any"
SERVE_PREFIX = "serve:"
#: the band of measured ÷ predicted peak training memory per GPU (benchmarks/fit_constants.py)
MEMORY_KEY = "memory"
POOLED_SERVE_KEY = SERVE_PREFIX + POOLED_KEY


def _fitted_band(keys: tuple[str, ...], assumptions: PerfAssumptions) -> Band:
    """The first of `keys` the fit has, absolute (P50: its centre), else the prior around 1."""
    fit = fitted_constants(assumptions)
    stats = fit.bands if fit is not None else {}
    for key in keys:
        if key in stats:
            p10, p50, p90, cases, sources = stats[key]
            if key.endswith(POOLED_KEY) or key.startswith(POOLED_KEY + ":"):
                # pooled (every thin group's) or the tier's "any:<tier>": no run of this
                # group backs it (borrowed_from words it)
                return Band(p10, p50, p90, cases=0, sources=0, basis=key)
            return Band(p10, p50, p90, cases=cases, sources=sources, basis=key)
    low, high = assumptions.band_prior
    return Band(low, 1.0, high, cases=0, sources=0, basis="prior")


def _train_keys(gpu: GpuSpec, precision: str) -> tuple[str, str, str]:
    """The band keys of a training step, most specific first: its generation × precision, its
    tier's pooled band (TIERS), the pooled band of every thin group."""
    return (band_key(gpu.generation, precision), f"{POOLED_KEY}:{tier_of(gpu.generation)}", POOLED_KEY)


def point_centre(gpu: GpuSpec, precision: str, assumptions: PerfAssumptions) -> float:
    """The multiplier of a predicted training step that makes the point its band's P50."""
    return _fitted_band(_train_keys(gpu, precision), assumptions).p50


def band_for(gpu: GpuSpec, precision: str, stack: str, assumptions: PerfAssumptions) -> Band:
    """The band of a training step in `precision` on `gpu`, relative to the corrected point
    (P50 = 1; module doc). `stack` is not a band group: one source per stack and GPU is the rule."""
    del stack
    band = _fitted_band(_train_keys(gpu, precision), assumptions)
    c = band.p50
    return replace(band, p10=band.p10 / c, p50=1.0, p90=band.p90 / c, centre=c)


def _shrunk_band(keys: tuple[str, ...], assumptions: PerfAssumptions) -> Band:
    """The fitted band of the last of `keys` shrunk toward that of the one before, ..., the
    first shrunk toward the prior (module doc); its evidence is the most specific key the fit
    has (none: "prior")."""
    low, high = assumptions.band_prior
    fit = fitted_constants(assumptions)
    stats = fit.bands if fit is not None else {}
    k, c = assumptions.band_prior_cases, assumptions.band_cases_per_source
    band: tuple[float, float, float] = (low, 1.0, high)
    for key in keys:
        band = shrink(stats.get(key), band, k, c)
    basis = next((key for key in reversed(keys) if key in stats), "prior")
    cases, sources = stats[basis][3:5] if basis in stats else (0, 0)
    return Band(*band, cases=cases, sources=sources, basis=basis)


def memory_band(assumptions: PerfAssumptions) -> Band:
    """The band of a predicted training peak memory per GPU (absolute: the point is not
    corrected), from the conformal calibration across sources; the prior when not fitted."""
    return _fitted_band((MEMORY_KEY,), assumptions)


def memory_factor(assumptions: PerfAssumptions, confidence: float | None) -> float:
    """The multiplier a predicted device peak takes to fit at quantile `confidence` of the
    memory band (constraints.memory_confidence; None: 1, the point). Never below 1: a band
    whose P50 is under 1 does not shrink what a plan keeps free."""
    return 1.0 if confidence is None else max(1.0, memory_band(assumptions).multiplier(confidence))


def serve_band_key(generation: str, stack: str | None = None) -> str:
    """The key of a serving band: "serve:hopper[/vllm]"."""
    return f"{SERVE_PREFIX}{generation}" if stack is None else f"{SERVE_PREFIX}{generation}/{stack}"


def serve_centre(gpu: GpuSpec, assumptions: PerfAssumptions) -> float:
    """The multiplier of a serving replica's predicted times that makes them its band's P50."""
    return _fitted_band((serve_band_key(gpu.generation), POOLED_SERVE_KEY), assumptions).p50


def serve_band_for(gpu: GpuSpec, stack: str, assumptions: PerfAssumptions) -> Band:
    """The band of a serving replica's times (TTFT, TPOT, 1 / throughput) on `gpu`, relative to
    the point, which carries its P50 (serving.serving_perf): the conformal band of the
    generation, else of every thin serving generation, else the prior (module doc)."""
    del stack
    band = _fitted_band((serve_band_key(gpu.generation), POOLED_SERVE_KEY), assumptions)
    c = band.p50
    return replace(band, p10=band.p10 / c, p50=1.0, p90=band.p90 / c, centre=c)


#: the key of the band of calibrated predictions: held-out runs predicted after one measured
#: point on their GPU type (benchmarks/accuracy.py calibrated, on leave-one-family-out constants)
CALIBRATED_KEY = "calibrated"


def calibrated_band(assumptions: PerfAssumptions) -> Band:
    """The band of a step on a GPU type the user calibrated (`ccopt calibrate`): the residuals
    of calibrated cross-validated predictions, shrunk once toward the prior like any
    generation × precision band (module doc: w = n/(n + K), n = min(cases, C × sources))."""
    return _shrunk_band((CALIBRATED_KEY,), assumptions)


def step_band(
    step: StepTime,
    gpu: GpuSpec,
    precision: str,
    stack: str,
    assumptions: PerfAssumptions,
    default: Band | None = None,
) -> Band:
    """The band of one predicted training step: a per-sample profile's own, the calibrated band
    when the user measured this GPU type, else the GPU generation × precision × stack's
    (`default`: that band already looked up, as the planner does once per offering)."""
    if step.interval:
        return profile_band(step.interval)
    if step.calibrated:
        return calibrated_band(assumptions)
    return default if default is not None else band_for(gpu, precision, stack, assumptions)


def profile_band(interval: tuple[float, float]) -> Band:
    """A per-sample profile's own (P10, P90) band (optimizer/model/profile_time.py); its median
    is the prediction itself."""
    p10, p90 = interval
    return Band(p10, min(max(1.0, p10), p90), p90, cases=0, sources=0, basis="profile")
