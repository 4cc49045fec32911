"""A layout the memory model used to reject, admitted now, with the published run that ran it.

NeMo 24.07 performance summary (docs/source/performance/performance_summary.md at 070a0bb1,
'Pretraining' table, DGX-H100, FP8; validation row nemo2407-gpt3-20b-h100-fp8-64gpu):
GPT3-20B on 64 H100-80GB at TP 2, PP 1, micro-batch 2, global batch 256, distributed
optimizer, no activation recomputation. Before issue 26 the model put that layout at 95.5 GiB
(fp8 runs: a bf16 weight + a cached fp8 copy = 3 B and fp32 gradients 4 B per parameter, and
the fitted activation term of the eager stacks) and a plan had to recompute activations.
"""

from __future__ import annotations

import pytest

from benchmarks.runs_fit import check_all
from optimizer import api
from optimizer.model.memory import training_memory
from optimizer.model.setup import Layout, TrainingSetup
from optimizer.model.spec import ModelSpec

pytestmark = pytest.mark.usefixtures("isolated")

SOURCE = (
    "https://github.com/NVIDIA/NeMo/blob/070a0bb168d405d653b9734c0017cf5078e77c0d/"
    "docs/source/performance/performance_summary.md"
)
SHAPE = {"layers": 44, "hidden": 6144, "heads": 48, "kv_heads": 48, "ffn": 24576, "vocab": 50257}


def _job(checkpointing: list[str] | None = None) -> dict:
    # at the median (confidence 0.5: the point), so the test is of memory, not of the band's width
    constraints = {
        "gpu_types": ["H100-80GB"],
        "max_gpus": 64,
        "deadline_days": 1.0,
        "zero_stages": [1],
        "confidence": 0.5,
    }
    if checkpointing:
        constraints["activation_checkpointing"] = checkpointing
    return {
        "name": "gpt3-20b-fp8",
        "model": {"name": "nemo-gpt3-20b", **SHAPE, "ffn_kind": "plain", "norm": "layernorm"},
        "workload": {
            "kind": "pretrain",
            "tokens": 20e9,
            "seq_len": 2048,
            "global_batch": 256,
            "precision": "fp8",
            "stack": "megatron-core",
        },
        "constraints": constraints,
    }


def test_the_run_is_the_published_one() -> None:
    check = next(c for c in check_all() if c.case.row.case_id == "nemo2407-gpt3-20b-h100-fp8-64gpu")
    assert check.fits  # benchmarks/runs_fit.py: its configuration fits its card
    row = check.case.row
    assert row.source_url == SOURCE
    assert (row.gpu, row.num_gpus, row.precision, row.tp, row.pp, row.micro_batch) == (
        "H100-80GB",
        64,
        "fp8",
        2,
        1,
        2,
    )
    assert (row.layers, row.hidden, row.ffn, row.vocab) == (44, 6144, 24576, 50257)


def test_published_layout_fits() -> None:
    spec = ModelSpec(name="nemo-gpt3-20b", **SHAPE, ffn_kind="plain", norm="layernorm")
    setup = TrainingSetup(seq_len=2048, precision="fp8", stack="megatron-core")
    layout = Layout(dp=32, tp=2, zero_stage=1, micro_batch=2, grad_accum=4)
    mem = training_memory(spec, setup, layout)
    assert mem.device <= 80.0  # it ran on 80 GB cards
    # model states by hand: fp8 weight + transpose 2 B, bf16 gradient 2 B, fp32 master and
    # Adam moments 12 B sharded over dp 32, on half the parameters (tp 2)
    states = (mem.weights + mem.gradients + mem.optimizer) * 2**30
    assert states == pytest.approx(spec.params() / 2 * (2 + 2 + 12 / 32), rel=1e-3)


def test_plan_without_recompute_is_cheaper_than_the_recompute_the_old_model_needed() -> None:
    plan = api.plan(_job(), offline=True, alternatives=0)["plan"]
    forced = api.plan(_job(["full"]), offline=True, alternatives=0)["plan"]
    assert plan["layout"]["activation_checkpointing"] == "none"
    assert plan["memory_gib"]["device"] <= plan["gpu_memory_gib"]
    # the old model could only plan this job with full recomputation (main at 597253f: 64
    # GPUs, TP 8, full recompute, $5,281); without it the same GPUs finish sooner and cheaper
    assert plan["cost_usd"] < forced["cost_usd"]
    assert plan["gpus"] <= 64 and plan["days"] <= 1.0
