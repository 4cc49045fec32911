"""Peak-memory accuracy: source-weighted leave-one-source-out (the memory headline).

Run: python benchmarks/memory_accuracy.py [--aside] [--cases]

For each source with peak-memory rows, the memory constants (fitting.fit_family,
family "memory": the activation multiplier per stack family + stack) are fitted on the memory
rows of every other source and the source's rows are predicted, in the metric the row reports
(allocated, reserved or nvidia-smi: cases.py `memory_kind`). Source-weighted: every source
counts once: its share within ±15% and its median signed error are averaged / weighted
1/(its rows), whatever its row count. The memory prediction depends on the memory table
alone, so only that table is refitted per fold (the throughput families do not enter it).
Kept-aside rows (benchmarks/validation/aside/) are predicted with the packaged constants
(optimizer/model/data/fitted.toml) and scored once, never fitted on.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from cases import BANDS, Case, build_cases, predict  # noqa: E402
from fitting import ITERATIONS, assumptions_for, fit_family  # noqa: E402

from optimizer.model.fitted import FittedConstants, load_fitted  # noqa: E402

__all__ = ["MemoryScore", "memory_loso", "memory_aside", "score", "weighted_median"]

BAND = BANDS["train_memory"]
Scored = list[tuple[Case, float]]


@dataclass(frozen=True)
class MemoryScore:
    """Held-out peak-memory accuracy of one set of predictions."""

    cases: int
    sources: int
    #: mean over sources of the share of its rows within ±15%
    within_src_wt: float
    #: source-weighted median of (predicted / measured − 1)
    median_signed_src_wt: float
    #: source-weighted median of |predicted / measured − 1|
    median_abs_src_wt: float
    #: share of all rows within ±15%
    within_pooled: float
    #: {source: (rows, share within, median signed error)}
    per_source: dict[str, tuple[int, float, float]]


def weighted_median(items: Sequence[tuple[float, float]]) -> float:
    """The value at half the total weight of (value, weight) pairs."""
    ordered = sorted(items)
    half, run = sum(w for _, w in ordered) / 2, 0.0
    for value, w in ordered:
        run += w
        if run >= half:
            return value
    return ordered[-1][0]


def score(scored: Scored) -> MemoryScore:
    """Source-weighted and pooled scores of (case, prediction) pairs."""
    by_source: dict[str, list[float]] = defaultdict(list)
    for c, p in scored:
        by_source[c.source].append(p / c.measured - 1)
    per_source, signed, absolute = {}, [], []
    for source, errs in sorted(by_source.items()):
        share = sum(abs(e) <= BAND + 1e-12 for e in errs) / len(errs)
        per_source[source] = (len(errs), share, statistics.median(errs))
        signed += [(e, 1.0 / len(errs)) for e in errs]
        absolute += [(abs(e), 1.0 / len(errs)) for e in errs]
    errs_all = [e for v in by_source.values() for e in v]
    return MemoryScore(
        cases=len(errs_all),
        sources=len(by_source),
        within_src_wt=statistics.mean(s for _, s, _ in per_source.values()),
        median_signed_src_wt=weighted_median(signed),
        median_abs_src_wt=weighted_median(absolute),
        within_pooled=sum(abs(e) <= BAND + 1e-12 for e in errs_all) / len(errs_all),
        per_source=per_source,
    )


def fit_memory(cases: Sequence[Case], base: FittedConstants | None = None) -> FittedConstants:
    """The memory table fitted on `cases` (the other tables as in `base`)."""
    fit = base or FittedConstants()
    fit = FittedConstants(**{**fit.__dict__, "memory": {}})
    for _ in range(ITERATIONS):
        fit = fit_family(cases, fit, "memory")
    return fit


def memory_cases(cases: Sequence[Case]) -> list[Case]:
    return [c for c in cases if c.kind == "train_memory"]


def memory_loso(cases: Sequence[Case] | None = None) -> Scored:
    """Every memory row predicted with the memory constants fitted without its source."""
    mem = memory_cases(cases if cases is not None else build_cases()[0])
    out: Scored = []
    for source in sorted({c.source for c in mem}):
        fit = fit_memory([c for c in mem if c.source != source])
        a = assumptions_for(fit)
        for c in mem:
            if c.source == source:
                p = predict(c, a)
                assert p is not None
                out.append((c, p))
    return out


def memory_aside() -> Scored:
    """The kept-aside memory rows predicted with the packaged constants, scored once."""
    sys.path.insert(0, str(HERE / "validation"))
    from load import ASIDE_FOLDERS, load_file  # noqa: PLC0415

    folders = [folder for folder, _ in ASIDE_FOLDERS]
    rows = [r for f in folders for p in sorted((HERE / "validation" / f).glob("*.csv")) for r in load_file(p)]
    a = assumptions_for(load_fitted())
    out: Scored = []
    for c in memory_cases(build_cases(rows)[0]):
        p = predict(c, a)
        assert p is not None
        out.append((c, p))
    return out


def _pct(x: float, signed: bool = False) -> str:
    return f"{x:+.1%}" if signed else f"{x:.0%}"


def report(label: str, s: MemoryScore, markdown: bool = False) -> str:
    h = "### " if markdown else ""
    lines = [
        f"{h}Peak memory, {label}: {s.cases} rows from {s.sources} sources\n",
        f"within ±{BAND:.0%} (source-weighted): {_pct(s.within_src_wt)}; median signed error "
        f"(source-weighted): {_pct(s.median_signed_src_wt, True)}; median |error| "
        f"(source-weighted): {_pct(s.median_abs_src_wt)}; within ±{BAND:.0%} (pooled): "
        f"{_pct(s.within_pooled)}\n",
    ]
    sep = "|" if markdown else " "
    lines.append(f"{sep} source {sep} rows {sep} within ±15% {sep} median signed error {sep}".strip())
    if markdown:
        lines.append("|---|---|---|---|")
    for source, (n, share, med) in s.per_source.items():
        lines.append(f"{sep} {source} {sep} {n} {sep} {_pct(share)} {sep} {_pct(med, True)} {sep}".strip())
    return "\n".join(lines)


def section(markdown: bool = False, aside: bool = False, held_out: bool = True) -> str:
    """The memory headline of benchmarks/accuracy.py: source-weighted leave-one-source-out
    (without `held_out`: not), and, with `aside`, the kept-aside memory rows scored once."""
    out = []
    if held_out:
        held = memory_loso()
        out.append(report("headline, source-weighted leave-one-source-out", score(held), markdown))
        out.append(band_coverage(held))
    if aside:
        label = "kept aside, scored once with the packaged constants"
        out.append(report(label, score(memory_aside()), markdown))
    return "\n\n".join(out)


def band_coverage(held: Scored) -> str:
    """The coverage of the P10–P90 memory band (fit_constants.memory_band: conformal across
    sources), each source's band from the other sources alone, source-weighted."""
    from fit_constants import memory_units  # noqa: PLC0415  (lazy: fit_constants imports this module)
    from folds import held_out_bands  # noqa: PLC0415  (lazy: as above)

    units = memory_units(held)
    by_source: dict[str, list[bool]] = defaultdict(list)
    for (c, _), (_, _, r), (lo, _, hi) in zip(held, units, held_out_bands(units), strict=True):
        by_source[c.source].append(lo <= r <= hi)
    cover = statistics.mean(sum(v) / len(v) for v in by_source.values())
    return (
        f"P10–P90 band of measured ÷ predicted peak memory (nominal 80%, conformal across sources, "
        f"each source's band from the others alone, before the new-source widening): coverage "
        f"{cover:.0%} source-weighted over {len(by_source)} sources"
    )


def _rows(scored: Scored) -> None:
    for c, p in scored:
        err = p / c.measured - 1
        print(f"  {c.row.case_id:60s} {c.memory_kind:9s} {c.measured:7.1f} {p:7.1f} {err:+.0%}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--aside", action="store_true", help="also score the kept-aside rows, once")
    ap.add_argument("--cases", action="store_true", help="list every held-out row")
    args = ap.parse_args(argv)
    held = memory_loso()
    print(report("leave-one-source-out", score(held), args.markdown))
    if args.cases:
        _rows(held)
    if args.aside:
        aside = memory_aside()
        print("\n" + report("kept aside, scored once", score(aside), args.markdown))
        if args.cases:
            _rows(aside)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
