"""Accuracy of the model on the validation set: source-weighted leave-one-family-out (headline),
pooled leave-one-source-out, in-sample, after one calibration point per GPU type, the coverage
of the P10–P90 band, and the sources kept aside from the fit, scored once.

Run: python benchmarks/accuracy.py [--markdown] [--csv OUT] [--aside]

- LOFO (headline): for each source family (fitting.SOURCE_FAMILIES: NeMo 24.07/25.02/
  25.04, Megatron-Bridge and DGX Cloud recipes are one family; TensorRT-LLM versions one), the
  constants are fitted on every other family and the family's cases predicted. Source-weighted:
  each source counts once (its share within the band, its median |error|), whatever its rows.
- LOSO: for each source, the constants are fitted (benchmarks/fit_constants.py) on every other
  source and the source's cases are predicted; the held-out source never enters its own fit.
- in-sample: constants fitted on all sources (what optimizer/model/data/fitted.toml holds).
- calibrated: in each LOSO fold, for every GPU type × precision of the held-out source's training
  throughput cases, its first case (file order) is the user's one measured point
  (`ccopt calibrate`, the rule of optimizer/model/calibrated.py with variances estimated without
  the fold: benchmarks/calibration_points.py); the others are scored.
- coverage: the share of held-out training-throughput cases whose measured step time lies in
  the P10–P90 band (optimizer/model/bands.py: generation × precision × stack, shrunk toward the
  prior) built from the other families' LOFO residuals; source-weighted, overall and per GPU
  generation group.
- peak memory (memory_accuracy.py): its headline is source-weighted leave-one-source-out within
  ±15% and the source-weighted median signed error, in the metric each source reports.
- aside (--aside): benchmarks/validation/aside/ (sources collected after the fit was frozen)
  predicted with the packaged constants and bands, scored once.
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

from calibration_points import calibrated_predictions  # noqa: E402
from cases import BANDS, Case, build_cases, predict  # noqa: E402
from fit_constants import (  # noqa: E402
    band_group,
    bands_from,
    centred,
    held_out_checks,
    source_weighted_quantiles,
)
from fitting import assumptions_for, fit_constants  # noqa: E402
from folds import Folds, lofo, loso, step_ratio  # noqa: E402
from load import ASIDE_FOLDERS  # noqa: E402
from memory_accuracy import section as memory_section  # noqa: E402

from optimizer.model.bands import band_for  # noqa: E402
from optimizer.model.fitted import FittedConstants, load_fitted  # noqa: E402
from optimizer.model.setup import PerfAssumptions  # noqa: E402

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
    """Held-out training-throughput cases after one calibration point per source × GPU type ×
    precision (benchmarks/calibration_points.py: the rule of optimizer/model/calibrated.py, its
    variances estimated without the held-out fold)."""
    return calibrated_predictions(folds)


def source_weighted(
    results: Scored, band: float | None = None
) -> tuple[int, int, float | None, float | None]:
    """(cases, sources, share within the band, median |error|) with every source counting once:
    the share is the mean of the sources' shares; the median is weighted 1/(the source's cases)."""
    by_source: dict[str, list[tuple[Case, float]]] = defaultdict(list)
    for c, e in _errors(results):
        by_source[c.source].append((c, e))
    if not by_source:
        return 0, 0, None, None
    shares, weighted = [], []
    for items in by_source.values():
        shares.append(
            sum(abs(e) <= (band if band is not None else BANDS[c.score_kind]) + 1e-12 for c, e in items)
            / len(items)
        )
        weighted += [(abs(e), 1.0 / len(items)) for _, e in items]
    weighted.sort()
    half, run, median = sum(w for _, w in weighted) / 2, 0.0, weighted[-1][0]
    for value, w in weighted:
        run += w
        if run >= half:
            median = value
            break
    return sum(len(v) for v in by_source.values()), len(by_source), sum(shares) / len(shares), median


def gpu_group(case: Case) -> str:
    """The vendor / generation group a case is reported in."""
    return f"{case.gpu.vendor} {case.gpu.generation}"


Inside = list[tuple[Case, float | None, bool]]


def band_hits(held: Scored, serving: bool = False) -> Inside:
    """Held-out training (decoder LM) or serving cases with their prediction moved to the P50
    of their band and whether the measured time lies in its P10–P90, every band built from the
    other sources' held-out residuals alone (fit_constants.held_out_checks: conformal across
    sources, leave-one-source-out)."""
    return [(c, p, inside) for c, p, inside in held_out_checks(held, serving)]


def in_band(case: Case, pred: float | None, a: PerfAssumptions) -> bool | None:
    """Whether a training-throughput case's measured step lies in its P10–P90 band under `a`
    (optimizer/model/bands.band_for: relative to the point, which carries the band's P50);
    None: not such a case, or no prediction."""
    if pred is None or case.train is None or case.kind != "train_throughput":
        return None
    band = band_for(case.gpu, case.train[0].precision, case.stack, a)
    return band.p10 <= step_ratio(case, pred) <= band.p90


def coverage_rows(hits: Inside, min_cases: int = 1) -> list[list[str]]:
    """Coverage of the nominal 80% band, overall and per band group (GPU generation × precision;
    serving: generation): source-weighted (each source once) and pooled, the source-weighted
    median of measured ÷ point (the point is the P50: 100% when the held-out centre is right)
    and the source-weighted median |error|."""
    groups: dict[str, Inside] = {"all": hits}
    for h in hits:
        group = band_group(h[0])
        if group is not None:
            groups.setdefault(group, []).append(h)
    rows = []
    for name, items in sorted(groups.items(), key=lambda kv: (kv[0] != "all", kv[0])):
        if len(items) < min_cases:
            continue
        by_source: dict[str, list[bool]] = defaultdict(list)
        for c, _, inside in items:
            by_source[c.source].append(inside)
        sw = sum(sum(v) / len(v) for v in by_source.values()) / len(by_source)
        pooled = sum(i for _, _, i in items) / len(items)
        _, _, _, med = source_weighted([(c, p) for c, p, _ in items])
        ratio = source_weighted_quantiles(
            [(c.source, step_ratio(c, p)) for c, p, _ in items if p is not None], (0.5,)
        )[0]
        rows.append(
            [name, str(len(items)), str(len(by_source)), _pct(sw), _pct(pooled), f"{ratio:.2f}", _pct(med)]
        )
    return rows


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
    folds: Folds,
    loso_folds: Folds,
    insample: Scored,
    cal: Scored,
    hits: dict[str, Inside],
    skipped: int,
    markdown: bool,
) -> str:
    h = "### " if markdown else ""
    held = [item for _, res in folds.values() for item in res]
    held_loso = [item for _, res in loso_folds.values() for item in res]
    sources = len({c.source for c in cases})
    lines = [
        f"{h}Accuracy: {len(cases)} cases from {sources} sources in {len(folds)} families "
        f"({skipped} rows not mappable)\n",
        f"{h}Headline: source-weighted leave-one-family-out (each source counts once)\n",
    ]
    rows = []
    for kind in KINDS:
        lo = [i for i in held if i[0].score_kind == kind]
        n, k, within, med = source_weighted(lo)
        rows.append(
            [
                kind,
                f"±{BANDS[kind]:.0%}",
                str(n),
                str(k),
                _pct(within),
                _pct(med),
                _cells(lo)[1],
                _cells([i for i in held_loso if i[0].score_kind == kind])[1],
                *_cells([i for i in insample if i[0].score_kind == kind])[1:],
            ]
        )
    lines.append(
        _table(
            [
                "kind",
                "band",
                "cases",
                "sources",
                "LOFO within (src-wt)",
                "LOFO median abs. error (src-wt)",
                "LOFO within (pooled)",
                "LOSO within (pooled)",
                "in-sample within",
                "in-sample median abs. error",
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
            f"\ncalibrated, {label} (one point per source × GPU type × precision, LOSO "
            f"constants, calibrated.py's rule): {n} training-throughput cases, {_pct(w)} within ±10%, "
            f"{_pct(w15)} within ±15%, median |error| {_pct(m)}"
        )
    for label, inside in hits.items():
        lines += [
            "",
            f"{h}P10–P90 band coverage, {label} (nominal 80%; leave-one-source-out: each source's "
            "band from the other sources alone)\n",
            _table(
                [
                    "band group",
                    "cases",
                    "sources",
                    "coverage (src-wt)",
                    "coverage (pooled)",
                    "measured ÷ point (src-wt median)",
                    "median abs. error (src-wt)",
                ],
                coverage_rows(inside),
                markdown,
            ),
        ]
    lines.append("")
    lines.append(f"{h}Per source (LOFO | in-sample)\n")
    rows = []
    by_src_ins: dict[str, Scored] = defaultdict(list)
    for item in insample:
        by_src_ins[item[0].source].append(item)
    by_src: dict[str, Scored] = defaultdict(list)
    for item in held:
        by_src[item[0].source].append(item)
    for source, res in sorted(by_src.items()):
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
                "LOFO within",
                "LOFO median abs. error",
                "LOFO bias",
                "in-sample within",
                "in-sample median abs. error",
            ],
            rows,
            markdown,
        )
    )
    return "\n".join(lines)


# the kept-aside collections, newest first: load.ASIDE_FOLDERS


def aside_report(markdown: bool, folder: str = "aside", what: str = "") -> str:
    """The sources kept aside from the fit (benchmarks/validation/<folder>/), predicted with the
    packaged constants and bands (optimizer/model/data/fitted.toml) and scored once."""
    sys.path.insert(0, str(HERE / "validation"))
    from load import load_file  # noqa: PLC0415

    rows = [r for p in sorted((HERE / "validation" / folder).glob("*.csv")) for r in load_file(p)]
    cases, skipped = build_cases(rows)
    a = assumptions_for(load_fitted())
    scored = [(c, predict(c, a)) for c in cases]
    out, table = [], []
    h = "### " if markdown else ""
    unmapped = sum(len(v) for v in skipped.values())
    out.append(
        f"{h}Kept aside ({folder}/: {what or 'scored once'}): {len(cases)} cases from "
        f"{len({c.source for c in cases})} sources ({unmapped} rows not mappable)\n"
    )
    by_src: dict[tuple[str, str], Scored] = defaultdict(list)
    for item in scored:
        by_src[(item[0].source, item[0].score_kind)].append(item)
    hit = {id(c): in_band(c, p, a) for c, p in scored}  # each case's band, once
    for (source, kind), res in sorted(by_src.items()):
        bias = [e for _, e in _errors(res)]
        inside = [hit[id(c)] for c, _ in res if hit[id(c)] is not None]
        table.append(
            [
                source,
                kind,
                *_cells(res),
                f"{statistics.median(bias):+.0%}" if bias else "–",
                _pct(sum(inside) / len(inside)) if inside else "–",
            ]
        )
    for kind in KINDS:
        res = [i for i in scored if i[0].score_kind == kind]
        if res:
            n, k, within, med = source_weighted(res)
            hits: dict[str, list[bool]] = defaultdict(list)
            for c, _ in res:
                inside_c = hit[id(c)]
                if inside_c is not None:
                    hits[c.source].append(inside_c)
            cover = sum(sum(v) / len(v) for v in hits.values()) / len(hits) if hits else None
            table.append(
                [f"all ({k} sources, src-wt)", kind, str(n), _pct(within), _pct(med), "", _pct(cover)]
            )
    out.append(
        _table(
            ["source", "kind", "cases", "within", "median abs. error", "bias", "in P10–P90"], table, markdown
        )
    )
    out.append("\n" + _does_not_fit(cases, a))
    out.append(_point_and_memory_band(scored, a))
    return "\n".join(out)


def _point_and_memory_band(scored: Sequence[tuple[Case, float | None]], a: PerfAssumptions) -> str:
    """Issue 44's two remaining checks on kept-aside cases: the training point equals its band's
    P50 (largest |P50/point − 1| per band group: band_for is relative to the corrected point),
    and the share of peak-memory rows inside the memory band (bands.memory_band: measured ÷
    predicted between its P10 and P90), per source and source-weighted."""
    from optimizer.model.bands import memory_band  # noqa: PLC0415  (lazy: used here only)

    worst: dict[str, float] = {}
    for c, p in scored:
        group = band_group(c)
        if p is not None and c.train is not None and group is not None and not group.startswith("serve:"):
            off = abs(band_for(c.gpu, c.train[0].precision, c.stack, a).p50 - 1)
            worst[group] = max(worst.get(group, 0.0), off)
    point = ", ".join(f"{g} {v:.1%}" for g, v in sorted(worst.items())) or "no training case"
    mb = memory_band(a)
    inside: dict[str, list[bool]] = defaultdict(list)
    for c, p in scored:
        if p is not None and c.kind == "train_memory":
            inside[c.source].append(mb.p10 <= c.measured / p <= mb.p90)
    per = "; ".join(f"{s} {sum(v)}/{len(v)}" for s, v in sorted(inside.items()))
    wt = sum(sum(v) / len(v) for v in inside.values()) / len(inside) if inside else None
    mem = f"{_pct(wt)} source-weighted ({per})" if wt is not None else "no memory row"
    return (
        f"point = P50 (largest |P50/point - 1| per band group): {point}\n"
        f"peak memory inside the memory band (P10 x{mb.p10:.2f} - P90 x{mb.p90:.2f} of the point; its "
        f"new-source widening was fitted on these rows as once scored, new_sources.py): {mem}"
    )


def _does_not_fit(cases: list[Case], a: PerfAssumptions) -> str:
    """How many kept-aside runs (they all ran) the memory model calls "does not fit" on their
    card (runs_fit.check_case: predicted peak > the card), named."""
    from runs_fit import check_case  # noqa: PLC0415  (lazy: runs_fit imports this module's helpers)

    misses = [c for c in (check_case(case, a) for case in cases) if not c.fits]
    names = "; ".join(f"{c.case.row.case_id} ({c.predicted_gib:.1f} > {c.card_gib:.0f} GiB)" for c in misses)
    return f"runs that ran, called 'does not fit': {len(misses)} of {len(cases)}" + (
        f": {names}" if names else ""
    )


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


def _centred_folds(folds: Folds) -> Folds:
    """`folds` with every held-out training prediction moved to its held-out band's P50."""
    moved = {id(c): p for c, p in centred([i for _, res in folds.values() for i in res])}
    return {name: (fit, [(c, moved[id(c)]) for c, _ in res]) for name, (fit, res) in folds.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--csv", type=Path, metavar="OUT", help="per-case LOFO predictions")
    parser.add_argument(
        "--aside-only", action="store_true", help="score only the sources kept aside, once (the last step)"
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    if args.aside_only:
        # the sources kept aside, scored once with the packaged constants (never in a fit)
        print(memory_section(args.markdown, aside=True, held_out=False))
        for folder, what in ASIDE_FOLDERS:
            print("\n" + aside_report(args.markdown, folder, what))
        return 0
    cases, skipped = build_cases()
    families = lofo(cases)
    held = [item for _, res in families.values() for item in res]
    # the point is the P50 of its band: held-out predictions get their held-out band's centre
    families = _centred_folds(families)
    folds = loso(cases)
    loso_centred = _centred_folds(folds)
    fit = replace(fit_constants(cases), bands=bands_from(held))  # as fit_constants.py writes it
    a = assumptions_for(fit)
    insample = [(c, predict(c, a)) for c in cases]
    cal = calibrated(folds)
    hits = {
        "training, decoder LMs": band_hits(held),
        "serving (throughput and latency)": band_hits(held, serving=True),
    }
    n_skipped = sum(len(v) for v in skipped.values())
    print(report(cases, families, loso_centred, insample, cal, hits, n_skipped, args.markdown))
    # peak memory: its own headline, source-weighted leave-one-source-out (memory_accuracy.py)
    print("\n" + memory_section(args.markdown, aside=False))
    print(f"\nran in {time.perf_counter() - start:.1f} s")
    if args.csv:
        write_csv([i for _, r in families.values() for i in r], insample, args.csv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
