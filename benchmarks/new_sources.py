"""How wide a training band must be for sources the model was never shaped on (issue 44).

The fitted bands are split conformal on leave-one-source-out residuals (folds.py). Those
sources were held out of one fit, but every mechanism of the model was chosen while looking at
them, so their held-out residuals are smaller than a truly new source's: on the kept-aside
collections, each scored once before anything was changed for it, the nominal 80% band held
68% of the sources' runs (source-weighted). A new source adds an error of its own (its stack,
its harness, what it did not say) to the model's: in log space the two add in quadrature, so
each half of a band (P50 to P10, P50 to P90) becomes sqrt(half² + d²), the model-discrepancy
term d (Kennedy & O'Hagan 2001, JRSS B §2.1: an additive discrepancy independent of the
model's own error). The once-scored residuals are a calibration set of new sources in the
split-conformal sense (Lei et al. 2018 JASA §2; sources as the exchangeable unit, Dunn,
Wasserman & Ramdas 2022 JASA): d is the smallest at which COVERAGE of those sources' runs fall
inside, each source weighing one. A narrow band (Hopper bf16, ±0.24) widens most; a thin group's
wide pooled band (±0.83) hardly at all, as the collections showed (the misses were in the dense
groups; aside2's thin-group rows were 96% inside).

The residuals are data: `benchmarks/once_scored.csv`, one row per training-throughput case of
a collection as it was scored, at the commit it was scored (the model and bands of that
commit, with the widening they already carried: `widening_at_scoring`, the log-width factor
of the earlier multiplicative rule, 1.21 for aside6 and 1.54 for aside7; `discrepancy_at_scoring`,
d of this rule). A row is rebuilt at that commit with

    git worktree add /tmp/wt-C C
    WT=/tmp/wt-C PYTHONPATH=/tmp/wt-C python benchmarks/new_sources.py --extract aside4 C

(run from any folder; it prints the rows for the CSV). fit_constants.py widens the training
bands it writes by `discrepancy()` and records it in fitted.toml's [meta].

The memory band (measured ÷ predicted peak memory per GPU, conformal across the development
sources) is widened by the same rule with a d of its own: `benchmarks/once_scored_memory.csv`
holds every peak-memory row of a collection predicted at its scoring commit, with the memory
band of that commit (`--extract-memory FOLDER COMMIT`, as above). Unwidened, that band held 38%
of those rows (58 sources, source-weighted; nominal 80%). `prequential()` measures a d on
sources it never saw: each collection scored with the d of the collections scored before it.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optimizer.model.bands import MEMORY_KEY

HERE = Path(__file__).resolve().parent
ONCE_SCORED = HERE / "once_scored.csv"
ONCE_SCORED_MEMORY = HERE / "once_scored_memory.csv"
#: the nominal coverage of the P10–P90 band (folds.COVERAGE)
COVERAGE = 0.8
#: d is searched in steps of this much, from 0 (a band is never narrowed)
STEP = 0.01
MAX_DISCREPANCY = 3.0
HEADER = (
    "collection",
    "scored_at",
    "case_id",
    "source_id",
    "band_group",
    "measured_over_point",
    "band_p10",
    "band_p50",
    "band_p90",
    "widening_at_scoring",
    "discrepancy_at_scoring",
)
#: keys of fitted.toml's [bands] the widening does not touch: serving, memory, calibrated
NOT_TRAINING = ("serve:", MEMORY_KEY, "calibrated")
#: a prequential d is measured once this many sources were scored before a collection
PREQUENTIAL_MIN_SOURCES = 10


@dataclass(frozen=True)
class Scored:
    """One once-scored row: measured ÷ point (step time, or peak memory) and the band it was
    scored in."""

    collection: str
    source: str
    ratio: float
    p10: float
    p50: float
    p90: float
    #: the widening the scored band already carried (1 and 0: none): the earlier rule's log-width
    #: factor and this rule's discrepancy; `inside` widens the unwidened band
    scored_widening: float = 1.0
    scored_discrepancy: float = 0.0

    def halves(self) -> tuple[float, float]:
        """The unwidened band's log half-widths (P50 to P10, P50 to P90)."""
        mid = math.log(self.p50)
        out = []
        for edge in (mid - math.log(self.p10), math.log(self.p90) - mid):
            base = edge / self.scored_widening
            out.append(math.sqrt(max(0.0, base**2 - self.scored_discrepancy**2)))
        return out[0], out[1]

    def inside(self, d: float) -> bool:
        """Whether the ratio lies inside the band widened by the discrepancy `d` (log space)."""
        mid, (low, high) = math.log(self.p50), self.halves()
        return mid - math.hypot(low, d) <= math.log(self.ratio) <= mid + math.hypot(high, d)


def _scored(r: dict[str, str], ratio: float, widening: float) -> Scored:
    """A once-scored CSV row as Scored (its band and the discrepancy it was scored with)."""
    bands = (float(r["band_p10"]), float(r["band_p50"]), float(r["band_p90"]))
    return Scored(
        r["collection"], r["source_id"], ratio, *bands, widening, float(r["discrepancy_at_scoring"])
    )


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def load_once_scored(path: Path = ONCE_SCORED) -> list[Scored]:
    """The once-scored training rows: measured ÷ point step time in the band they were scored in."""
    return [_scored(r, float(r["measured_over_point"]), float(r["widening_at_scoring"])) for r in _rows(path)]


def load_once_scored_memory(path: Path = ONCE_SCORED_MEMORY) -> list[Scored]:
    """The once-scored peak-memory rows as Scored: measured ÷ predicted GiB in the memory band
    of the commit that scored them (never widened by the earlier multiplicative rule)."""
    return [_scored(r, float(r["measured_gib"]) / float(r["predicted_gib"]), 1.0) for r in _rows(path)]


def coverage(scored: Sequence[Scored], d: float) -> float:
    """Source-weighted share of the runs inside the bands widened by the discrepancy `d`."""
    by: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for s in scored:
        by[(s.collection, s.source)].append(s.inside(d))
    return sum(sum(v) / len(v) for v in by.values()) / len(by)


def discrepancy(scored: Sequence[Scored], level: float = COVERAGE) -> float:
    """The smallest d >= 0 (in STEP steps) at which `level` of the sources' runs are inside."""
    for i in range(round(MAX_DISCREPANCY / STEP) + 1):
        d = round(i * STEP, 4)
        if coverage(scored, d) >= level:
            return d
    return MAX_DISCREPANCY


def widen(
    bands: dict[str, tuple[float, float, float, int, int]], d: float
) -> dict[str, tuple[float, float, float, int, int]]:
    """The training bands widened by the discrepancy `d` in quadrature around their P50
    (serving, memory and calibrated bands kept)."""
    out = {}
    for key, (p10, p50, p90, cases, sources) in bands.items():
        if not any(key.startswith(n) for n in NOT_TRAINING):
            p10, p90 = _widened(p10, p50, p90, d)
        out[key] = (p10, p50, p90, cases, sources)
    return out


def _widened(p10: float, p50: float, p90: float, d: float) -> tuple[float, float]:
    """(P10, P90) with each log half-width h around P50 made hypot(h, d) (module doc)."""
    return p50 * math.exp(-math.hypot(math.log(p50 / p10), d)), p50 * math.exp(
        math.hypot(math.log(p90 / p50), d)
    )


def widen_memory(
    bands: dict[str, tuple[float, float, float, int, int]], d: float
) -> dict[str, tuple[float, float, float, int, int]]:
    """The bands with the memory band (MEMORY_KEY) widened by `d` in quadrature around its P50."""
    out = dict(bands)
    if MEMORY_KEY in out:
        p10, p50, p90, cases, sources = out[MEMORY_KEY]
        low, high = _widened(p10, p50, p90, d)
        out[MEMORY_KEY] = (low, p50, high, cases, sources)
    return out


def prequential(scored: Sequence[Scored], order: Sequence[str]) -> list[tuple[str, float, float, int]]:
    """Each collection of `order` (as scored, oldest first) with the d of the collections before
    it (once they hold PREQUENTIAL_MIN_SOURCES sources): (collection, d, its source-weighted
    coverage at that d, its sources). Coverage measured on sources the d never saw."""
    out = []
    for n, name in enumerate(order):
        before = set(order[:n])
        earlier = [s for s in scored if s.collection in before]
        now = [s for s in scored if s.collection == name]
        if now and len({(s.collection, s.source) for s in earlier}) >= PREQUENTIAL_MIN_SOURCES:
            d = discrepancy(earlier)
            out.append((name, d, coverage(now, d), len({s.source for s in now})))
    return out


def prequential_coverage(
    scored: Sequence[Scored], scores: Sequence[tuple[str, float, float, int]]
) -> tuple[float, int]:
    """The source-weighted coverage over every collection of `scores` (prequential's answer),
    each source at its collection's d, and how many sources that is."""
    d_of = {name: d for name, d, _, _ in scores}
    by: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for s in scored:
        if s.collection in d_of:
            by[(s.collection, s.source)].append(s.inside(d_of[s.collection]))
    return sum(sum(v) / len(v) for v in by.values()) / max(1, len(by)), len(by)


def scoring_order(scored: Sequence[Scored]) -> list[str]:
    """The collections in the order of the once-scored CSV (appended as they were scored)."""
    return list(dict.fromkeys(s.collection for s in scored))


def _checkout_cases(folder: str) -> tuple[Any, list[Any], Any]:
    """(the checkout's accuracy module, the cases of its `folder`, its assumptions): the code
    and data of the checkout in $WT, as they were when `folder` was scored."""
    root = Path(os.environ["WT"])
    sys.path[:0] = [str(root / "benchmarks"), str(root / "benchmarks" / "validation")]
    import accuracy  # noqa: PLC0415  (lazy: the checkout's own modules)
    from load import load_file  # noqa: PLC0415

    rows = [r for p in sorted((root / "benchmarks/validation" / folder).glob("*.csv")) for r in load_file(p)]
    cases, _ = accuracy.build_cases(rows)
    return accuracy, cases, accuracy.assumptions_for(accuracy.load_fitted())


def _extract(folder: str, commit: str) -> None:
    """Print the once-scored training rows of `folder` with the code of the checkout in $WT."""
    accuracy, cases, a = _checkout_cases(folder)
    from folds import step_ratio  # noqa: PLC0415  (the checkout's, on the path _checkout_cases set)

    from optimizer.model.bands import band_for  # noqa: PLC0415

    meta = accuracy.load_fitted().meta
    widened = (meta.get("new_source_widening", 1.0), meta.get("new_source_discrepancy", 0.0))
    out = csv.writer(sys.stdout)
    for c in cases:
        p = accuracy.predict(c, a) if c.kind == "train_throughput" and c.train is not None else None
        if p is not None:
            band = band_for(c.gpu, c.train[0].precision, c.stack, a)
            ratio = step_ratio(c, p)
            out.writerow([folder, commit, c.row.case_id, c.source, accuracy.gpu_group(c), f"{ratio:.6g}"]
                         + [f"{band.p10:.6g}", f"{band.p50:.6g}", f"{band.p90:.6g}", *widened])  # fmt: skip


def _extract_memory(folder: str, commit: str) -> None:
    """Print the once-scored peak-memory rows of `folder` with the code of the checkout in $WT:
    measured and predicted GiB (the kind the source reported) and the memory band of that
    checkout (measured ÷ predicted), for benchmarks/once_scored_memory.csv."""
    accuracy, cases, a = _checkout_cases(folder)
    from optimizer.model.bands import memory_band  # noqa: PLC0415

    band = memory_band(a)
    widened = accuracy.load_fitted().meta.get("memory_new_source_discrepancy", 0.0)
    out = csv.writer(sys.stdout)
    for c in cases:
        p = accuracy.predict(c, a) if c.kind == "train_memory" else None
        if p is not None:
            gib = [f"{c.measured:.6g}", f"{p:.6g}"]
            out.writerow([folder, commit, c.row.case_id, c.source, c.memory_kind, *gib]
                         + [f"{band.p10:.6g}", f"{band.p50:.6g}", f"{band.p90:.6g}", widened])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extract", nargs=2, metavar=("FOLDER", "COMMIT"))
    parser.add_argument("--extract-memory", nargs=2, metavar=("FOLDER", "COMMIT"))
    parser.add_argument("--markdown", action="store_true", help="print the scores as a markdown list")
    args = parser.parse_args(argv)
    if args.extract:
        _extract(*args.extract)
        return 0
    if args.extract_memory:
        _extract_memory(*args.extract_memory)
        return 0
    bullet, sub = ("- ", "  - ") if args.markdown else ("", "  ")
    for what, scored in (("training", load_once_scored()), ("peak-memory", load_once_scored_memory())):
        d = discrepancy(scored)
        sources = len({(s.collection, s.source) for s in scored})
        scores = prequential(scored, scoring_order(scored))
        pooled, n = prequential_coverage(scored, scores)
        print(
            f"{bullet}{what}: {len(scored)} once-scored rows from {sources} sources: "
            f"{coverage(scored, 0.0):.0%} inside at d = 0; d = {d:.2f}: coverage {coverage(scored, d):.0%}; "
            f"prequential (each collection with the d of those before it), source-weighted: "
            f"{pooled:.0%} over {n} sources"
        )
        for name, d_before, cover, k in scores:
            print(
                f"{sub}{name}: d {d_before:.2f} from the collections before it, "
                f"coverage {cover:.0%} ({k} sources)"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
