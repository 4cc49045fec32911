"""Calibration on the validation set (issue 27): one measured point per source × GPU type, and
one vs two points, under the rule of optimizer/model/calibrated.py and the candidates beside it.

Run: python benchmarks/calibration_points.py [--markdown]

Protocol (everything held out by source):
- constants: leave-one-source-out (benchmarks/folds.py loso): a source's runs are
  predicted with constants fitted without it;
- variances of the rule (τ², β², σ²; optimizer.model.calibrated): estimated by the method of
  moments (`components`) from the uncalibrated held-out residuals of the OTHER sources, grouped
  by source × GPU × precision; the held-out source never informs its own;
- candidate rules: "full" (the previous rule: every layout gets the point's base efficiency),
  "shared" (kriging, slope variance 0) and "shared+slope" (kriging with the estimated slope
  variance). The rule reported as "nested" is, for each held-out source, the candidate with the
  most runs within ±10% over the other sources (ties: the simpler); every candidate is shown.

One point: for every source × GPU × precision with ≥ 2 decoder-LM training-throughput runs, its
first run (file order) is the user's measured point (`ccopt calibrate`:
optimizer.inputs.calibration.fit_efficiency, stored with its size factor); every other run of
the group is scored. Two points: groups with ≥ 3 runs of different size factors; the smallest
and the largest size factor are the measured runs, the others scored under one (small), one
(large) and both. Errors are |measured/predicted − 1| of the step time.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import Case, build_cases, predict  # noqa: E402
from fitting import assumptions_for  # noqa: E402
from folds import Folds, loso, step_ratio  # noqa: E402

from optimizer.calibrate.comm import FabricRun, fit_fabric  # noqa: E402
from optimizer.calibrate.points import step_split  # noqa: E402
from optimizer.errors import ConfigError  # noqa: E402
from optimizer.inputs.calibration import fit_efficiency  # noqa: E402
from optimizer.inputs.calibration_store import comm_of, curves_of, point_comm_key  # noqa: E402
from optimizer.model.calibrated import COMPONENTS, Components  # noqa: E402
from optimizer.model.setup import PerfAssumptions  # noqa: E402
from optimizer.model.step_time import microbatch_size_factor, training_step_time  # noqa: E402

CAL_BAND = 0.10
#: the candidate rules, simplest first (ties go to the simpler)
RULES = ("full", "shared", "shared+slope")
#: the previous rule as variances: all of a point's correction shared, none its layout's own
FULL = Components(shared=1.0, slope=0.0, own=0.0, length=COMPONENTS.length, noise=COMPONENTS.noise)
#: the smallest spread of log size factor a group's slope is estimated from
MIN_SXX = 0.01


@dataclass(frozen=True)
class Run:
    """A held-out training-throughput run: its case, fold, group and uncalibrated residual."""

    case: Case
    fold: str
    group: tuple[str, str, str]  # source, GPU, precision (+ " encoder" for encoders)
    log_ratio: float  # log(measured / predicted step), uncalibrated (held-out constants)
    x: float  # log size factor
    base: PerfAssumptions  # the fold's assumptions


def runs_of(folds: Folds, kinds: Sequence[str] = ("train_throughput",)) -> list[Run]:
    """The training-throughput runs (score kinds `kinds`: decoder LMs, and encoders apart) of
    every fold with a finite prediction."""
    out = []
    for name, (fit, results) in folds.items():
        base = assumptions_for(fit)
        for case, pred in results:
            if case.score_kind not in kinds or case.train is None or pred is None:
                continue
            setup, layout, _ = case.train
            x = math.log(microbatch_size_factor(case.spec, setup, layout, base))
            encoder = " encoder" if case.score_kind != "train_throughput" else ""
            group = (case.source, case.gpu.gpu_id, setup.precision + encoder)
            out.append(Run(case, name, group, math.log(step_ratio(case, pred)), x, base))
    return out


def components(runs: Sequence[Run]) -> dict[str, Components]:
    """The candidate rules' variances estimated from `runs` (method of moments, module doc of
    optimizer.model.calibrated): σ² the pooled within-group variance of the log residual, τ² the
    mean over groups of (group mean² − σ²/n), β² the mean over groups with spread in size of
    (OLS slope² − σ²/Sxx); floors 1e-4, 0."""
    groups: dict[tuple[str, str, str], list[Run]] = defaultdict(list)
    for r in runs:
        groups[r.group].append(r)
    multi = [g for g in groups.values() if len(g) >= 2]
    ss = sum(sum((r.log_ratio - statistics.fmean(x.log_ratio for x in g)) ** 2 for r in g) for g in multi)
    own = ss / sum(len(g) - 1 for g in multi)
    means = [(statistics.fmean(r.log_ratio for r in g), len(g)) for g in groups.values()]
    shared = max(1e-4, statistics.fmean(m * m - own / n for m, n in means))
    slopes = []
    for g in multi:
        mx, my = statistics.fmean(r.x for r in g), statistics.fmean(r.log_ratio for r in g)
        sxx = sum((r.x - mx) ** 2 for r in g)
        if sxx >= MIN_SXX:
            b = sum((r.x - mx) * (r.log_ratio - my) for r in g) / sxx
            slopes.append(b * b - own / sxx)
    slope = max(0.0, statistics.fmean(slopes)) if slopes else 0.0
    common = {"length": COMPONENTS.length, "noise": COMPONENTS.noise}
    return {
        "full": FULL,
        "shared": Components(shared=shared, slope=0.0, own=own, **common),
        "shared+slope": Components(shared=shared, slope=slope, own=own, **common),
    }


Point = dict[str, object]


def _point(run: Run) -> Point | None:
    """The stored run `ccopt calibrate` writes for a measured run (base efficiency, size factor,
    the model's split of its step and its fabric), or None when the run cannot be fitted
    (faster than the model at 100%, or below 0.1%)."""
    assert run.case.train is not None
    setup, layout, cluster = run.case.train
    measured = training_step_time(run.case.spec, setup, layout, cluster, run.base).time_s * math.exp(
        run.log_ratio
    )
    try:
        eff = fit_efficiency(run.case.spec, setup, layout, cluster, measured, run.base)
    except ConfigError:
        return None
    return {
        "gpu": run.case.gpu.gpu_id,
        "precision": setup.precision,
        "stack": run.case.stack,
        "efficiency": eff,
        "size_factor": math.exp(run.x),
        "split": step_split(run.case.spec, setup, layout, cluster, replace(run.base, efficiency=eff)),
        "fabric": {"gpus_per_node": cluster.gpus_per_node, "inter_node_gbps": cluster.inter_node_gbps},
        "measured": {"step_time_s": measured},
    }


def _error(run: Run, points: Sequence[Point] | None, comps: Components) -> float | None:
    """|measured/predicted − 1| of `run` with `points` stored (the store's own code:
    calibration_store.curves_of, comm_of; None: uncalibrated)."""
    if points is None:
        return abs(math.exp(run.log_ratio) - 1)
    assert run.case.train is not None
    key = (run.case.gpu.gpu_id, run.case.train[0].precision, run.case.stack)
    stored = [dict(p) for p in points]
    curves = curves_of(stored, comps)
    a = replace(
        run.base,
        calibrated_curves={key: curves[key]} if key in curves else {},
        calibrated_comm=comm_of(stored),
    )
    pred = predict(run.case, a)
    return None if pred is None else abs(step_ratio(run.case, pred) - 1)


Scores = dict[str, dict[tuple[str, str, str], list[tuple[float, float]]]]


def one_point(runs: Sequence[Run], comps: Callable[[str], dict[str, Components]]) -> tuple[Scores, dict]:
    """{rule: {group: [(uncalibrated error, calibrated error)]}} of the runs after the group's
    first run is stored, `comps(fold)` the fold's candidate variances; and {group: the measured
    run's own error after calibrating (rule shared)}."""
    groups: dict[tuple[str, str, str], list[Run]] = defaultdict(list)
    for r in runs:
        groups[r.group].append(r)
    out: Scores = {rule: defaultdict(list) for rule in RULES}
    own: dict = {}
    for group, items in groups.items():
        point = _point(items[0]) if len(items) >= 2 else None
        if point is None:
            continue
        candidates = comps(items[0].fold)
        own[group] = _error(items[0], [point], candidates["shared"])
        for r in items[1:]:
            e0 = _error(r, None, FULL)
            assert e0 is not None
            for rule in RULES:
                e = _error(r, [point], candidates[rule])
                if e is not None:
                    out[rule][group].append((e0, e))
    return out, own


def nested(scores: Scores) -> dict[tuple[str, str, str], list[tuple[float, float]]]:
    """For each held-out source, the scores of the candidate with the most runs within ±10% on
    the other sources (ties: the simpler rule)."""
    sources = {g[0] for g in scores[RULES[0]]}
    out = {}

    def share(rule: str, source: str) -> float:
        es = [e for g, v in scores[rule].items() if g[0] != source for _, e in v]
        return sum(e <= CAL_BAND for e in es) / len(es)

    for source in sorted(sources):
        best = max(RULES, key=lambda rule: (share(rule, source), -RULES.index(rule)))
        out.update({g: v for g, v in scores[best].items() if g[0] == source})
    return out


Table = dict[tuple[str, str, str], list[tuple[float, float]]]


def totals(table: Table) -> tuple[int, float, float, int, int]:
    """(runs, share within ±10%, median |error|, groups worse than uncalibrated, groups)."""
    es = [e for v in table.values() for _, e in v]
    worse = sum(
        statistics.median(e for _, e in v) > statistics.median(e0 for e0, _ in v) + 1e-12
        for v in table.values()
        if v
    )
    return len(es), sum(e <= CAL_BAND for e in es) / len(es), statistics.median(es), worse, len(table)


def _with_comm(items: Sequence[tuple[Run, Point]]) -> list[Point]:
    """The stored runs after `ccopt calibrate` fits their fabric's communication multiplier
    (optimizer.calibrate.comm.fit_fabric: runs of one fabric; others inform the slope)."""
    points = [dict(p, id=str(i)) for i, (_, p) in enumerate(items)]
    fabrics = {point_comm_key(p) for p in points}
    for fabric in fabrics:
        on = [(r, p) for (r, _), p in zip(items, points, strict=True) if point_comm_key(p) == fabric]
        runs = [FabricRun(str(p["id"]), *_model_of(r), float(p["measured"]["step_time_s"])) for r, p in on]  # type: ignore[index]
        others = [
            (float(p["size_factor"]), float(p["efficiency"])) for p in points if point_comm_key(p) != fabric
        ]  # type: ignore[arg-type]
        assert fabric is not None
        mu, effs = fit_fabric(runs, fabric, others, on[0][0].base)
        for p in points:
            if p["id"] in effs:
                p["comm"] = {"multiplier": mu, "efficiency": effs[str(p["id"])]}
    return points


def _model_of(run: Run) -> tuple:
    assert run.case.train is not None
    setup, layout, cluster = run.case.train
    return run.case.spec, setup, layout, cluster


def two_points(runs: Sequence[Run], comps: Callable[[str], dict[str, Components]], rule: str) -> list[dict]:
    """One row per group with ≥ 3 fittable runs of different size factors (module doc)."""
    groups: dict[tuple[str, str, str], list[tuple[Run, Point]]] = defaultdict(list)
    for r in runs:
        if (p := _point(r)) is not None:
            groups[r.group].append((r, p))
    rows = []
    for group, items in sorted(groups.items()):
        items.sort(key=lambda item: item[0].x)
        small, large, others = items[0], items[-1], items[1:-1]
        if len(items) < 3 or large[0].x - small[0].x < 0.01:
            continue
        c = comps(small[0].fold)[rule]
        both = _with_comm([small, large])
        ways = {
            "none": None,
            "one (small)": [small[1]],
            "one (large)": [large[1]],
            "two": both,
        }
        errs = {n: [e for r, _ in others if (e := _error(r, pts, c)) is not None] for n, pts in ways.items()}
        repro = [e for r, _ in (small, large) if (e := _error(r, ways["two"], c)) is not None]
        mu = [float(p["comm"]["multiplier"]) for p in both if "comm" in p]  # type: ignore[index]
        rows.append(
            {
                "group": " · ".join(group),
                "runs": len(items),
                "scored": len(errs["two"]),
                "reproduced": max(repro) if len(repro) == 2 else None,
                "comm": mu[0] if mu else 1.0,
                **{n: statistics.median(e) if e else None for n, e in errs.items()},
            }
        )
    return rows


def _pct(x: object) -> str:
    return "-" if not isinstance(x, float) else f"{100 * x:.1f}%"


def _table(head: list[str], body: list[list[str]], markdown: bool) -> list[str]:
    if markdown:
        rows = [head, ["---"] * len(head), *body]
        return ["| " + " | ".join(r) + " |" for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    return ["  ".join(x.ljust(w) for x, w in zip(row, widths, strict=True)) for row in [head, *body]]


def render(
    scores: Scores, chosen: dict, own: dict, rows: list[dict], est: dict[str, Components], markdown: bool
) -> str:
    """The one-point table per group, the candidates' totals, the two-point table."""
    h = "#### " if markdown else ""
    c = est["shared+slope"]
    lines = [
        f"{h}One measured point per source × GPU type (LOSO constants, nested variances)\n",
        f"variances on all sources: τ² = {c.shared:.4f}, σ² = {c.own:.4f}, β² = {c.slope:.4f} "
        f"(one point shares {c.shared / (c.shared + c.own + c.noise):.2f} of its log correction)\n",
    ]
    head = ["group", "runs scored", "median none", "median full", "median nested", "±10% none", "±10% nested"]
    body = []
    for g, v in sorted(chosen.items()):
        full = [e for _, e in scores["full"][g]]
        body.append(
            [
                " · ".join(g),
                str(len(v)),
                _pct(statistics.median(e0 for e0, _ in v)),
                _pct(statistics.median(full) if full else None),
                _pct(statistics.median(e for _, e in v)),
                _pct(sum(e0 <= CAL_BAND for e0, _ in v) / len(v)),
                _pct(sum(e <= CAL_BAND for _, e in v) / len(v)),
            ]
        )
    lines += _table(head, body, markdown)
    lines.append("")
    none = {g: [(e0, e0) for e0, _ in v] for g, v in chosen.items()}
    for label, table in [("none", none), *[(r, scores[r]) for r in RULES], ("nested", chosen)]:
        n, w, m, worse, k = totals(table)
        lines.append(
            f"{'- ' if markdown else ''}{label}: {n} runs, {_pct(w)} within ±10%, median |error| {_pct(m)}, "
            f"{worse} of {k} groups with a worse median than uncalibrated"
        )
    worst = max((e for e in own.values() if e is not None), default=0.0)
    lines.append(
        f"the measured point itself after calibrating: at most {_pct(worst)} off ({len(own)} groups)"
    )
    lines += ["", f"{h}Two measured points (smallest and largest size factor; rule shared+slope)\n"]
    names = ["none", "one (small)", "one (large)", "two"]
    head = ["group", "runs", "scored", "2-point repro (max)", "comm ×", *[f"median {n}" for n in names]]
    body = [
        [
            str(r["group"]),
            str(r["runs"]),
            str(r["scored"]),
            _pct(r["reproduced"]),
            f"{r['comm']:.2f}",
            *[_pct(r[n]) for n in names],
        ]
        for r in rows
    ]
    lines += _table(head, body, markdown)
    full = [r for r in rows if all(isinstance(r[n], float) for n in names)]
    better = sum(r["two"] <= min(r["one (small)"], r["one (large)"]) + 1e-12 for r in full)
    mean = sum(r["two"] <= (r["one (small)"] + r["one (large)"]) / 2 + 1e-12 for r in full)
    exact = sum(1 for r in rows if isinstance(r["reproduced"], float) and r["reproduced"] <= 0.01)
    lines += [
        "",
        f"{len(rows)} groups: both measured runs reproduced within 1% in {exact}; two points' median error "
        f"on the other runs ≤ the better single point in {better}, ≤ the mean of the two single "
        f"points' in {mean}",
    ]
    return "\n".join(lines)


def nested_components(runs: Sequence[Run]) -> Callable[[str], dict[str, Components]]:
    """fold -> the candidates' variances estimated without that fold's runs (cached)."""
    cache: dict[str, dict[str, Components]] = {}

    def of(fold: str) -> dict[str, Components]:
        if fold not in cache:
            cache[fold] = components([r for r in runs if r.fold != fold])
        return cache[fold]

    return of


def calibrated_predictions(
    folds: Folds,
    kinds: Sequence[str] = ("train_throughput", "train_throughput_encoder"),
    rule: str = "shared+slope",
) -> list[tuple[Case, float | None]]:
    """The held-out runs of `folds` other than each group's first, predicted after the first is
    stored under `rule` with variances estimated from the decoder-LM runs of the other folds
    (benchmarks/accuracy.py calibrated; fit_constants.calibrated_band_stats)."""
    comps = nested_components(runs_of(folds))
    runs = runs_of(folds, kinds)
    groups: dict[tuple[str, str, str], list[Run]] = defaultdict(list)
    for r in runs:
        groups[r.group].append(r)
    out: list[tuple[Case, float | None]] = []
    for items in groups.values():
        point = _point(items[0]) if len(items) >= 2 else None
        if point is None:
            out += [(r.case, None) for r in items[1:]]
            continue
        curves = curves_of([dict(point)], comps(items[0].fold)[rule])
        for r in items[1:]:
            out.append((r.case, predict(r.case, replace(r.base, calibrated_curves=dict(curves)))))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    cases, _ = build_cases()
    runs = runs_of(loso(cases))
    comps = nested_components(runs)
    scores, own = one_point(runs, comps)
    rows = two_points(runs, comps, "shared+slope")
    print(render(scores, nested(scores), own, rows, components(runs), args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
