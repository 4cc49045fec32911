"""Mix speed: planning a mixed cluster (issue 32) on the full bundled catalog.

Run: python benchmarks/mix_speed.py
For each case the single-type plan is made first (not timed here: benchmarks/plan_speed.py);
then the mix (solve/train/mix.plan_mix: type groups, the per-count sizes or balanced per-type
splits, one CP-SAT model per group or pair, and the lower-bound rule that skips mixes that
cannot undercut the plan) is timed, median of 5 runs. Target: < 1 s.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

from optimizer.inputs.jobs.train import Job, ReservedHeld, job_from_dict, load_job
from optimizer.pricing.catalog import load_offering_rows
from optimizer.solve.train.mix.search import plan_mix
from optimizer.solve.train.plan import plan_job

ROOT = Path(__file__).resolve().parents[1]
RUNS = 5


def _example(path: str, **constraints: Any) -> Job:
    job, _ = load_job(ROOT / path)
    return job.model_copy(update={"constraints": job.constraints.model_copy(update=constraints)})


def _quota_case() -> Job:
    """16 H100 (2 × p5.48xlarge; 1 × p5.4xlarge) and 32 A100 (4 × p4de.24xlarge) obtainable in
    aws (availability), 180 h deadline."""
    return job_from_dict(
        {
            "name": "7b-100b-quota",
            "model": {"preset": "llama-2-7b"},
            "workload": {"tokens": 100e9, "seq_len": 4096, "global_batch": 512},
            "constraints": {
                "deadline_hours": 180,
                "gpu_types": ["H100-80GB", "A100-80GB"],
                "providers": ["aws"],
                "availability": [
                    {"provider": "aws", "instance": "p5.48xlarge", "max_instances": 2},
                    {"provider": "aws", "instance": "p5.4xlarge", "max_instances": 1},
                    {"provider": "aws", "instance": "p4de.24xlarge", "max_instances": 4},
                ],
            },
        }
    )


def cases() -> list[tuple[str, Job]]:
    held: dict[str, Any] = {"provider": "aws", "instance": "p5.48xlarge", "region": "us-east-1", "count": 1}
    held_p4d = dict(held, instance="p4d.24xlarge", count=2)
    return [
        (
            "llama7b_10days (on_demand), 2 held p4d",
            _example("examples/llama7b_10days.toml", reserved_held=(ReservedHeld(**held_p4d),)),
        ),
        (
            "llama7b_10days, on_demand + spot",
            _example("examples/llama7b_10days.toml", pricing=("on_demand", "spot")),
        ),
        (
            "llama7b_10days, 1 held p5 + on_demand + spot",
            _example(
                "examples/llama7b_10days.toml",
                pricing=("on_demand", "spot"),
                reserved_held=(ReservedHeld(**held),),
            ),
        ),
        ("7B 100B tokens, 180 h, 16 H100 + 32 A100 obtainable (aws)", _quota_case()),
    ]


def money(usd: float | None) -> str:
    return "–" if usd is None else f"${usd:,.0f}"


def main() -> None:
    rows = load_offering_rows(offline=True)[0]
    print("| case | single-type plan | mix | saving | models (skipped) | CP-SAT s | mix s (median of 5) |")
    print("|---|---|---|---:|---:|---:|---:|")
    for label, job in cases():
        res = plan_job(job, rows, alternatives=0)
        times = []
        for _ in range(RUNS):
            start = time.perf_counter()
            out = plan_mix(res.prepared, res.plan, rows)  # type: ignore[arg-type]
            times.append(time.perf_counter() - start)
        single = (
            None
            if res.plan is None
            else f"{res.plan.instances}× {res.plan.offering.instance} {money(res.plan.cost_usd)}"
        )
        shown = out.plan or out.best
        mix = (
            "none"
            if shown is None
            else " + ".join(f"{r.count}× {r.offering.instance} {r.offering.pricing}" for r in shown.rows)
            + f" {money(shown.cost_usd)}"
            + ("" if out.plan is not None else " (not cheaper)")
        )
        saving = money(out.saving_usd) if out.plan is not None and out.saving_usd is not None else "–"
        print(
            f"| {label} | {single or 'infeasible'} | {mix} | {saving} | {out.solver['models']} "
            f"({out.solver['skipped']}) | {out.solver['wall_s']:.3f} | {statistics.median(times):.3f} |"
        )


if __name__ == "__main__":
    main() if not sys.argv[1:] else sys.exit("usage: python benchmarks/mix_speed.py")
