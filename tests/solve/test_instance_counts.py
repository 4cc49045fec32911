"""Every cluster size: the planner searches every instance count on which the global batch is
realisable, not a power-of-two ladder (MPT-7B trained on 440 A100s = 55 nodes)."""

from __future__ import annotations

import pytest

from optimizer import api
from optimizer.inputs.jobs.train import job_from_dict
from optimizer.model.spec import ModelSpec
from optimizer.solve.train.enumerate import BatchRule, instance_counts

# MPT-7B (MosaicML model card): 32 layers, d_model 4096, 32 heads, 4× non-gated FFN, vocab
# 50,432, 2,048-token sequences, global batch 1,760 sequences, 440 A100-40GB
MPT_7B = {
    "name": "mpt-7b",
    "layers": 32,
    "hidden": 4096,
    "heads": 32,
    "ffn": 16384,
    "ffn_kind": "plain",
    "vocab": 50432,
}


def test_counts_are_the_sizes_that_realise_the_batch():
    model = ModelSpec(**MPT_7B)
    # 8 GPUs per node, batch 1,760 = 2^5·5·11: 55 nodes = 440 GPUs = dp 440 (440 | 1760)
    counts = instance_counts(1, 60, 8, BatchRule(1760), model)
    assert 55 in counts and 54 not in counts and 44 in counts  # 352 | 1760; 432 ∤ 1760
    # batch 1,024 = 2^10: n·8 = dp·tp·pp with dp | 1024 and tp, pp powers of two → n = 2^k
    assert instance_counts(1, 100, 8, BatchRule(1024), model) == [1, 2, 4, 8, 16, 32, 64]
    # a 5% tolerance admits any dp with a multiple in [972.8, 1075.2]: 12 nodes = dp 96 (×11)
    assert 12 in instance_counts(1, 20, 8, BatchRule(1024, 0.05), model)
    assert instance_counts(3, 5) == [3, 4, 5]


def _job(**constraints):
    return job_from_dict(
        {
            "name": "mpt-7b-440",
            "model": MPT_7B,
            "workload": {"tokens": 1e12, "seq_len": 2048, "global_batch": 1760},
            "constraints": {"gpu_types": ["A100-40GB"], "providers": ["aws"], "max_gpus": 440, **constraints},
        }
    )


@pytest.mark.parametrize("pricing", [["on_demand"]])
def test_mpt7b_on_440_a100s_plans_55_nodes(pricing, no_user_state):
    forced = api.plan(_job(min_instances=55, pricing=pricing), offline=True, alternatives=0)
    assert forced["status"] == "optimal"
    at_55 = forced["plan"]
    assert at_55["instances"] == 55 and at_55["gpus"] == 440
    # a deadline only 55 nodes meet: every smaller realisable count is slower, 55 is the cap
    data = api.plan(_job(deadline_hours=at_55["hours"] + 0.01, pricing=pricing), offline=True, alternatives=0)
    assert data["status"] == "optimal"
    assert data["plan"]["instances"] == 55  # neither ≤ 8 nor 2^k nor 3·2^k
    assert data["plan"]["cost_usd"] == pytest.approx(at_55["cost_usd"], abs=0.01)
