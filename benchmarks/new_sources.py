"""How wide a training band must be for sources the model was never shaped on (issue 44).

The fitted bands are split conformal on leave-one-source-out residuals (folds.py). Those
sources were held out of one fit, but every mechanism of the model was chosen while looking at
them, so their held-out residuals are smaller than a truly new source's: on the kept-aside
collections, each scored once before anything was changed for it, the nominal 80% band held
69% of the sources' runs (source-weighted). The once-scored residuals are a calibration set of
new sources in the split-conformal sense (Lei et al. 2018 JASA §2; sources as the exchangeable
unit, Dunn, Wasserman & Ramdas 2022 JASA): the widening is the smallest exponent w of the
band's log-width around its P50 (P10' = P50 (P10/P50)^w, P90' = P50 (P90/P50)^w) at which
COVERAGE of those sources' runs fall inside, each source weighing one.

The residuals are data: `benchmarks/once_scored.csv`, one row per training-throughput case of
a collection as it was scored, at the commit it was scored (the model and bands of that
commit, with the widening they already carried, `widening_at_scoring`: aside6 was scored with
w = 1.21 in force). A row is rebuilt at that commit with

    git worktree add /tmp/wt-C C
    WT=/tmp/wt-C PYTHONPATH=/tmp/wt-C python benchmarks/new_sources.py --extract aside4 C

(run from any folder; it prints the rows for the CSV). fit_constants.py widens the training
bands it writes by `widening()` and records it in fitted.toml's [meta].
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

HERE = Path(__file__).resolve().parent
ONCE_SCORED = HERE / "once_scored.csv"
#: the nominal coverage of the P10–P90 band (folds.COVERAGE)
COVERAGE = 0.8
#: the widening is searched in steps of this much (w from 1: a band is never narrowed)
STEP = 0.01
MAX_WIDENING = 4.0
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
)
#: keys of fitted.toml's [bands] the widening does not touch: serving, memory, calibrated
NOT_TRAINING = ("serve:", "memory", "calibrated")


@dataclass(frozen=True)
class Scored:
    """One once-scored training case: measured ÷ point step time and the band it was scored in."""

    collection: str
    source: str
    ratio: float
    p10: float
    p50: float
    p90: float
    #: the widening the scored band already carried (1: none); `inside` widens the unwidened one
    scored_widening: float = 1.0

    def inside(self, w: float) -> bool:
        """Whether the ratio lies inside the band widened by `w` (log width around P50)."""
        mid, k = math.log(self.p50), w / self.scored_widening
        low, high = mid + k * (math.log(self.p10) - mid), mid + k * (math.log(self.p90) - mid)
        return low <= math.log(self.ratio) <= high


def load_once_scored(path: Path = ONCE_SCORED) -> list[Scored]:
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return [
        Scored(
            r["collection"],
            r["source_id"],
            float(r["measured_over_point"]),
            float(r["band_p10"]),
            float(r["band_p50"]),
            float(r["band_p90"]),
            float(r["widening_at_scoring"]),
        )
        for r in rows
    ]


def coverage(scored: Sequence[Scored], w: float) -> float:
    """Source-weighted share of the runs inside the band widened by `w`."""
    by: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for s in scored:
        by[(s.collection, s.source)].append(s.inside(w))
    return sum(sum(v) / len(v) for v in by.values()) / len(by)


def widening(scored: Sequence[Scored], level: float = COVERAGE) -> float:
    """The smallest w >= 1 (in STEP steps) at which `level` of the sources' runs are inside."""
    steps = round((MAX_WIDENING - 1.0) / STEP)
    for i in range(steps + 1):
        w = round(1.0 + i * STEP, 4)
        if coverage(scored, w) >= level:
            return w
    return MAX_WIDENING


def widen(
    bands: dict[str, tuple[float, float, float, int, int]], w: float
) -> dict[str, tuple[float, float, float, int, int]]:
    """The training bands widened by `w` around their P50 (serving, memory and calibrated kept)."""
    out = {}
    for key, (p10, p50, p90, cases, sources) in bands.items():
        if not any(key.startswith(n) for n in NOT_TRAINING):
            p10, p90 = p50 * (p10 / p50) ** w, p50 * (p90 / p50) ** w
        out[key] = (p10, p50, p90, cases, sources)
    return out


def _extract(folder: str, commit: str) -> None:
    """Print the once-scored rows of `folder` with the code of the checkout in $WT."""
    root = Path(os.environ["WT"])
    sys.path[:0] = [str(root / "benchmarks"), str(root / "benchmarks" / "validation")]
    import accuracy  # noqa: PLC0415  (lazy: the checkout's own modules)
    from folds import step_ratio  # noqa: PLC0415
    from load import load_file  # noqa: PLC0415

    from optimizer.model.bands import band_for  # noqa: PLC0415

    rows = [r for p in sorted((root / "benchmarks/validation" / folder).glob("*.csv")) for r in load_file(p)]
    cases, _ = accuracy.build_cases(rows)
    a = accuracy.assumptions_for(accuracy.load_fitted())
    out = csv.writer(sys.stdout)
    for c in cases:
        p = accuracy.predict(c, a) if c.kind == "train_throughput" and c.train is not None else None
        if p is not None:
            band = band_for(c.gpu, c.train[0].precision, c.stack, a)
            ratio = step_ratio(c, p)
            widened = accuracy.load_fitted().meta.get("new_source_widening", 1.0)
            out.writerow([folder, commit, c.row.case_id, c.source, accuracy.gpu_group(c), f"{ratio:.6g}"]
                         + [f"{band.p10:.6g}", f"{band.p50:.6g}", f"{band.p90:.6g}", widened])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extract", nargs=2, metavar=("FOLDER", "COMMIT"))
    args = parser.parse_args(argv)
    if args.extract:
        _extract(*args.extract)
        return 0
    scored = load_once_scored()
    w = widening(scored)
    sources = len({(s.collection, s.source) for s in scored})
    print(
        f"{len(scored)} once-scored runs from {sources} sources: "
        f"coverage {coverage(scored, 1.0):.0%} at w = 1"
    )
    print(f"widening w = {w:.2f}: coverage {coverage(scored, w):.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
