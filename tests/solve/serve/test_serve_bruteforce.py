"""The serving CP-SAT model against brute force on small integer instances, and monotonicity."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optimizer.inputs.jobs.serve import serve_job_from_dict
from optimizer.model.setup import PerfAssumptions
from optimizer.pricing.catalog import load_offering_rows
from optimizer.report.serve import serve_json
from optimizer.solve.cpsat.solver import SolverConfig
from optimizer.solve.serve.model import solve_problem
from optimizer.solve.serve.plan import plan_serving
from optimizer.solve.serve.problem import IntOption, IntProblem, problem_cost_cents

CFG = SolverConfig(time_limit_s=5.0, workers=1)
MAX_COUNT = 7  # ≥ loads (≤ 3 units × 2 buckets) + 1 spare instance: each replica serves ≥ 1 unit


def _splits(total: int, parts: int):
    """All ways to write `total` as an ordered sum of `parts` non-negative integers."""
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _splits(total - first, parts - 1):
            yield (first, *rest)


def _assignable(p: IntProblem, counts: tuple[int, ...]) -> bool:
    """Some integer split of every bucket's load over options fits each option's time."""
    n_b = len(p.load_units)
    per_bucket = [list(_splits(load, len(p.options))) for load in p.load_units]
    for combo in itertools.product(*per_bucket):
        ok = True
        for i, o in enumerate(p.options):
            busy = 0
            for b in range(n_b):
                units = combo[b][i]
                if units and (o.time_per_unit[b] is None or not counts[i]):
                    ok = False
                    break
                busy += units * (o.time_per_unit[b] or 0)
            if not ok:
                break
            spare = p.spare if counts[i] else 0
            if busy > p.time_per_replica * o.replicas_per_instance * (counts[i] - spare):
                ok = False
                break
        if ok:
            return True
    return False


def brute_force(p: IntProblem) -> int | None:
    """Least cost over every count vector in 0..MAX_COUNT that satisfies every constraint."""
    vectors = sorted(
        itertools.product(range(MAX_COUNT + 1), repeat=len(p.options)), key=lambda c: problem_cost_cents(p, c)
    )
    for counts in vectors:
        replicas = sum(o.replicas_per_instance * n for o, n in zip(p.options, counts, strict=True))
        if p.max_replicas is not None and replicas > p.max_replicas:
            continue
        groups: dict[str, list[int]] = {}
        for o, n in zip(p.options, counts, strict=True):
            if o.max_instances is not None:
                groups.setdefault(o.group, []).append(n)
        limits = {
            o.group: min(
                q.max_instances for q in p.options if q.group == o.group and q.max_instances is not None
            )
            for o in p.options
            if o.max_instances is not None
        }
        if any(sum(ns) > limits[g] for g, ns in groups.items()):
            continue
        if _assignable(p, counts):
            return problem_cost_cents(p, counts)
    return None


@st.composite
def problems(draw) -> IntProblem:
    n_buckets = draw(st.integers(1, 2))
    T = draw(st.integers(3, 6))
    options = []
    for i in range(draw(st.integers(1, 3))):
        times = tuple(draw(st.one_of(st.none(), st.integers(1, T))) for _ in range(n_buckets))
        shared = draw(st.booleans())
        options.append(
            IntOption(
                cost_cents=draw(st.integers(1, 60)),
                replicas_per_instance=draw(st.integers(1, 2)),
                time_per_unit=times,
                gpus_per_instance=draw(st.sampled_from([1, 2, 4])),
                group="g0" if shared else f"g{i + 1}",
                max_instances=draw(st.one_of(st.none(), st.integers(1, 4))),
            )
        )
    loads = tuple(draw(st.integers(0, 3)) for _ in range(n_buckets))
    return IntProblem(
        tuple(options),
        loads,
        T,
        spare=draw(st.integers(0, 1)),
        max_replicas=draw(st.one_of(st.none(), st.integers(1, 6))),
    )


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_cp_sat_equals_brute_force(p):
    sol = solve_problem(p, CFG)
    expected = brute_force(p)
    if expected is None:
        assert sol.status == "infeasible"
        return
    assert sol.status == "optimal"
    assert sol.cost_cents == expected == problem_cost_cents(p, sol.counts)
    # the returned assignment is itself valid (plain-Python check)
    for b, load in enumerate(p.load_units):
        assert sum(row[b] for row in sol.assignment) == load
    for i, o in enumerate(p.options):
        busy = sum(u * (t or 0) for u, t in zip(sol.assignment[i], o.time_per_unit, strict=True))
        spare = p.spare if sol.counts[i] else 0
        assert busy <= p.time_per_replica * o.replicas_per_instance * (sol.counts[i] - spare)


@settings(max_examples=60, deadline=None)
@given(problems(), st.integers(0, 1), st.integers(1, 2))
def test_more_load_never_costs_less_integer(p, bucket, extra):
    bucket = min(bucket, len(p.load_units) - 1)
    more = list(p.load_units)
    more[bucket] += extra
    bigger = IntProblem(p.options, tuple(more), p.time_per_replica, p.spare, p.max_replicas)
    small, large = solve_problem(p, CFG), solve_problem(bigger, CFG)
    if large.status != "infeasible":
        assert small.status != "infeasible"
        assert small.cost_cents <= large.cost_cents


@pytest.fixture(scope="module")
def small_rows():
    rows = load_offering_rows(offline=True)[0]
    return [
        r
        for r in rows
        if r.gpu_id in ("L4", "A10G", "H100-80GB") and r.provider == "aws" and r.pricing_model == "on_demand"
    ]


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.floats(0.2, 30.0), st.floats(1.0, 3.0), st.booleans())
def test_more_load_never_costs_less_pipeline(small_rows, rps, factor, buckets):
    def cost(load: float) -> float:
        workload = {"kind": "serve", "precision": "fp16", "requests_per_s": load}
        if buckets:
            workload["buckets"] = [
                {"share": 0.7, "prompt_tokens": 256, "output_tokens": 128},
                {"share": 0.3, "prompt_tokens": 3000, "output_tokens": 400},
            ]
        else:
            workload.update(prompt_tokens=512, output_tokens=256)
        job = serve_job_from_dict(
            {
                "model": {"preset": "mistral-7b"},
                "workload": workload,
                "constraints": {"ttft_s": 2.0, "tpot_ms": 120, "redundancy": "n+1"},
            }
        )
        out = serve_json(plan_serving(job, small_rows, config=CFG, assumptions=PerfAssumptions()))
        assert out["status"] == "optimal", out["explanation"]
        assert out["plan"]["capacity_requests_per_s"] >= load * 0.999
        return out["plan"]["usd_per_hour"]

    assert cost(rps) <= cost(rps * factor) + 1e-9
