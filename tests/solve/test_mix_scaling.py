"""The mix search's pruning (mix/data.py pareto_useful) never changes the cheapest mix, and
the pairing works per fabric (no all-pairs loop over the price table's groups)."""

from __future__ import annotations

from dataclasses import replace
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optimizer.inputs.jobs.train import job_from_dict
from optimizer.pricing.offerings import cloud_offering
from optimizer.solve.train.mix import search
from optimizer.solve.train.mix.data import PriceRow, TypeGroup, pareto_useful
from optimizer.solve.train.plan import plan_job

P4DE, P5 = "p4de.24xlarge", "p5.48xlarge"


def _table(rows, moves):
    """The us-east-1 rows of two instance types, copied to one region per entry of `moves`,
    each row's price times that entry's factor."""
    base = [r for r in rows if r.instance_type in (P4DE, P5) and r.region == "us-east-1"]
    base = [r for r in base if r.pricing_model in ("on_demand", "spot")]
    out = []
    for k, factors in enumerate(moves):
        for n, r in enumerate(base):
            price = round(r.usd_per_hour * factors[n % len(factors)], 4)
            update = {
                "region": f"us-east-1~{k}",
                "usd_per_hour": price,
                "usd_per_gpu_hour": price / r.gpus_per_instance,
            }
            out.append(r.model_copy(update=update))
    return out


def _cents(outcome):
    return None if outcome.best is None else round(outcome.best.cost_usd * 100)


@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    moves=st.lists(
        st.lists(st.sampled_from([0.8, 1.0, 1.0, 1.25]), min_size=4, max_size=4), min_size=1, max_size=3
    ),
    caps=st.tuples(st.integers(1, 3), st.integers(1, 2)),
    deadline_h=st.sampled_from([None, 150.0, 300.0]),
)
def test_pruning_keeps_the_cheapest_mix(rows, moves, caps, deadline_h):
    cons = {
        "pricing": ["on_demand", "spot"],
        "gpu_types": ["H100-80GB", "A100-80GB"],
        "providers": ["aws"],
        "availability": [
            {"provider": "aws", "instance": P4DE, "max_instances": caps[0]},
            {"provider": "aws", "instance": P5, "max_instances": caps[1]},
        ],
    }
    if deadline_h:
        cons["deadline_hours"] = deadline_h
    job = job_from_dict(
        {
            "name": "mix-prune",
            "model": {"preset": "llama-2-7b"},
            "workload": {"tokens": 20e9, "seq_len": 4096, "global_batch": 512},
            "constraints": cons,
        }
    )
    table = _table(rows, moves)
    res = plan_job(job, table, alternatives=0)
    pruned = search.plan_mix(res.prepared, res.plan, table)
    with mock.patch.object(search, "pareto_useful", lambda items: list(items)):
        full = search.plan_mix(res.prepared, res.plan, table)
    assert _cents(pruned) == _cents(full)
    assert pruned.solver["models"] <= full.solver["models"]


def _group(rows, region, price, cap):
    off = next(r for r in rows if r.instance_type == P4DE and r.pricing_model == "on_demand")
    o = replace(
        cloud_offering(off.model_copy(update={"region": region})), usd_per_hour=price, max_instances=cap
    )
    return TypeGroup("aws", P4DE, region, (PriceRow(o, cap),))


def test_pareto_useful_keeps_only_unbeaten_places(rows):
    # the same instance type in four places: b is beaten by a (dearer, smaller cap); c is
    # cheaper but capped lower (kept); d ties a exactly (the first kept)
    a, b = _group(rows, "r-a", 10.0, 4), _group(rows, "r-b", 11.0, 3)
    c, d = _group(rows, "r-c", 9.0, 2), _group(rows, "r-d", 10.0, 4)
    assert pareto_useful([(a,), (b,), (c,), (d,)]) == [(a,), (c,)]
    assert pareto_useful([(a, c), (b, c), (a, b)]) == [(a, c), (a, b)]
