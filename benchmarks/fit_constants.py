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
Prediction bands (folds.py): split conformal across sources, not rows — a source (its publisher's
versions once: SOURCE_FAMILIES) is the exchangeable unit; on the leave-one-family-out residuals
(log measured/predicted time) per GPU generation × precision (decoder-LM training) and per
generation (serving), a group's centre, spread and conformal quantile (its own with >= 4 sources,
else the pooled spread and the quantile of every thin group: `any`); the band of measured /
predicted peak memory the same way on the leave-one-source-out memory predictions. The point of
a training step carries its band's P50 (optimizer/model/bands.py).
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
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from calibration_points import calibrated_predictions  # noqa: E402
from cases import Case, build_cases  # noqa: E402
from fitting import (  # noqa: E402
    CLIP,
    ITERATIONS,
    RIDGE,
    family,
    fit_constants,
    fit_family,
    fitted_cases,
    source_family,
)
from folds import Folds, Unit, conformal_bands, held_out_bands, lofo, step_ratio  # noqa: E402
from memory_accuracy import memory_loso  # noqa: E402
from new_sources import discrepancy, load_once_scored, load_once_scored_memory, widen, widen_memory  # noqa: E402

from optimizer.model.bands import (  # noqa: E402
    CALIBRATED_KEY,
    MEMORY_KEY,
    POOLED_KEY,
    POOLED_SERVE_KEY,
    SERVE_PREFIX,
    serve_band_key,
)
from optimizer.model.fitted import (  # noqa: E402
    FAMILY_TABLES,
    FittedConstants,
    band_key,
)

OUT = HERE.parent / "optimizer" / "model" / "data" / "fitted.toml"
MIN_BAND_CASES = 3  # fewer held-out calibrated cases: no calibrated band (the prior applies)


def band_unit(case: Case) -> str:
    """The exchangeable unit of the band's calibration: the case's source, its publisher's
    versions counted once (fitting.SOURCE_FAMILIES: they share recipes, clusters and reading)."""
    return source_family(case.source)


def band_group(case: Case) -> str | None:
    """The band group of a case: training — GPU generation × precision ("hopper/16"); serving —
    the generation ("serve:hopper"); None: not a throughput or latency case."""
    if case.serve is not None and case.kind in ("serve_throughput", "serve_latency"):
        return serve_band_key(case.gpu.generation)
    if case.train is not None and case.score_kind == "train_throughput":  # decoder LMs
        return band_key(case.gpu.generation, case.train[0].precision)
    return None


def _banded(results: Sequence[tuple[Case, float | None]], serving: bool) -> list[tuple[Case, float, Unit]]:
    """(case, prediction, (unit, group, log measured/predicted time)) of the predicted training
    (or serving) cases of `results` that have a band group."""
    out = []
    for case, pred in results:
        group = band_group(case)
        if pred is None or group is None or group.startswith(SERVE_PREFIX) != serving:
            continue
        out.append((case, pred, (band_unit(case), group, math.log(step_ratio(case, pred)))))
    return out


def band_units(results: Sequence[tuple[Case, float | None]], serving: bool = False) -> list[Unit]:
    """(unit, group, log measured/predicted time) of held-out predictions of training (or
    serving) cases."""
    return [u for _, _, u in _banded(results, serving)]


def held_out_checks(
    results: Sequence[tuple[Case, float | None]], serving: bool = False
) -> list[tuple[Case, float, bool]]:
    """(case, its prediction moved to the P50 of its held-out band, whether the measured time
    lies in that band's P10–P90) for the held-out training (or serving) predictions `results`:
    every band from the other sources' residuals alone (folds.held_out_bands)."""
    chosen = _banded(results, serving)
    bands = held_out_bands([u for _, _, u in chosen])
    out = []
    for (case, pred, (_, _, r)), (lo, mid, hi) in zip(chosen, bands, strict=True):
        f = math.exp(mid)  # a multiplier of time: a speed prediction is divided by it
        out.append((case, pred / f if case.speed_like else pred * f, lo <= r <= hi))
    return out


def centred(results: Sequence[tuple[Case, float | None]]) -> list[tuple[Case, float | None]]:
    """`results` with every training and serving prediction moved to its held-out band's P50
    (what the packaged model does with its own bands: the point is the P50)."""
    moved = {id(c): p for serving in (False, True) for c, p, _ in held_out_checks(results, serving)}
    return [(c, moved.get(id(c), p)) for c, p in results]


def bands_from(
    results: Sequence[tuple[Case, float | None]],
) -> dict[str, tuple[float, float, float, int, int]]:
    """(P10, P50, P90, cases, sources) of measured/predicted time per band group, training and
    serving, from held-out predictions (conformal across sources: folds.conformal_bands)."""
    out: dict[str, tuple[float, float, float, int, int]] = {}
    for serving in (False, True):
        units = band_units(results, serving)
        if len({u for u, _, _ in units}) >= 2:
            pooled = POOLED_SERVE_KEY if serving else POOLED_KEY
            out.update(conformal_bands(units, pooled))
    return out


def memory_units(held: Sequence[tuple[Case, float]]) -> list[Unit]:
    """(unit, MEMORY_KEY, log measured/predicted peak memory) of held-out memory predictions."""
    return [(band_unit(c), MEMORY_KEY, math.log(c.measured / p)) for c, p in held]


def memory_band(held: Sequence[tuple[Case, float]]) -> dict[str, tuple[float, float, float, int, int]]:
    """{MEMORY_KEY: (P10, P50, P90, rows, sources)} of measured/predicted peak memory per GPU,
    conformal across sources on the leave-one-source-out memory predictions (memory_accuracy)."""
    units = memory_units(held)
    if len({u for u, _, _ in units}) < 2:
        return {}
    return {MEMORY_KEY: conformal_bands(units, MEMORY_KEY + ":any")[MEMORY_KEY]}


def calibrated_band_stats(folds: Folds) -> dict[str, tuple[float, float, float, int, int]]:
    """{CALIBRATED_KEY: (P10, P50, P90, cases, sources)} of held-out training runs predicted
    after one measured point of their source × GPU type × precision
    (calibration_points.calibrated_predictions: the rule of optimizer/model/calibrated.py, its
    variances estimated without the fold): the band of a plan on a GPU type the user calibrated."""
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


def _toml_table(name: str, values: dict[str, float]) -> list[str]:
    lines = [f"[{name}]"]
    lines += [f'"{k}" = {v:.6f}' for k, v in sorted(values.items())]
    return lines + [""]


def write_fitted(
    fit: FittedConstants,
    cases: Sequence[Case],
    bands: dict[str, tuple[float, float, float, int, int]],
    path: Path = OUT,
    new_source_d: float = 0.0,
    memory_d: float = 0.0,
) -> None:
    used = sorted(c.row.case_id for c in cases if family(c) is not None)
    sources = sorted({c.source for c in cases})
    lines = [
        "# Fitted constants of the ccopt model: written by benchmarks/fit_constants.py.",
        "# Do not edit by hand; rerun the script. Log-multipliers by feature (see",
        "# optimizer/model/fitted.py); bands = P10/P50/P90 of measured/predicted time, split",
        "# conformal across sources on the leave-one-family-out residuals per generation/precision",
        "# (serve:generation; memory; any = groups under 4 sources); ceilings = best measured",
        "# full-training MFU per generation/precision. Training bands are widened for new sources",
        "# in quadrature (new_source_discrepancy: the once-scored kept-aside collections,",
        "# benchmarks/once_scored.csv), the memory band by memory_new_source_discrepancy (their",
        "# peak-memory rows, benchmarks/once_scored_memory.csv).",
        "",
        "[meta]",
        f'date = "{dt.date.today().isoformat()}"',
        'command = "python benchmarks/fit_constants.py"',
        f"ridge = {{{', '.join(f'{k} = {v}' for k, v in RIDGE.items())}}}",
        f"clip = {CLIP}",
        f"iterations = {ITERATIONS}",
        f"new_source_discrepancy = {new_source_d}  # log half-width -> hypot(half, this), new_sources.py",
        f"memory_new_source_discrepancy = {memory_d}  # the same for the memory band, new_sources.py",
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
    cases = fitted_cases(build_cases()[0])  # fitting.SCORED_NOT_FITTED: scored, not fitted
    if args.memory_only:
        fit = refit_memory(cases)
        print(f"memory: {len(fit.memory)} terms written to {OUT}")
        return 0
    fit = fit_constants(cases)
    folds = lofo(cases, progress=lambda s: print(f"  fold without {s}", file=sys.stderr))
    residuals = [item for _, results in folds.values() for item in results]
    # the training bands widened for sources the model was never shaped on (new_sources.py)
    new_source_d = discrepancy(load_once_scored())
    bands = widen(bands_from(residuals), new_source_d)
    bands.update(calibrated_band_stats(folds))
    # the memory band widened the same way, with the once-scored peak-memory rows' own d
    memory_d = discrepancy(load_once_scored_memory())
    bands.update(widen_memory(memory_band(memory_loso(cases)), memory_d))
    print(
        f"fitted on {sum(family(c) is not None for c in cases)} cases from "
        f"{len({c.source for c in cases})} sources: "
        + ", ".join(f"{len(getattr(fit, t))} {t}" for t in FAMILY_TABLES)
        + f" terms, {len(bands)} bands, {len(fit.ceilings)} ceilings"
    )
    if not args.dry_run:
        write_fitted(fit, cases, bands, new_source_d=new_source_d, memory_d=memory_d)
        print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
