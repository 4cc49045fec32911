"""Serving planner: an infeasible job returns its nearest fixes as data (result.fixes), and
applying a fix makes the job feasible; rejected options name their offering, once each."""

from __future__ import annotations

import re

from optimizer.errors import Status
from optimizer.inputs.jobs.serve import serve_job_from_dict
from optimizer.solve.serve.plan import plan_serving


def _job(**constraints) -> dict:
    return {
        "name": "chat",
        "model": {"preset": "mistral-7b"},
        "workload": {
            "kind": "serve",
            "precision": "fp16",
            "requests_per_s": 3.0,
            "prompt_tokens": 512,
            "output_tokens": 256,
        },
        "constraints": {
            "gpu_types": ["L4", "A10G", "H100-80GB", "V100-16GB"],
            "providers": ["aws"],
            **constraints,
        },
    }


def _plan(rows, **constraints):
    return plan_serving(serve_job_from_dict(_job(**constraints)), rows)


def test_a_latency_target_below_every_option_returns_its_fix_as_data(rows) -> None:
    result = _plan(rows, ttft_s=0.001)
    assert result.status == Status.INFEASIBLE and result.binding == "latency"
    assert len(result.fixes) == 1
    fix = result.fixes[0]
    assert set(fix) == {"change", "requirement", "usd_per_hour"}
    assert fix["requirement"] == "ttft_s" and fix["usd_per_hour"] is None
    match = re.fullmatch(r"constraints\.ttft_s = ([0-9.]+)", fix["change"])
    assert match, fix["change"]
    value = float(match.group(1))
    # the sentence names the same number
    assert f"nearest fix: ttft_s = {match.group(1)}" in (result.explanation or "")
    # the fix is the nearest: it makes the job feasible, 1 ms less does not
    assert value > 0.001
    assert _plan(rows, ttft_s=value).status != Status.INFEASIBLE
    assert _plan(rows, ttft_s=value - 0.001).status == Status.INFEASIBLE


def test_too_few_replicas_returns_the_fix_and_the_cost_after_it(rows) -> None:
    result = _plan(rows, ttft_s=2.0, max_replicas=1, redundancy="n+1")
    assert result.status == Status.INFEASIBLE and result.binding == "capacity"
    (fix,) = result.fixes
    assert fix["requirement"] == "max_replicas"
    need = int(fix["change"].removeprefix("constraints.max_replicas = "))
    assert need > 1  # one spare instance alone already needs a second replica
    after = _plan(rows, ttft_s=2.0, max_replicas=need, redundancy="n+1")
    assert after.status != Status.INFEASIBLE
    assert sum(d.replicas for d in after.deployments) <= need
    # the cost is USD per served hour of that plan (the solver prices instances in whole cents)
    instances = sum(d.instances for d in after.deployments)
    assert abs(fix["usd_per_hour"] - after.usd_per_hour) <= 0.01 * instances + 0.005


def test_a_feasible_plan_has_no_fixes(rows) -> None:
    result = _plan(rows, ttft_s=2.0)
    assert result.status != Status.INFEASIBLE and result.fixes == ()


def test_rejected_options_name_the_offering_once_each_in_a_stable_order(rows) -> None:
    result = _plan(rows, ttft_s=2.0)
    # mistral-7b in fp16 is 13.5 GiB of weights: a 16 GB V100 cannot hold it with a KV cache
    assert result.rejected
    label = re.compile(r"(?P<gpu>[\w.-]+) ×(?P<n>\d+) TP(?P<tp>\d+) \(aws (?P<inst>[\w.-]+)\)")
    pairs = []
    for row in result.rejected:
        option, reason = row.split(": ", 1)
        m = label.fullmatch(option)
        assert m, option
        assert int(m["n"]) % int(m["tp"]) == 0
        pairs.append((option, reason))
    assert len(set(pairs)) == len(pairs)
    assert pairs == sorted(pairs)
    assert any(o.startswith("V100-16GB ×1 TP1 (aws ") and "GPU has 16" in r for o, r in pairs)
