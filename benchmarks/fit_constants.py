"""Fit the free constants of the model on the validation set; write optimizer/model/data/fitted.toml.

Run: python benchmarks/fit_constants.py [--dry-run] [--memory-only]

What is fitted (log-additive groups, never per case; optimizer/model/fitted.py reads them):
- training speed: a multiplier of achievable compute efficiency per
  all + GPU generation + generation × precision + stack + generation × precision × stack,
  and one global term of the size curve (`shape`: hidden size at half GEMM efficiency);
- serving speed: multipliers of decode HBM bandwidth (`serve`) and of compute efficiency
  (`serve_flops`), each per all + generation + serving stack + generation × stack; of the
  all-reduce bandwidth per GPU class (`serve_comm`, tp > 1 rows) and of MoE expert-GEMM
  efficiency (`serve_moe`, MoE rows);
- training memory: a multiplier of the activation term per stack.
Method: Gauss-Newton on log(measured/predicted) with the per-case sensitivity of the prediction
to the multiplier (finite difference), ridge penalties per group level (RIDGE), residuals
clipped at ±CLIP, each source weighted 1/sqrt(its cases) so that no table dominates.
Prediction bands: source-weighted quantiles (P10, P50, P90) of measured/predicted step time of
the leave-one-family-out residuals (SOURCE_FAMILIES: versions of one publisher's tables are left out
together) per GPU generation × precision and generation × precision × stack, with their case and
source counts (optimizer/model/bands.py shrinks them toward a wide prior).
MFU ceilings: the best measured MFU of a full-training run per generation × precision (of the
cases the constants are fitted on), with its case id (optimizer/model/ceilings.py).
The file records the date, the command, the case ids used and the sources.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import Case, build_cases, log_ratio, predict  # noqa: E402

from optimizer.model.bands import CALIBRATED_KEY, serve_band_key  # noqa: E402
from optimizer.model.fitted import (  # noqa: E402
    FAMILY_TABLES,
    FittedConstants,
    band_key,
    memory_features,
    serve_comm_features,
    serve_features,
    train_features,
)
from optimizer.model.setup import PerfAssumptions  # noqa: E402
from optimizer.model.stacks import stack_names  # noqa: E402
from optimizer.model.step_time import training_step_time  # noqa: E402

OUT = HERE.parent / "optimizer" / "model" / "data" / "fitted.toml"
RIDGE = {
    "all": 0.05,
    "gen": 1.0,
    "genprec": 1.0,
    "stack": 1.0,
    "cell": 2.0,
    "class": 0.3,
}
CLIP = 0.5  # |log residual| used in the regression (robustness to mis-recorded rows)
ITERATIONS = 4
STEP = 0.05  # finite-difference step of the log multiplier for the sensitivity
MIN_BAND_CASES = 3  # fewer held-out cases in a group: no data band (the coarser one applies)
FAMILIES = FAMILY_TABLES
#: sources left out together in cross-validation: versions and re-publications of one
#: publisher's benchmark tables (same recipes, same clusters, same reading convention)
SOURCE_FAMILIES = {
    "nemo-perf-24.07": "nvidia-nemo-recipes",
    "nemo-perf-25.02": "nvidia-nemo-recipes",
    "nemo-perf-25.04": "nvidia-nemo-recipes",
    "megatron-bridge-perf-25.11": "nvidia-nemo-recipes",
    "dgxc-benchmarking-25.02": "nvidia-nemo-recipes",
    "trtllm-perf-overview-00f3768": "trtllm-perf",
    "trtllm-perf-v0.17": "trtllm-perf",
    "trtllm-perf-v0.6.1": "trtllm-perf",
    "trtllm-perf-v0.9.0": "trtllm-perf",
    "megatron-lm-readme-2021-04": "megatron-lm-readme",
    "megatron-lm-readme-2024-07": "megatron-lm-readme",
    "torchtune-readme": "torchtune-docs",
    "torchtune-docs-tutorials": "torchtune-docs",
}


def source_family(source: str) -> str:
    """The family a source is left out with (itself when it has none)."""
    return SOURCE_FAMILIES.get(source, source)


def families(case: Case) -> list[str]:
    """Which fitted groups a case informs ([]: scored only)."""
    if case.kind == "train_throughput":
        return ["train", "shape"]
    if case.kind == "train_memory":
        return ["memory"]
    if case.kind == "serve_throughput":
        assert case.serve is not None
        out = ["serve", "serve_flops"]
        if case.serve[1] > 1:
            out.append("serve_comm")
        if case.spec.is_moe:
            out.append("serve_moe")
        return out
    return []


def family(case: Case) -> str | None:
    """The main fitted group of a case (None: scored only)."""
    fams = families(case)
    return fams[0] if fams else None


def features(case: Case, fam: str | None = None) -> list[str]:
    fam = fam or family(case)
    if fam == "train":
        assert case.train is not None
        setup = case.train[0]
        return train_features(case.gpu, setup.precision, setup.stack)
    if fam in ("shape", "serve_moe"):
        return ["all"]
    if fam in ("serve", "serve_flops"):
        assert case.serve is not None
        return serve_features(case.gpu, case.serve[0].stack)
    if fam == "serve_comm":
        return serve_comm_features(case.gpu)
    assert case.train is not None
    setup, layout, _ = case.train
    return memory_features(setup.stack, setup.method, layout.checkpointing)


def _level(feature: str) -> str:
    return feature.split(":", 1)[0]


def assumptions_for(fit: FittedConstants) -> PerfAssumptions:
    return PerfAssumptions(fitted=fit)


def _with(fit: FittedConstants, fam: str, coefs: dict[str, float]) -> FittedConstants:
    return replace(fit, **{fam: coefs})


def _bump(fit: FittedConstants, fam: str, by: float) -> FittedConstants:
    """`fit` with every case of the family scaled by exp(by): its shared term(s) bumped (the
    memory family has no shared term: every stack's term is bumped)."""
    coefs = dict(getattr(fit, fam))
    shared = [f"stack:{s}" for s in stack_names()] if fam == "memory" else ["all"]
    for key in shared:
        coefs[key] = coefs.get(key, 0.0) + by
    return _with(fit, fam, coefs)


def fit_family(cases: Sequence[Case], fit: FittedConstants, fam: str) -> FittedConstants:
    """One Gauss-Newton ridge step of one family's coefficients."""
    chosen = [c for c in cases if fam in families(c)]
    if not chosen:
        return fit
    a0, a1 = assumptions_for(fit), assumptions_for(_bump(fit, fam, STEP))
    per_source = Counter(c.source for c in chosen)
    rows: list[tuple[list[str], float, float, float]] = []
    for c in chosen:
        p0, p1 = predict(c, a0), predict(c, a1)
        if p0 is None or p1 is None:
            continue
        sens = math.log(p1 / p0) / STEP
        if not c.speed_like:
            sens = -sens
        r = max(-CLIP, min(CLIP, log_ratio(c, p0)))
        if abs(sens) < 1e-6:
            continue  # the term does not move this case
        rows.append((features(c, fam), r, sens, 1.0 / math.sqrt(per_source[c.source])))
    if not rows:
        return fit
    names = sorted({f for feats, *_ in rows for f in feats})
    index = {f: i for i, f in enumerate(names)}
    x = np.zeros((len(rows), len(names)))
    y = np.zeros(len(rows))
    w = np.zeros(len(rows))
    for i, (feats, r, sens, weight) in enumerate(rows):
        for f in feats:
            x[i, index[f]] = sens
        y[i], w[i] = r, weight
    current = getattr(fit, fam)
    c0 = np.array([current.get(f, 0.0) for f in names])
    lam = np.array([RIDGE[_level(f)] for f in names])
    # minimise Σ w (y − X δ)² + Σ λ (c0 + δ)²
    xtw = x.T * w
    lhs = xtw @ x + np.diag(lam)
    rhs = xtw @ y - lam * c0
    delta = np.linalg.solve(lhs, rhs)
    coefs = dict(current)
    for f, d in zip(names, delta, strict=True):
        coefs[f] = float(coefs.get(f, 0.0) + d)
    return _with(fit, fam, coefs)


def fit_constants(cases: Sequence[Case], iterations: int = ITERATIONS) -> FittedConstants:
    """Fitted constants from `cases` only (the held-out source is simply not in `cases`)."""
    fit = FittedConstants(ceilings=ceilings_from(cases))
    for _ in range(iterations):
        for fam in FAMILIES:
            fit = fit_family(cases, fit, fam)
    return fit


def measured_mfu(case: Case) -> float | None:
    """The MFU a training-throughput case measured, in the model's convention (model FLOPs per
    token × measured tokens/s ÷ dense peak of its precision): independent of any fit (the
    model's MFU times the measured/predicted speed of the same prediction)."""
    if case.kind != "train_throughput" or case.train is None:
        return None
    a = PerfAssumptions(use_fitted=False, efficiency=0.5)  # any fixed model: the ratio cancels it
    pred = predict(case, a)
    if pred is None:
        return None
    setup, layout, cluster = case.train
    return training_step_time(case.spec, setup, layout, cluster, a).mfu * math.exp(log_ratio(case, pred))


def ceilings_from(cases: Sequence[Case]) -> dict[str, tuple[float, int, str]]:
    """Best measured MFU of a full-training decoder run per generation × precision:
    {key: (mfu, runs, case id)}."""
    best: dict[str, tuple[float, int, str]] = {}
    for c in cases:
        if c.kind != "train_throughput" or c.encoder or c.train is None or c.train[0].method != "full":
            continue
        mfu = measured_mfu(c)
        if mfu is None or not math.isfinite(mfu):
            continue
        key = band_key(c.gpu.generation, c.train[0].precision)
        top, runs, case_id = best.get(key, (0.0, 0, ""))
        best[key] = (mfu, runs + 1, c.row.case_id) if mfu > top else (top, runs + 1, case_id)
    return best


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


def band_keys(case: Case) -> list[str]:
    """The band groups a case informs: training — generation × precision, and × stack;
    serving — generation, and × serving stack (optimizer/model/bands.py)."""
    gen = case.gpu.generation
    if case.serve is not None:
        return [serve_band_key(gen), serve_band_key(gen, case.stack)]
    assert case.train is not None
    precision = case.train[0].precision
    return [band_key(gen, precision), band_key(gen, precision, case.stack)]


def step_ratio(case: Case, predicted: float) -> float:
    """measured / predicted step time (inverse of the speed ratio)."""
    return math.exp(-log_ratio(case, predicted))


def calibrated_band_stats(folds: Folds) -> dict[str, tuple[float, float, float, int, int]]:
    """{CALIBRATED_KEY: (P10, P50, P90, cases, sources)} of held-out training runs predicted
    after one measured point of their source × GPU type × precision
    (calibration_points.calibrated_predictions: the rule of optimizer/model/calibrated.py, its
    variances estimated without the fold): the band of a plan on a GPU type the user calibrated."""
    from calibration_points import calibrated_predictions  # noqa: PLC0415 (it imports this module)

    items = [(c.source, step_ratio(c, p)) for c, p in calibrated_predictions(folds) if p is not None]
    if len(items) < MIN_BAND_CASES:
        return {}
    q10, q50, q90 = source_weighted_quantiles(items, (0.1, 0.5, 0.9))
    return {CALIBRATED_KEY: (q10, q50, q90, len(items), len({s for s, _ in items}))}


def source_weighted_quantiles(items: Sequence[tuple[str, float]], qs: Sequence[float]) -> list[float]:
    """Quantiles of the values of (source, value) items, each source weighing the same in total
    (a source of 200 runs must not set the band a new source is held to): the weighted
    empirical CDF, interpolated between the mid-points of the sorted values' weights."""
    per_source = Counter(src for src, _ in items)
    pairs = sorted((v, 1.0 / per_source[src]) for src, v in items)
    values = np.array([v for v, _ in pairs])
    weights = np.array([w for _, w in pairs])
    mids = (np.cumsum(weights) - weights / 2) / weights.sum()
    return [float(np.interp(q, mids, values)) for q in qs]


def bands_from(
    results: Sequence[tuple[Case, float | None]],
) -> dict[str, tuple[float, float, float, int, int]]:
    """(P10, P50, P90, cases, sources) of measured/predicted step time per band group."""
    groups: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for case, pred in results:
        if pred is None or case.kind not in ("train_throughput", "serve_throughput", "serve_latency"):
            continue
        ratio = step_ratio(case, pred)
        for key in band_keys(case):
            groups[key].append((case.source, ratio))
    out = {}
    for key, items in groups.items():
        if len(items) < MIN_BAND_CASES:
            continue
        q10, q50, q90 = source_weighted_quantiles(items, (0.1, 0.5, 0.9))
        out[key] = (q10, q50, q90, len(items), len({s for s, _ in items}))
    return out


def _toml_table(name: str, values: dict[str, float]) -> list[str]:
    lines = [f"[{name}]"]
    lines += [f'"{k}" = {v:.6f}' for k, v in sorted(values.items())]
    return lines + [""]


def write_fitted(
    fit: FittedConstants,
    cases: Sequence[Case],
    bands: dict[str, tuple[float, float, float, int, int]],
    path: Path = OUT,
) -> None:
    used = sorted(c.row.case_id for c in cases if family(c) is not None)
    sources = sorted({c.source for c in cases})
    lines = [
        "# Fitted constants of the ccopt model: written by benchmarks/fit_constants.py.",
        "# Do not edit by hand; rerun the script. Log-multipliers by feature (see",
        "# optimizer/model/fitted.py); bands = measured/predicted step-time quantiles of the",
        "# leave-one-family-out residuals per generation/precision[/stack]; ceilings = best",
        "# measured full-training MFU per generation/precision.",
        "",
        "[meta]",
        f'date = "{dt.date.today().isoformat()}"',
        'command = "python benchmarks/fit_constants.py"',
        f"ridge = {{{', '.join(f'{k} = {v}' for k, v in RIDGE.items())}}}",
        f"clip = {CLIP}",
        f"iterations = {ITERATIONS}",
        f"sources = [{', '.join(repr(s).replace(chr(39), chr(34)) for s in sources)}]",
        f"cases = {len(used)}",
        "case_ids = [" + ", ".join(f'"{c}"' for c in used) + "]",
        "",
    ]
    for table in FAMILY_TABLES:
        lines += _toml_table(table, getattr(fit, table))
    lines.append("[bands]")
    for key, (lo, mid, hi, n, k) in sorted(bands.items()):
        lines.append(
            f'"{key}" = {{p10 = {lo:.4f}, p50 = {mid:.4f}, p90 = {hi:.4f}, cases = {n}, sources = {k}}}'
        )
    lines += ["", "[ceilings]"]
    for key, (mfu, runs, case_id) in sorted(fit.ceilings.items()):
        lines.append(f'"{key}" = {{mfu = {mfu:.4f}, runs = {runs}, case = "{case_id}"}}')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def refit_memory(cases: Sequence[Case], path: Path = OUT) -> FittedConstants:
    """Refit the memory table alone and rewrite only it (and the ridge levels) in `path`: the
    training-memory prediction depends on no other table, and the others keep their fit."""
    fit = FittedConstants()
    for _ in range(ITERATIONS):
        fit = fit_family(cases, fit, "memory")
    text = path.read_text(encoding="utf-8")
    start = text.index("[memory]\n")
    end = text.index("\n[", start) + 1
    text = text[:start] + "\n".join(_toml_table("memory", fit.memory)) + "\n" + text[end:]
    ridge = f"ridge = {{{', '.join(f'{k} = {v}' for k, v in RIDGE.items())}}}"
    text = re.sub(r"^ridge = .*$", ridge, text, count=1, flags=re.M)
    path.write_text(text, encoding="utf-8")
    return fit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="fit but do not write the file")
    parser.add_argument("--memory-only", action="store_true", help="refit and rewrite the memory table only")
    args = parser.parse_args(argv)
    cases, _ = build_cases()
    if args.memory_only:
        fit = refit_memory(cases)
        print(f"memory: {len(fit.memory)} terms written to {OUT}")
        return 0
    fit = fit_constants(cases)
    folds = lofo(cases, progress=lambda s: print(f"  fold without {s}", file=sys.stderr))
    residuals = [item for _, results in folds.values() for item in results]
    bands = bands_from(residuals)
    bands.update(calibrated_band_stats(folds))
    print(
        f"fitted on {sum(family(c) is not None for c in cases)} cases from "
        f"{len({c.source for c in cases})} sources: "
        + ", ".join(f"{len(getattr(fit, t))} {t}" for t in FAMILY_TABLES)
        + f" terms, {len(bands)} bands, {len(fit.ceilings)} ceilings"
    )
    if not args.dry_run:
        write_fitted(fit, cases, bands)
        print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
