"""Scale: a price catalog ten times the bundled size, and a 200-job batch (issue 18, item 7).

Targets: the 10× catalog plans the headline example in ≤ 3 s (load + validate + enumerate +
solve); a 200-job batch returns within its time limit (plus enumeration) with an honest bound
(bound ≤ objective, gap ≥ 0); peak memory (max RSS) stays under 2 GiB.

The big catalog repeats every bundled row in FACTOR regions ("us-east-1~3"), so its answer
must equal the bundled one's at the same price (a check the benchmark prints).

    python benchmarks/scale.py                      # both, the default sizes
    python benchmarks/scale.py --factor 20 --jobs 300 --time-limit 60
"""

from __future__ import annotations

import argparse
import csv
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # sibling benchmark scripts

from batch_scaling import generate_batch  # noqa: E402

from optimizer import api  # noqa: E402
from optimizer.pricing.catalog import bundled_path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "llama7b_10days.toml"
MAX_PLAN_S = 3.0
MAX_RSS_GIB = 2.0


def big_catalog(factor: int, path: Path) -> int:
    """Write the bundled catalog with every row repeated in `factor` regions; returns rows."""
    with bundled_path().open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        for k in range(factor):
            for row in rows:
                writer.writerow({**row, "region": row["region"] if k == 0 else f"{row['region']}~{k}"})
    return len(rows) * factor


def bench_catalog(factor: int, job: Path = EXAMPLE) -> dict[str, Any]:
    """Plan `job` on the bundled tables and on a `factor`× catalog: times and both answers."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "offerings.csv"
        n = big_catalog(factor, path)
        t = time.perf_counter()
        big = api.plan(job, prices=path, alternatives=3)
        big_s = time.perf_counter() - t
    t = time.perf_counter()
    small = api.plan(job, offline=True, alternatives=3)
    small_s = time.perf_counter() - t
    same = (big["plan"] or {}).get("cost_usd") == (small["plan"] or {}).get("cost_usd")
    return {
        "rows": n,
        "plan_s": big_s,
        "bundled_plan_s": small_s,
        "same_answer": same,
        "cost_usd": (big["plan"] or {}).get("cost_usd"),
        "ok": big_s <= MAX_PLAN_S and same,
    }


def bench_batch(jobs: int, time_limit_s: float, workers: int = 2) -> dict[str, Any]:
    """Plan a generated batch of `jobs` jobs: wall time against the limit, bound and gap."""
    t = time.perf_counter()
    result = api.batch(generate_batch(jobs), offline=True, time_limit_s=time_limit_s, workers=workers)
    wall_s = time.perf_counter() - t
    data = api.batch_json(result)
    s = data["solver"]
    bound, objective = s.get("best_bound_usd"), s.get("objective_usd")
    honest = bound is None or objective is None or (bound <= objective + 1e-6 and s["gap"] >= 0)
    return {
        "jobs": jobs,
        "status": data["status"],
        "wall_s": wall_s,
        "solve_s": s.get("solve_s", s.get("wall_s")),
        "enumerate_s": s.get("enumerate_s"),
        "time_limit_s": time_limit_s,
        "objective_usd": objective,
        "bound_usd": bound,
        "gap": s.get("gap"),
        "honest_bound": honest,
        "ok": honest and (s.get("solve_s") or 0) <= time_limit_s * 1.1 + 1,
    }


def max_rss_gib() -> float:
    """Peak resident memory of this process (Linux: KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--factor", type=int, default=10, help="catalog size × bundled")
    parser.add_argument("--jobs", type=int, default=200, help="jobs in the batch")
    parser.add_argument("--time-limit", type=float, default=30.0, help="batch solver limit, s")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    cat = bench_catalog(args.factor)
    print(
        f"catalog {args.factor}× ({cat['rows']:,} rows): plan in {cat['plan_s']:.2f} s "
        f"(target ≤ {MAX_PLAN_S:g} s; bundled {cat['bundled_plan_s']:.2f} s), same answer as "
        f"bundled: {cat['same_answer']} (${cat['cost_usd']:,.2f})"
    )
    b = bench_batch(args.jobs, args.time_limit, args.workers)
    print(
        f"batch {b['jobs']} jobs: {b['status']} in {b['wall_s']:.1f} s wall (solve "
        f"{b['solve_s']:.1f} s of a {b['time_limit_s']:g} s limit, enumerate "
        f"{b['enumerate_s'] or 0:.1f} s); objective ${b['objective_usd'] or 0:,.2f}, bound "
        f"${b['bound_usd'] or 0:,.2f}, gap {b['gap'] or 0:.2%}; honest bound: {b['honest_bound']}"
    )
    rss = max_rss_gib()
    print(f"peak memory {rss:.2f} GiB (target < {MAX_RSS_GIB:g} GiB)")
    sys.exit(0 if cat["ok"] and b["ok"] and rss < MAX_RSS_GIB else 1)


if __name__ == "__main__":
    main()
