"""Every measured run is a feasibility test: a run that was measured fitted its card.

For every row of the validation set that maps onto the model (benchmarks/cases.py, throughput
and latency rows too), the predicted device memory (nvidia-smi: allocated + allocator cache +
CUDA context, MemoryBreakdown.device) of that row's configuration must not exceed the card.
Serving rows are checked at the batch the case runs (the stated one, or the largest the stack
admits for all-at-once runs). The plan's memory headroom is not applied here: it is a safety
margin on top of the unbiased estimate (constraints.min_memory_headroom_*).

Run: python benchmarks/runs_fit.py [--all] [--csv OUT] [--memory-confidence Q]
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from cases import Case, build_cases  # noqa: E402

from optimizer.model.memory import serving_memory, training_memory  # noqa: E402
from optimizer.model.setup import PerfAssumptions  # noqa: E402

__all__ = ["Check", "card_gib", "check_case", "check_all"]


@dataclass(frozen=True)
class Check:
    """One row's feasibility: predicted device GiB of its configuration against its card."""

    case: Case
    predicted_gib: float
    card_gib: float

    @property
    def fits(self) -> bool:
        return self.predicted_gib <= self.card_gib

    @property
    def ratio(self) -> float:
        return self.predicted_gib / self.card_gib


def card_gib(case: Case) -> float:
    """The memory of the card the run used: the catalogue's, unless the row's gpu_note names
    another size for a card mapped to its nearest catalogue id ("96GB ... nearest id H100-80GB")
    or a budget the run was held to ("limited to a 48 GB budget")."""
    note = (case.row.gpu_note or "").lower()
    budget = re.search(r"limited to an? (\d+) ?gb budget", note)
    if budget:
        return float(budget.group(1))
    size = re.search(r"(\d+) ?gb", note)
    if "nearest" in note and size:
        return float(size.group(1))
    return case.gpu.memory_gib


def check_case(case: Case, a: PerfAssumptions | None = None) -> Check:
    """The predicted device memory of the case's configuration and its card's memory."""
    a = a or PerfAssumptions()
    if case.train is not None:
        setup, layout, _ = case.train
        device = training_memory(case.spec, setup, layout, a).device
    else:
        assert case.serve is not None
        serve, tp, _, _ = case.serve
        device = serving_memory(case.spec, serve, tp, a).device
    return Check(case, device, card_gib(case))


def check_all(a: PerfAssumptions | None = None) -> list[Check]:
    """A check per mapped row of the validation set (file order)."""
    cases, _ = build_cases()
    return [check_case(c, a) for c in cases]


def at_memory_confidence(checks: list[Check], q: float) -> str:
    """How many training runs (they all ran) the memory fit at quantile `q` of the memory band
    refuses (bands.memory_factor, the multiplier the planner's headroom takes), beside the
    point's count."""
    from optimizer.model.bands import memory_factor  # noqa: PLC0415  (lazy: this option only)

    factor = memory_factor(PerfAssumptions(), q)
    train = [c for c in checks if c.case.train is not None]
    refused = sum(c.predicted_gib * factor > c.card_gib for c in train)
    point = sum(not c.fits for c in train)
    return (
        f"training runs: {len(train)}; called 'does not fit' at the point {point}, "
        f"at memory_confidence {q:g} (x{factor:.2f}) {refused}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="list every row, not only the failing ones")
    ap.add_argument("--csv", metavar="OUT", help="write every row's check to a CSV")
    ap.add_argument(
        "--memory-confidence",
        type=float,
        metavar="Q",
        help="also count the training runs a plan with constraints.memory_confidence = Q would "
        "call 'does not fit' (predicted device peak × the memory band's multiplier at Q > the card; "
        "no headroom, as above)",
    )
    args = ap.parse_args(argv)
    checks = check_all()
    failing = [c for c in checks if not c.fits]
    if args.memory_confidence is not None:
        print(at_memory_confidence(checks, args.memory_confidence))
    shown = checks if args.all else failing
    for c in shown:
        r = c.case.row
        print(
            f"{r.case_id:60s} {r.source_id:34s} {r.kind:17s} {c.case.gpu.gpu_id:10s} "
            f"predicted {c.predicted_gib:7.1f} GiB  card {c.card_gib:6.1f}  ({c.ratio:5.2f}x)"
        )
    print(f"rows checked: {len(checks)}; predicted not to fit: {len(failing)}")
    if args.csv:
        with open(args.csv, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["case_id", "source_id", "kind", "gpu", "predicted_gib", "card_gib", "fits"])
            for c in checks:
                r = c.case.row
                w.writerow(
                    [
                        r.case_id,
                        r.source_id,
                        r.kind,
                        c.case.gpu.gpu_id,
                        f"{c.predicted_gib:.2f}",
                        c.card_gib,
                        c.fits,
                    ]
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
