"""The answer does not depend on the order of the price catalog's rows: the same offerings
shuffled give the same plan, alternatives and rejection reasons (each reason is the
offering's own, not inherited from whichever offering of its hardware class came first)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from optimizer import api

ROOT = Path(__file__).resolve().parents[2]
VOLATILE = {"wall_s", "solve_s", "enumerate_s", "age_days", "path", "source", "catalog", "price_source"}
#   (the same rows read from another file: "file" instead of "bundled" is the only difference)


def _mask(obj):
    if isinstance(obj, dict):
        return {k: _mask(v) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [_mask(v) for v in obj]
    return obj


@pytest.fixture(scope="module")
def shuffled(tmp_path_factory) -> Path:
    head, *rows = (ROOT / "pricing_data" / "offerings.csv").read_text().splitlines(True)
    random.Random(7).shuffle(rows)
    out = tmp_path_factory.mktemp("catalog") / "offerings.csv"
    out.write_text(head + "".join(rows))
    return out


@pytest.mark.parametrize("example", ["llama7b_10days", "qlora_70b_single_node"])
def test_shuffled_catalog_gives_the_same_plan(example, shuffled, no_user_state) -> None:
    job = ROOT / "examples" / f"{example}.toml"
    bundled = api.plan(job, offline=True, pareto=True)
    again = api.plan(job, prices=shuffled, pareto=True)
    assert _mask(again) == _mask(bundled)
    assert bundled["rejected"]  # the reasons are compared too, not an empty list


def test_shuffled_catalog_gives_the_same_comparison(shuffled, no_user_state) -> None:
    job = ROOT / "examples" / "llama7b_10days.toml"
    assert _mask(api.compare(job, prices=shuffled)) == _mask(api.compare(job, offline=True))


def test_exact_ties_go_by_the_stated_key_in_any_order() -> None:
    """Two offerings identical but for the provider's name cost the same to the cent and take
    the same time: the plan is the one tie_key puts first (provider "a"), in either order."""
    from optimizer.inputs.gpus import get_gpu
    from optimizer.inputs.jobs.train import Job
    from optimizer.model.setup import PerfAssumptions
    from optimizer.pricing.offering import Offering
    from optimizer.solve.train.plan import plan_job
    from optimizer.solve.train.prepare import prepare_from_offerings

    job = Job.model_validate(
        {
            "name": "t",
            "model": {
                "layers": 4,
                "hidden": 512,
                "heads": 8,
                "kv_heads": 4,
                "ffn": 1536,
                "vocab": 8000,
                "name": "tiny",
            },
            "workload": {"kind": "pretrain", "tokens": 2e8, "seq_len": 512, "global_batch": 16},
            "constraints": {"deadline_days": 30},
        }
    )
    twins = [
        Offering(
            key=p,
            kind="cloud",
            provider=p,
            instance="box",
            region="r",
            pricing="on_demand",
            gpu=get_gpu("L4"),
            gpus_per_instance=1,
            inter_node_gbps=100.0,
            usd_per_hour=0.8,
            max_instances=2,
        )
        for p in ("b", "a")
    ]
    for order in (twins, twins[::-1]):
        prep = prepare_from_offerings(job, job.model.resolve(), order, PerfAssumptions())
        plan = plan_job(job, prepared=prep, alternatives=0).plan
        assert plan.offering.provider == "a"
