"""Calibration with one vs two measured runs on the validation set (issue 27 item 2).

Run: python benchmarks/calibration_points.py [--markdown]

For every source × GPU type × precision × stack with at least three training-throughput runs
of decoder LMs (benchmarks/cases.py) whose size factors differ, the run with the smallest and
the one with the largest size factor (optimizer.model.efficiency.size_factor of the
micro-batch) are the user's two measured runs; every other run of the group is scored:

- none: the uncalibrated model (the packaged constants, optimizer/model/data/fitted.toml, which
  were fitted on all sources: in-sample, so "none" is better here than for a new user);
- one (small) / one (large): `ccopt calibrate` with that run alone (its base efficiency, the
  model's size curve kept: optimizer.model.calibrated with one run);
- two: both runs, log(efficiency) = a + b·log(size factor) by least squares
  (optimizer.model.calibrated.fit_curve), what `ccopt calibrate` fits with two stored runs.

"reproduced" is the larger error of the two calibration runs under the two-run curve.
Errors are |measured/predicted − 1| of the step time; the median over the scored runs.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from accuracy import CAL_BAND  # noqa: E402
from cases import Case, build_cases, predict  # noqa: E402
from fit_constants import step_ratio  # noqa: E402

from optimizer.errors import ConfigError  # noqa: E402
from optimizer.inputs.calibration import fit_efficiency  # noqa: E402
from optimizer.model.calibrated import CalibratedCurve, fit_curve  # noqa: E402
from optimizer.model.setup import PerfAssumptions  # noqa: E402
from optimizer.model.step_time import microbatch_size_factor, training_step_time  # noqa: E402

Group = tuple[str, str, str, str]  # source, GPU, precision, stack


def _point(case: Case, a: PerfAssumptions) -> tuple[float, float] | None:
    """(size factor, base efficiency `ccopt calibrate` fits) of a measured run, None if the
    run cannot be fitted (faster than the model at 100%, or below 0.1%)."""
    assert case.train is not None
    setup, layout, cluster = case.train
    pred = predict(case, a)
    if pred is None:
        return None
    measured_step = training_step_time(case.spec, setup, layout, cluster, a).time_s * step_ratio(case, pred)
    try:
        eff = fit_efficiency(case.spec, setup, layout, cluster, measured_step, a)
    except ConfigError:
        return None
    return microbatch_size_factor(case.spec, setup, layout, a), eff


def _error(case: Case, a: PerfAssumptions) -> float | None:
    """|measured / predicted − 1| of the step time under `a`."""
    pred = predict(case, a)
    return None if pred is None else abs(step_ratio(case, pred) - 1)


def _with(base: PerfAssumptions, key: tuple[str, str, str], curve: CalibratedCurve) -> PerfAssumptions:
    return replace(base, calibrated_curves={key: curve})


def evaluate(base: PerfAssumptions) -> list[dict[str, object]]:
    """One row per group with ≥ 3 fittable runs of different sizes (see the module docstring)."""
    cases, _ = build_cases()
    groups: dict[Group, list[tuple[Case, tuple[float, float]]]] = defaultdict(list)
    for case in cases:
        if case.score_kind != "train_throughput" or case.train is None:
            continue
        point = _point(case, base)
        if point is not None:
            groups[(case.source, case.gpu.gpu_id, case.train[0].precision, case.stack)].append((case, point))
    rows = []
    for (source, gpu, precision, stack), items in sorted(groups.items()):
        items.sort(key=lambda item: item[1][0])
        small, large, others = items[0], items[-1], items[1:-1]
        if len(items) < 3 or math.log(large[1][0] / small[1][0]) < 0.01:
            continue
        key = (gpu, precision, stack)
        two = _with(base, key, fit_curve([small[1], large[1]]))
        ways = {
            "none": base,
            "one (small)": _with(base, key, fit_curve([small[1]])),
            "one (large)": _with(base, key, fit_curve([large[1]])),
            "two": two,
        }
        errs = {name: [e for c, _ in others if (e := _error(c, a)) is not None] for name, a in ways.items()}
        reproduced = [e for c, _ in (small, large) if (e := _error(c, two)) is not None]
        rows.append(
            {
                "group": f"{source} · {gpu} {precision} {stack}",
                "runs": len(items),
                "scored": len(errs["two"]),
                "reproduced": max(reproduced) if len(reproduced) == 2 else None,
                "exponent": fit_curve([small[1], large[1]]).size_exponent,
                **{name: statistics.median(e) if e else None for name, e in errs.items()},
                **{
                    f"{name} within": sum(x <= CAL_BAND for x in e) / len(e) if e else None
                    for name, e in errs.items()
                },
            }
        )
    return rows


def _pct(x: object) -> str:
    return "-" if not isinstance(x, float) else f"{100 * x:.1f}%"


def render(rows: list[dict[str, object]], markdown: bool) -> str:
    """The table (and the totals line) as text or markdown."""
    names = ["none", "one (small)", "one (large)", "two"]
    head = ["group", "runs", "scored", "2-run repro (max)", "b", *[f"median {n}" for n in names]]
    head += [f"±10% {n}" for n in ("none", "two")]
    body = [
        [
            str(r["group"]),
            str(r["runs"]),
            str(r["scored"]),
            _pct(r["reproduced"]),
            f"{r['exponent']:.2f}",
            *[_pct(r[n]) for n in names],
            _pct(r["none within"]),
            _pct(r["two within"]),
        ]
        for r in rows
    ]
    better = sum(
        1
        for r in rows
        if isinstance(r["two"], float)
        and isinstance(r["one (small)"], float)
        and isinstance(r["one (large)"], float)
        and r["two"] <= min(r["one (small)"], r["one (large)"]) + 1e-12
    )
    exact = sum(1 for r in rows if isinstance(r["reproduced"], float) and r["reproduced"] <= 0.01)
    total = (
        f"{len(rows)} groups: both calibration runs reproduced within 1% in {exact}; the two-run "
        f"curve's median error on the other runs ≤ the better one-run calibration in {better}"
    )
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(row) + " |" for row in body]
    else:
        widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
        lines = ["  ".join(x.ljust(w) for x, w in zip(row, widths, strict=True)) for row in [head, *body]]
    return "\n".join([*lines, "", total])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    print(render(evaluate(PerfAssumptions()), args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
