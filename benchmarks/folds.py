"""Cross-validation folds of the constants' fit (benchmarks/fitting.py): leave one source (loso)
or one source family (lofo) out, refit on the rest, predict the held-out cases. Shared by
fit_constants.py, calibration_points.py, calibration_ceiling.py and accuracy.py. And the
conformal calibration of the prediction bands on the held-out residuals (below)."""

from __future__ import annotations

import math
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import Case, log_ratio, predict  # noqa: E402
from fitting import assumptions_for, fit_constants, source_family  # noqa: E402

from optimizer.model.bands import tier_of  # noqa: E402
from optimizer.model.fitted import FittedConstants  # noqa: E402

Folds = dict[str, tuple[FittedConstants, list[tuple[Case, float | None]]]]


def leave_out(
    cases: Sequence[Case], group: Callable[[Case], str], progress: Callable[[str], None] | None = None
) -> Folds:
    """Cross-validation: {group: (constants fitted without it, [(case, prediction)])}."""
    out = {}
    for name in sorted({group(c) for c in cases}):
        train = [c for c in cases if group(c) != name]
        fit = fit_constants(train)
        a = assumptions_for(fit)
        out[name] = (fit, [(c, predict(c, a)) for c in cases if group(c) == name])
        if progress:
            progress(name)
    return out


def loso(cases: Sequence[Case], progress: Callable[[str], None] | None = None) -> Folds:
    """Leave-one-source-out: {source: (constants fitted without it, [(case, prediction)])}."""
    return leave_out(cases, lambda c: c.source, progress)


def lofo(cases: Sequence[Case], progress: Callable[[str], None] | None = None) -> Folds:
    """Leave-one-family-out (SOURCE_FAMILIES): {family: (constants, [(case, prediction)])}."""
    return leave_out(cases, lambda c: source_family(c.source), progress)


def step_ratio(case: Case, predicted: float) -> float:
    """measured / predicted step time (inverse of the speed ratio)."""
    return math.exp(-log_ratio(case, predicted))


# ---- prediction bands: conformal with sources as the exchangeable unit ----
#: the nominal coverage of the P10–P90 band
COVERAGE = 0.8
#: units (sources; a publisher's versions once) a band group needs for its own centre-to-edge
#: spread and its own conformal quantile: with k units the interpolated 80% quantile sits at
#: rank 0.8 (k + 1), inside the k held-out values from k = 4 on. Fewer: the pooled spread and
#: the quantile of every such thin group's held-out scores (the widening is that quantile)
MIN_GROUP_SOURCES = 4
#: GUESS: weight, in units, of the pooled centre in a group's centre (a group of one source
#: sits half-way between its own median and the pooled one)
CENTER_PRIOR_SOURCES = 1.0
#: runs a group needs for a band of its own (fewer: a group without runs, the pooled band)
MIN_GROUP_CASES = 3
#: log-spread below which a group is not narrowed (one source's runs can agree to 1%)
SPREAD_FLOOR = 0.01
THIN = "thin"  # the calibration category of groups with fewer than MIN_GROUP_SOURCES units
ALL = "all"  # the calibration category of every held-out score (a category without scores)
#: hardware tiers of the training band groups (optimizer/model/bands.TIERS, by generation): a
#: thin or empty group borrows its tier's spread and the quantile of its tier's borrowed scores
#: (borrowed_scores), not one pooled band of every thin group (issue 44: one MI300X fp8 source
#: of a ROCm development branch and consumer-card LoRA runs set the band of B200 bf16)
BORROW = "borrow"

Unit = tuple[str, str, float]  # (exchangeable unit, band group, log measured/predicted time)


def unit_quantile(items: Sequence[tuple[str, float]], level: float) -> float:
    """Quantile of (unit, value) items, each unit weighing 1 in total (shared by its values),
    at plotting positions (cumulative units − own weight/2 + 1/2)/(k + 1): with one value per
    unit the i-th smallest of k sits at i/(k + 1) (Weibull), its expected CDF; linear between
    positions, the extreme values beyond them."""
    per_unit = Counter(u for u, _ in items)
    pairs = sorted((v, 1.0 / per_unit[u]) for u, v in items)
    weights = np.array([w for _, w in pairs])
    positions = (np.cumsum(weights) - weights / 2 + 0.5) / (len(per_unit) + 1)
    return float(np.interp(level, positions, [v for v, _ in pairs]))


@dataclass(frozen=True)
class GroupScale:
    """A band group's centre and spread (log multipliers of the predicted time)."""

    centre: float
    spread: float
    category: str  # the group itself (its own quantile) or THIN


def _tier(group: str) -> str:
    """The hardware tier of a band group ("" for serving groups: one tier, as before)."""
    return "" if group.startswith("serve:") else tier_of(group.split("/")[0])


def _spread(units: Sequence[Unit]) -> float:
    """The pooled spread: median over units of |r − its group's median| (floored)."""
    by_group: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for u, g, r in units:
        by_group[g].append((u, r))
    medians = {g: unit_quantile(items, 0.5) for g, items in by_group.items()}
    return max(SPREAD_FLOOR, unit_quantile([(u, abs(r - medians[g])) for u, g, r in units], 0.5))


def dense_tiers(units: Sequence[Unit]) -> set[str]:
    """Training tiers with evidence of transfer inside them: >= 2 units and >= 2 groups (a
    thinner tier's groups take the pooled band of every thin group, `any`, as before)."""
    out = set()
    for tier in {_tier(g) for _, g, _ in units} - {""}:
        mine = [x for x in units if _tier(x[1]) == tier]
        if len({u for u, _, _ in mine}) >= 2 and len({g for _, g, _ in mine}) >= 2:
            out.add(tier)
    return out


def tier_spreads(units: Sequence[Unit]) -> dict[str, float]:
    """{tier: the pooled spread of its units} for the dense tiers; "": of every unit."""
    out = {"": _spread(units)}
    for tier in dense_tiers(units):
        out[tier] = _spread([x for x in units if _tier(x[1]) == tier])
    return out


def group_scales(units: Sequence[Unit]) -> tuple[dict[str, GroupScale], GroupScale]:
    """({group: scale}, the scale of a group without units). With ≥ MIN_GROUP_SOURCES units a
    group's centre is its median pulled toward the pooled median by CENTER_PRIOR_SOURCES and its
    spread the median |r − centre|. A thinner group (and one without units) is not re-centred
    (centre 0: a held-out residual of a group of one source is the bias of a fit without that
    group's data, which the packaged fit has absorbed) and takes the pooled median |r − its
    group's median|; a group of fewer than MIN_GROUP_CASES runs has none."""
    by_group: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for u, g, r in units:
        by_group[g].append((u, r))
    pooled = unit_quantile([(u, r) for u, _, r in units], 0.5)
    medians = {g: unit_quantile(items, 0.5) for g, items in by_group.items()}
    spreads = tier_spreads(units)
    spread = spreads[""]
    out = {}
    for g, items in by_group.items():
        if len(items) < MIN_GROUP_CASES:
            continue
        k = len({u for u, _ in items})
        if k >= MIN_GROUP_SOURCES:
            centre = (k * medians[g] + CENTER_PRIOR_SOURCES * pooled) / (k + CENTER_PRIOR_SOURCES)
            own = max(SPREAD_FLOOR, unit_quantile([(u, abs(r - centre)) for u, r in items], 0.5))
            out[g] = GroupScale(centre, own, g)
        elif _tier(g) and _tier(g) in spreads:  # thin, dense tier: its spread, borrowed quantile
            out[g] = GroupScale(0.0, spreads[_tier(g)], f"{BORROW}:{_tier(g)}")
        else:
            out[g] = GroupScale(0.0, spread, THIN)
    return out, GroupScale(0.0, spread, THIN)


def tier_scale(units: Sequence[Unit], tier: str) -> GroupScale:
    """The scale of an empty training group of `tier` (no run of its own): centre 0, the
    tier's spread and borrowed quantile (dense tiers), else every thin group's (THIN)."""
    spreads = tier_spreads(units)
    if tier in spreads and tier:
        return GroupScale(0.0, spreads[tier], f"{BORROW}:{tier}")
    return GroupScale(0.0, spreads[""], THIN)


def borrowed_scores(units: Sequence[Unit], exclude: str | None = None) -> list[tuple[str, str, float]]:
    """(f"{BORROW}:tier", unit, |r| / spread) of every training unit's values in each of its
    groups as a group of its tier WITHOUT them would get them: centre 0 (not re-centred) and
    the tier's spread computed without that group and without the unit (leave one group out:
    how a group with no run of its own transfers from the tier's other groups). The rule is
    stated, not tuned: the quantile of these scores is the borrowed groups' widening."""
    out = []
    train = [x for x in units if _tier(x[1]) and x[0] != exclude]
    dense = dense_tiers(train)
    for u, g, r in train:
        tier = _tier(g)
        others = [x for x in train if x[1] != g and x[0] != u and _tier(x[1]) == tier]
        if tier not in dense or not others:  # no other group of its tier: no transfer evidence
            continue
        out.append((f"{BORROW}:{tier}", u, abs(r) / max(SPREAD_FLOOR, _spread(others))))
    return out


def held_out_scores(units: Sequence[Unit], exclude: str | None = None) -> list[tuple[str, str, float]]:
    """(category, unit, |r − centre| / spread) of every unit's values against its group's scale
    computed without it (and without `exclude`)."""
    out = []
    for name in sorted({u for u, _, _ in units} - {exclude}):
        groups, none = group_scales([x for x in units if x[0] not in (name, exclude)])
        for u, g, r in units:
            if u == name:
                s = groups.get(g, none)
                out.append((s.category, u, abs(r - s.centre) / s.spread))
    return out


def conformal_quantiles(scores: Sequence[tuple[str, str, float]]) -> dict[str, float]:
    """{category: the COVERAGE quantile of its held-out units' scores} (and ALL: of every score):
    split conformal across sources, one CDF per unit pooled (Lei et al. 2018 JASA §2, the
    (1 − α)(k + 1) rank interpolated; sources as units: Dunn, Wasserman & Ramdas 2022 JASA),
    per category (Mondrian: Vovk et al. 2005 §4.5). A category needs two units."""
    own = [x for x in scores if not x[0].startswith(BORROW)] or list(scores)
    out = {ALL: unit_quantile([(u, s) for _, u, s in own], COVERAGE)}
    for cat in sorted({c for c, _, _ in scores}):
        items = [(u, s) for c, u, s in scores if c == cat]
        if len({u for u, _ in items}) >= 2:
            out[cat] = unit_quantile(items, COVERAGE)
    return out


def quantile_of(qs: dict[str, float], category: str) -> float:
    """The quantile of a scale's category, else every held-out score's."""
    return qs.get(category, qs[ALL])


def conformal_bands(
    units: Sequence[Unit], pooled_key: str
) -> dict[str, tuple[float, float, float, int, int]]:
    """{group: (P10, P50, P90, cases, units)} multipliers of the predicted time: each group's
    scale from every unit, the quantile of its category's held-out scores; `pooled_key`: the
    band of a group without units."""
    qs = conformal_quantiles(held_out_scores(units) + borrowed_scores(units))
    groups, none = group_scales(units)
    tiers = sorted(dense_tiers(units))
    pooled = [(pooled_key, none)] + [(f"{pooled_key}:{t}", tier_scale(units, t)) for t in tiers]
    out = {}
    for g, s in sorted(groups.items()) + pooled:
        q = quantile_of(qs, s.category)
        tier = g[len(pooled_key) + 1 :] if g.startswith(pooled_key + ":") else None
        mine = [u for u, gg, _ in units if gg == g or g == pooled_key or _tier(gg) == tier]
        band = (math.exp(s.centre - q * s.spread), math.exp(s.centre), math.exp(s.centre + q * s.spread))
        out[g] = (*band, len(mine), len(set(mine)))
    return out


def held_out_bands(units: Sequence[Unit]) -> list[tuple[float, float, float]]:
    """(P10, P50, P90) log multipliers each unit's values get from the other units alone
    (scales, scores and quantiles: leave-one-source-out evaluation of conformal_bands)."""
    out: dict[int, tuple[float, float, float]] = {}
    for name in sorted({u for u, _, _ in units}):
        qs = conformal_quantiles(held_out_scores(units, exclude=name) + borrowed_scores(units, exclude=name))
        rest = [x for x in units if x[0] != name]
        groups, none = group_scales(rest)
        for i, (u, g, _) in enumerate(units):
            if u == name:
                s = groups.get(g) or (tier_scale(rest, _tier(g)) if _tier(g) else none)
                q = quantile_of(qs, s.category)
                out[i] = (s.centre - q * s.spread, s.centre, s.centre + q * s.spread)
    return [out[i] for i in range(len(units))]
