"""Accuracy of the model on the validation set: leave-one-source-out (headline), in-sample,
after one calibration point per GPU type, and the coverage of the P10–P90 interval.

Run: python benchmarks/accuracy.py [--markdown] [--csv OUT]

- LOSO: for each source, the constants are fitted (benchmarks/fit_constants.py) on every other
  source and the source's cases are predicted; the held-out source never enters its own fit.
- in-sample: constants fitted on all sources (what optimizer/model/data/fitted.toml holds).
- calibrated: in each LOSO fold, for every GPU type × precision of the held-out source's training
  throughput cases, its first case (file order) is the user's one measured point
  (`ccopt calibrate`: optimizer.inputs.calibration.fit_efficiency); the others are scored.
- coverage: the share of held-out training-throughput cases whose measured step time lies in
  the P10–P90 band built from the other sources' LOSO residuals (stack × GPU class).
Bands: training ±15%, serving ±20%, calibrated training ±10%. Mapping conventions: cases.py.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import BANDS, Case, build_cases, predict  # noqa: E402
from fit_constants import (  # noqa: E402
    assumptions_for,
    fit_constants,
    interval_key_parts,
    intervals_from,
    loso,
    step_ratio,
)

from optimizer.errors import ConfigError  # noqa: E402
from optimizer.inputs.calibration import fit_efficiency  # noqa: E402
from optimizer.model.fitted import FittedConstants  # noqa: E402
from optimizer.model.step_time import training_step_time  # noqa: E402

#: scored families: training throughput of decoder LMs (headline) and of encoders (BERT) apart
KINDS = ("train_throughput", "train_throughput_encoder", "train_memory", "serve_throughput", "serve_latency")
CAL_BAND = 0.10
Scored = list[tuple[Case, float | None]]


def _errors(results: Scored) -> list[tuple[Case, float]]:
    return [(c, p / c.measured - 1) for c, p in results if p is not None]


def summary(results: Scored, band: float | None = None) -> tuple[int, float | None, float | None]:
    """(cases, share within band, median |error|)."""
    errs = _errors(results)
    if not errs:
        return 0, None, None
    within = [abs(e) <= (band if band is not None else BANDS[c.score_kind]) + 1e-12 for c, e in errs]
    return len(errs), sum(within) / len(within), statistics.median(abs(e) for _, e in errs)


def calibrated(folds: dict[str, tuple[FittedConstants, Scored]]) -> Scored:
    """Held-out training-throughput cases after one calibration point per GPU type × precision."""
    out: Scored = []
    for fit, results in folds.values():
        groups: dict[tuple[str, str, str], list[tuple[Case, float | None]]] = defaultdict(list)
        for case, pred in results:
            if case.kind == "train_throughput" and pred is not None:
                assert case.train is not None  # encoders calibrate on an encoder point
                groups[(case.score_kind, case.gpu.gpu_id, case.train[0].precision)].append((case, pred))
        base = assumptions_for(fit)
        for (_, gpu_id, precision), items in groups.items():
            ref, ref_pred = items[0]
            assert ref.train is not None
            setup, layout, cluster = ref.train
            step = training_step_time(ref.spec, setup, layout, cluster, base).time_s
            measured_step = step * step_ratio(ref, ref_pred)
            try:
                eff = fit_efficiency(ref.spec, setup, layout, cluster, measured_step, base)
            except ConfigError:
                out += [(c, None) for c, _ in items[1:]]
                continue
            a = replace(base, calibrated={(gpu_id, precision): eff})
            out += [(c, predict(c, a)) for c, _ in items[1:]]
    return out


def coverage(
    folds: dict[str, tuple[FittedConstants, Scored]], kinds: tuple[str, ...] = ("train_throughput",)
) -> tuple[int, float | None]:
    """(cases, share inside the nominal 80% band) of held-out training-throughput cases of the
    scored families `kinds` (default: decoder LMs)."""
    inside = total = 0
    for source, (_, results) in folds.items():
        others = [item for s, (_, res) in folds.items() if s != source for item in res]
        bands = intervals_from(others)
        for case, pred in results:
            if case.score_kind not in kinds or pred is None:
                continue
            stack, cls = interval_key_parts(case)
            key = next((k for k in (f"{stack}/{cls}", f"{stack}/*", f"*/{cls}", "*/*") if k in bands), None)
            if key is None:
                continue
            lo, hi, _ = bands[key]
            total += 1
            inside += lo <= step_ratio(case, pred) <= hi
    return total, (inside / total if total else None)


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:.0%}"


def _table(headers: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        return "\n".join(
            ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
            + ["| " + " | ".join(r) + " |" for r in rows]
        )
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    fmt = "  ".join(f"{{:{w}}}" for w in widths)
    return "\n".join(
        [fmt.format(*headers), fmt.format(*("-" * w for w in widths))] + [fmt.format(*r) for r in rows]
    )


def _cells(results: Scored, band: float | None = None) -> list[str]:
    n, within, med = summary(results, band)
    return [str(n), _pct(within), _pct(med)]


def report(
    cases: Sequence[Case],
    folds: dict[str, tuple[FittedConstants, Scored]],
    insample: Scored,
    cal: Scored,
    cover: dict[str, tuple[int, float | None]],
    skipped: int,
    markdown: bool,
) -> str:
    h = "### " if markdown else ""
    held = [item for _, res in folds.values() for item in res]
    lines = [
        f"{h}Accuracy: {len(cases)} cases from {len(folds)} sources ({skipped} rows not mappable)\n",
        f"{h}Overall\n",
    ]
    rows = []
    for kind in KINDS:
        lo = [i for i in held if i[0].score_kind == kind]
        ins = [i for i in insample if i[0].score_kind == kind]
        rows.append([kind, f"±{BANDS[kind]:.0%}", *_cells(lo), *_cells(ins)[1:]])
    lines.append(
        _table(
            [
                "kind",
                "band",
                "cases",
                "LOSO within",
                "LOSO median |err|",
                "in-sample within",
                "in-sample median |err|",
            ],
            rows,
            markdown,
        )
    )
    for label, kinds in (
        ("decoder LMs", ("train_throughput",)),
        ("all incl. encoders", ("train_throughput", "train_throughput_encoder")),
    ):
        sub = [i for i in cal if i[0].score_kind in kinds]
        n, w, m = summary(sub, CAL_BAND)
        n15, w15, _ = summary(sub)
        lines.append(
            f"\ncalibrated, {label} (one point per GPU type × precision, LOSO "
            f"constants): {n} training-throughput cases, {_pct(w)} within ±10%, "
            f"{_pct(w15)} within ±15%, median |error| {_pct(m)}"
        )
    for label, (n, share) in cover.items():
        lines.append(
            f"P10–P90 interval coverage of held-out training-throughput cases, {label}: "
            f"{_pct(share)} of {n} (nominal 80%)"
        )
    lines.append("")
    lines.append(f"{h}Per source (LOSO | in-sample)\n")
    rows = []
    by_src_ins: dict[str, Scored] = defaultdict(list)
    for item in insample:
        by_src_ins[item[0].source].append(item)
    for source, (_, res) in sorted(folds.items()):
        for kind in KINDS:
            lo = [i for i in res if i[0].score_kind == kind]
            if not lo:
                continue
            ins = [i for i in by_src_ins[source] if i[0].score_kind == kind]
            bias = [e for _, e in _errors(lo)]
            rows.append(
                [
                    source,
                    kind,
                    *_cells(lo),
                    f"{statistics.median(bias):+.0%}" if bias else "–",
                    *_cells(ins)[1:],
                ]
            )
    lines.append(
        _table(
            [
                "source",
                "kind",
                "cases",
                "LOSO within",
                "LOSO median |err|",
                "LOSO bias",
                "in-sample within",
                "in-sample median |err|",
            ],
            rows,
            markdown,
        )
    )
    return "\n".join(lines)


def write_csv(held: Scored, insample: Scored, path: Path) -> None:
    ins = {id(c): p for c, p in insample}
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "case_id",
                "source",
                "kind",
                "metric",
                "gpu",
                "stack",
                "measured",
                "loso_predicted",
                "loso_error",
                "insample_predicted",
            ]
        )
        for c, p in held:
            q = ins.get(id(c))
            w.writerow(
                [
                    c.row.case_id,
                    c.source,
                    c.score_kind,
                    c.row.metric,
                    c.gpu.gpu_id,
                    c.stack,
                    f"{c.measured:.6g}",
                    "" if p is None else f"{p:.6g}",
                    "" if p is None else f"{p / c.measured - 1:+.4f}",
                    "" if q is None else f"{q:.6g}",
                ]
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--csv", type=Path, metavar="OUT", help="per-case predictions")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    cases, skipped = build_cases()
    folds = loso(cases)
    fit = fit_constants(cases)
    a = assumptions_for(fit)
    insample = [(c, predict(c, a)) for c in cases]
    cal = calibrated(folds)
    cover = {
        "decoder LMs": coverage(folds),
        "all incl. encoders": coverage(folds, ("train_throughput", "train_throughput_encoder")),
    }
    print(report(cases, folds, insample, cal, cover, sum(len(v) for v in skipped.values()), args.markdown))
    print(f"\nran in {time.perf_counter() - start:.1f} s")
    if args.csv:
        write_csv([i for _, r in folds.values() for i in r], insample, args.csv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
