"""The measurement that settles a plan (issue 45): the sizing run of each contender, how likely
its cheaper plan holds once measured, and the expected saving.

A contender row c (a GPU type other than the plan's) runs at m × its point step time, m unknown:
its band (optimizer/model/bands.py) reads m as a split log-normal through P10/P50/P90. A sizing
run measures m; `ccopt calibrate` then plans c with its step at m × the point and the calibrated
band K (bands.calibrated_band), so at the job's confidence q its hours are
start + running × m × K(q) (solve/train/confidence.py). It holds when those hours meet the
deadline, its cost the budget, and it costs less than the plan: m ≤ m* (hours and cost grow
with m, so m* is found by bisection).

    P(holds) = F(m*)                    F: the band's split log-normal CDF
    saving   = plan's cost − c's cost at m_h,  m_h = F⁻¹(P/2): the median m given it holds
    expected = P × saving − the sizing run's cost

Each GPU type's contender is its row of largest expected saving: a lower bound on the reading's
value (after the reading the best row of the type is taken, not one fixed before it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist

from optimizer.model.bands import Band, calibrated_band
from optimizer.pricing.offering import Offering, cost_usd
from optimizer.solve.cpsat.scale import to_cents, within_scale
from optimizer.solve.train.candidate import Candidate
from optimizer.solve.train.confidence import at_confidence, band_of, fixed_hours, point_hours
from optimizer.solve.train.prepare import PreparedJob
from optimizer.solve.train.sizing_rule import SizingRule, measured_steps, reading_minutes
from optimizer.units import MINUTES_PER_HOUR

__all__ = [
    "Settle",
    "SettleLimits",
    "band_cdf",
    "after_calibration",
    "threshold_multiplier",
    "hourly_probe",
    "ProbeIndex",
    "reading_cost_usd",
    "settle_runs",
    "job_limits",
    "plan_settle",
]

_Z90 = NormalDist().inv_cdf(0.9)
#: bisection steps on log m: the bracket (ln of the 99.9% over the 0.1% quantile, ~2 for the
#: widest prior) over 2^30 is a relative error of ~2e-9 in m*, far below a cent
_BISECTIONS = 30
#: the band's quantiles searched for m*: a contender that holds only below the 0.1% quantile
#: is not one; one that holds above the 99.9% quantile holds (stated bounds)
_Q_LOW, _Q_HIGH = 0.001, 0.999


@dataclass(frozen=True)
class SettleLimits:
    """What a contender must meet after calibration: the job's limits and the plan to beat."""

    plan: Candidate
    deadline_h: float | None
    budget_usd: float | None
    confidence: float
    calibrated: Band  # the band of a calibrated GPU type (bands.calibrated_band)


@dataclass(frozen=True)
class Settle:
    """One contender and the sizing run that settles it."""

    target: Candidate  # the contender's row, as planned now (at the job's confidence)
    probe: Candidate  # the sizing run's configuration (an hourly-billed row of its GPU type)
    network_matters: bool  # the target spans more instances than the reading
    warmup_steps: int
    measured_steps: int
    minutes: float
    cost_usd: float  # the sizing run
    threshold: float  # m*: the measured/predicted step time at or below which the target holds
    p_holds: float
    multiplier_if_holds: float  # m_h
    cost_if_holds_usd: float  # the target's cost at the job's confidence, calibrated at m_h
    saving_usd: float  # the plan's cost − cost_if_holds_usd
    expected_saving_usd: float  # p_holds × saving − cost_usd

    @property
    def gpu(self) -> str:
        return self.target.offering.gpu_id


def band_cdf(band: Band, m: float) -> float:
    """P(multiplier ≤ m) under the split log-normal through the band's P10/P50/P90 (the inverse
    of Band.multiplier: bands.py module doc)."""
    if m <= 0:
        return 0.0
    half = math.log(band.p90 / band.p50) if m >= band.p50 else math.log(band.p50 / band.p10)
    if half <= 0:  # a point band: all its mass at P50
        return 1.0 if m >= band.p50 else 0.0
    return NormalDist().cdf(_Z90 * math.log(m / band.p50) / half)


def after_calibration(c: Candidate, m: float, calibrated: Band, q: float) -> Candidate | None:
    """`c` re-planned at quantile `q` once its step is measured at m × the point prediction:
    the calibrated band scaled by m (confidence.at_confidence reads hours and cost)."""
    k = calibrated
    band = Band(k.p10 * m, k.p50 * m, k.p90 * m, k.cases, k.sources, k.basis)
    return at_confidence(replace(c, band=band), q)


@dataclass(frozen=True)
class _Reread:
    """A row's hours and cost at a measured multiplier m, as after_calibration gives them
    (fixed + running point hours × m × K(q); confidence.hours_at), without building a row:
    the bisection asks this ~30 times per row."""

    c: Candidate
    start_h: float
    running_h: float
    kq: float
    plan_cents: int  # the plan's cost as the solver counts it, which the row must undercut

    @classmethod
    def of(cls, c: Candidate, limits: SettleLimits) -> _Reread:
        fixed = fixed_hours(c)
        kq = limits.calibrated.multiplier(limits.confidence)
        return cls(c, fixed, point_hours(c) - fixed, kq, to_cents(limits.plan.cost_usd))

    def holds(self, m: float, limits: SettleLimits) -> bool:
        hours = self.start_h + self.running_h * m * self.kq
        off = self.c.offering
        if off.commitment_hours and hours > off.commitment_hours:
            return False  # as at_confidence: the row overruns its reservation's term
        if limits.deadline_h is not None and hours > limits.deadline_h:
            return False
        cost = cost_usd(off, self.c.instances, hours).total_usd
        if not within_scale(cost, hours):
            return False
        if limits.budget_usd is not None and cost > limits.budget_usd:
            return False
        return to_cents(cost) < self.plan_cents


def threshold_multiplier(c: Candidate, limits: SettleLimits) -> float | None:
    """m*: the largest measured multiplier at which `c` holds (module doc), searched between the
    band's 0.1% and 99.9% quantiles; None when it holds at neither."""
    band, row = band_of(c), _Reread.of(c, limits)
    lo, hi = math.log(band.multiplier(_Q_LOW)), math.log(band.multiplier(_Q_HIGH))
    if not row.holds(math.exp(lo), limits):
        return None
    if row.holds(math.exp(hi), limits):
        return math.exp(hi)
    for _ in range(_BISECTIONS):
        mid = (lo + hi) / 2
        if row.holds(math.exp(mid), limits):
            lo = mid
        else:
            hi = mid
    return math.exp(lo)


def _hourly(c: Candidate) -> bool:
    """Billed by the hour: never a reservation's commitment, never spot (it can be reclaimed)."""
    return not c.offering.commitment_hours and c.offering.pricing != "spot"


def _smallest(rows: Sequence[Candidate]) -> Candidate:
    """The cheapest-per-hour row on the fewest instances."""
    fewest = min(r.instances for r in rows)
    return min((r for r in rows if r.instances == fewest), key=lambda r: r.usd_per_hour)


@dataclass(frozen=True)
class ProbeIndex:
    """Where each offering and GPU type is read, worked out once over the rows: the offering's
    own smallest hourly row (one node reads the compute the band is about), else the GPU type's
    (its cheapest per hour on the fewest instances); never spot or a commitment."""

    by_offering: dict[Offering, Candidate]
    by_gpu: dict[str, Candidate]

    @classmethod
    def of(cls, rows: Sequence[Candidate]) -> ProbeIndex:
        offerings: dict[Offering, list[Candidate]] = {}
        gpus: dict[str, list[Candidate]] = {}
        for r in rows:
            if _hourly(r):
                offerings.setdefault(r.offering, []).append(r)
                gpus.setdefault(r.offering.gpu_id, []).append(r)
        return cls(
            {o: _smallest(rs) for o, rs in offerings.items()}, {g: _smallest(rs) for g, rs in gpus.items()}
        )

    def probe(self, target: Candidate) -> Candidate | None:
        own = self.by_offering.get(target.offering)
        return own if own is not None else self.by_gpu.get(target.offering.gpu_id)


def hourly_probe(rows: Sequence[Candidate], target: Candidate) -> Candidate | None:
    """Where to read the target's step (ProbeIndex), for one target."""
    return ProbeIndex.of(rows).probe(target)


def reading_cost_usd(probe: Candidate, minutes: float) -> float:
    """The reading's instance-hours and capital (the job's data charge is not the reading's)."""
    cost = cost_usd(probe.offering, probe.instances, minutes / MINUTES_PER_HOUR)
    return cost.running_usd + cost.capital_usd


def _settle(c: Candidate, probes: ProbeIndex, limits: SettleLimits, rule: SizingRule) -> Settle | None:
    """The contender record of row `c`, None when it holds at no plausible speed or has no
    hourly row to read it on."""
    m_star = threshold_multiplier(c, limits)
    probe = probes.probe(c) if m_star is not None else None
    if m_star is None or probe is None:
        return None
    band = band_of(c)
    p = band_cdf(band, m_star)
    m_h = band.multiplier(min(max(p / 2, 1e-9), 1 - 1e-9))
    held = after_calibration(c, m_h, limits.calibrated, limits.confidence)
    if held is None or p <= 0:
        return None
    minutes = reading_minutes(rule, probe.step.time_s)
    run_usd = reading_cost_usd(probe, minutes)
    saving = limits.plan.cost_usd - held.cost_usd
    return Settle(
        target=c,
        probe=probe,
        network_matters=c.instances > probe.instances,
        warmup_steps=rule.warmup_steps,
        measured_steps=measured_steps(rule, probe.step.time_s),
        minutes=minutes,
        cost_usd=run_usd,
        threshold=m_star,
        p_holds=p,
        multiplier_if_holds=m_h,
        cost_if_holds_usd=held.cost_usd,
        saving_usd=saving,
        expected_saving_usd=p * saving - run_usd,
    )


def settle_runs(
    rows: Sequence[Candidate], limits: SettleLimits, rule: SizingRule | None = None
) -> list[Settle]:
    """The contender of every other GPU type whose cheaper plan could hold after a reading,
    ranked by expected saving (largest first; ties by GPU name)."""
    rule = rule or SizingRule()
    plan_gpu = limits.plan.offering.gpu_id
    best: dict[str, Settle] = {}
    probes = ProbeIndex.of(rows)
    for c in rows:
        if c.offering.gpu_id == plan_gpu:
            continue
        s = _settle(c, probes, limits, rule)
        if s is None:
            continue
        kept = best.get(s.gpu)
        if kept is None or (s.expected_saving_usd, -s.target.gpus) > (
            kept.expected_saving_usd,
            -kept.target.gpus,
        ):
            best[s.gpu] = s
    return sorted(best.values(), key=lambda s: (-s.expected_saving_usd, s.gpu))


def job_limits(prep: PreparedJob, plan: Candidate) -> SettleLimits:
    """The limits of a prepared job against its chosen `plan` (its deadline, budget and confidence)."""
    q = prep.job.constraints.confidence
    return SettleLimits(plan, prep.deadline_h, prep.budget_usd, q, calibrated_band(prep.assumptions))


def plan_settle(prep: PreparedJob, plan: Candidate, rule: SizingRule | None = None) -> Settle | None:
    """The sizing run the plan shows: the contender of largest expected saving, None when no
    other GPU type's cheaper plan could hold (the choice does not hang on a band)."""
    runs = settle_runs(prep.table.candidates, job_limits(prep, plan), rule)
    return runs[0] if runs else None
