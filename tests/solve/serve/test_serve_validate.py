"""validate_serve catches a tampered serving plan; the planner's answers are deterministic."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from optimizer.errors import SolverError, Status
from optimizer.inputs.jobs.serve import load_serve_job
from optimizer.model.setup import PerfAssumptions
from optimizer.report.serve import serve_compare_json, serve_json
from optimizer.solve.cpsat.solver import SolverConfig
from optimizer.solve.serve.model import solve_problem
from optimizer.solve.serve.plan import compare_serving, plan_serving
from optimizer.solve.serve.problem import IntOption, IntProblem
from optimizer.solve.serve.result import ServeResult
from optimizer.solve.serve.validate import serve_violations, validate_serve

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples/serve_8b_4090_vs_cloud.toml"


pytestmark = pytest.mark.usefixtures("no_user_state")


@pytest.fixture(scope="module")
def chatbot(rows) -> ServeResult:
    job, base_dir = load_serve_job(ROOT / "examples/serve_mistral7b_chatbot.toml")
    return plan_serving(job, rows, base_dir, assumptions=PerfAssumptions())


def _tamper(result: ServeResult, **changes) -> ServeResult:
    d = result.deployments[0]
    return replace(result, deployments=(replace(d, **changes), *result.deployments[1:]))


def test_solver_answer_is_valid(chatbot):
    assert chatbot.status == Status.OPTIMAL
    assert serve_violations(chatbot) == []
    assert validate_serve(chatbot) is chatbot


def test_unassigned_load_is_caught(chatbot):
    d = chatbot.deployments[0]
    bad = _tamper(chatbot, assigned_rps=tuple(r * 0.9 for r in d.assigned_rps))
    with pytest.raises(SolverError, match="requests/s assigned, load is"):
        validate_serve(bad)


def test_too_few_instances_is_caught(chatbot):
    # one replica lost: busy time no longer fits the replicas minus the N+1 spare
    d = chatbot.deployments[0]
    fewer = max(d.instances - 1, 0)
    bad = _tamper(chatbot, instances=fewer)
    problems = serve_violations(bad)
    assert any("busy" in p or "instances" in p for p in problems), problems
    with pytest.raises(SolverError, match="fails validation"):
        validate_serve(bad)


def test_latency_target_is_caught(chatbot):
    c = chatbot.constraints.model_copy(update={"tpot_ms": 1.0})
    with pytest.raises(SolverError, match="TPOT"):
        validate_serve(replace(chatbot, constraints=c))


def test_instance_limit_and_max_replicas_are_caught(chatbot):
    d = chatbot.deployments[0]
    capped = replace(d.option, offering=replace(d.option.offering, max_instances=1))
    bad = _tamper(chatbot, instances=d.instances + 1, option=capped)
    assert any("> limit 1" in p for p in serve_violations(bad))
    c = chatbot.constraints.model_copy(update={"max_replicas": 1})
    with pytest.raises(SolverError, match="max_replicas = 1"):
        validate_serve(replace(chatbot, constraints=c))


def test_cost_mismatch_is_caught(chatbot):
    solver = dict(chatbot.solver, objective_cents=chatbot.solver["objective_cents"] + 100)
    with pytest.raises(SolverError, match="cents does not match"):
        validate_serve(replace(chatbot, solver=solver))


def test_feasible_status_without_deployments_is_caught(chatbot):
    assert serve_violations(replace(chatbot, deployments=()))


def test_equal_cost_ties_break_on_rank():
    # two options of equal cost and GPUs; the lower rank wins, whichever comes first
    a = IntOption(cost_cents=10, replicas_per_instance=1, time_per_unit=(5,), group="a", rank=2)
    b = IntOption(cost_cents=10, replicas_per_instance=1, time_per_unit=(5,), group="b", rank=1)
    for opts in ((a, b), (b, a)):
        sol = solve_problem(IntProblem(opts, (10,), 100), SolverConfig(workers=2))
        chosen = [o for o, n in zip(opts, sol.counts, strict=True) if n]
        assert chosen == [b] and sol.cost_cents == 10


def _strip_timing(obj):
    if isinstance(obj, dict):
        return {k: _strip_timing(v) for k, v in obj.items() if k != "wall_s"}
    if isinstance(obj, list):
        return [_strip_timing(v) for v in obj]
    return obj


def test_same_input_same_answer(rows):
    # CP-SAT with 2 workers may find any of several equal-cost optima; the tie-break key makes
    # the answer unique (this example has ties on the RTX 4090 box and the 4× L4 instance)
    job, base_dir = load_serve_job(EXAMPLE)
    cfg = SolverConfig(workers=2)
    runs = [
        json.dumps(
            _strip_timing(serve_compare_json(compare_serving(job, rows, base_dir, cfg, PerfAssumptions()))),
            sort_keys=True,
        )
        for _ in range(3)
    ]
    assert runs[0] == runs[1] == runs[2]
    data = json.loads(runs[0])
    plain = serve_json(plan_serving(job, rows, base_dir, cfg, PerfAssumptions()))
    plain.pop("schema_version")  # only top-level outputs carry it
    assert _strip_timing(plain) == _strip_timing(data["best"])
