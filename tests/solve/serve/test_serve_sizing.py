"""Serving sizing checked by hand: KV cache, quantised weights, what fits where."""

from __future__ import annotations

import pytest

from optimizer.inputs.calibration import base_assumptions
from optimizer.inputs.gpus import get_gpu
from optimizer.inputs.jobs.serve import Bucket, serve_job_from_dict
from optimizer.model.memory import GIB, kv_cache_bytes_per_token, serving_weight_bytes
from optimizer.model.presets import get_preset
from optimizer.model.setup import PerfAssumptions
from optimizer.model.spec import ModelSpec
from optimizer.pricing.offering import hourly_usd
from optimizer.pricing.offerings import job_offerings
from optimizer.report.serve import serve_json
from optimizer.solve.serve.options import (
    batch_ladder,
    max_batch_that_fits,
    replica_options,
    tp_degrees,
)
from optimizer.solve.serve.plan import plan_serving

MIB = 2**20


def _job(preset: str, **workload) -> dict:
    base = {
        "kind": "serve",
        "precision": "fp16",
        "requests_per_s": 1.0,
        "prompt_tokens": 512,
        "output_tokens": 256,
    }
    return {"model": {"preset": preset}, "workload": {**base, **workload}}


# 2 (K, V) × layers × kv_heads × head_dim × 2 bytes (fp16), from the published configs
@pytest.mark.parametrize(
    "preset, mib",
    [
        ("llama-2-7b", 2 * 32 * 32 * 128 * 2 / MIB),  # = 0.5 MiB/token (MHA)
        ("llama-2-70b", 2 * 80 * 8 * 128 * 2 / MIB),  # = 0.3125 MiB/token (GQA, 8 KV heads)
        ("mistral-7b", 2 * 32 * 8 * 128 * 2 / MIB),  # = 0.125 MiB/token
    ],
)
def test_kv_cache_per_token(preset, mib):
    assert kv_cache_bytes_per_token(get_preset(preset)) / MIB == pytest.approx(mib, rel=1e-12)
    assert {"llama-2-7b": 0.5, "llama-2-70b": 0.3125, "mistral-7b": 0.125}[preset] == mib


def test_weight_bytes_by_format():
    m = get_preset("llama-2-7b")
    assert m.params() == 6_738_415_616
    dense = 2 * 32000 * 4096  # embedding + untied LM head stay 16-bit in AWQ/GPTQ checkpoints
    assert serving_weight_bytes(m, "fp16") == 2 * 6_738_415_616
    assert serving_weight_bytes(m, "int8") == (6_738_415_616 - dense) * 1 + dense * 2
    # int4 group-128 with fp16 scale + zero per group: 4 + 32/128 = 4.25 bits/weight
    int4 = (6_738_415_616 - dense) * 4.25 / 8 + dense * 2
    assert serving_weight_bytes(m, "int4") == int4
    assert int4 / GIB == pytest.approx(3.6925, abs=1e-4)
    assert serving_weight_bytes(m, "awq") == serving_weight_bytes(m, "gptq") == int4


def test_int4_7b_fits_t4_with_batch_21():
    # Llama-2-7B int4 on a T4 (15,360 MiB = 15 GiB as nvidia-smi reports it, ECC on; the "16 GB"
    # is decimal), prompt 512 + output 256 = 768 tokens per sequence, no stack named (generic:
    # KV held for the full 768 tokens, vLLM-like budget of 0.9 × 15 GiB = 13.5 GiB for
    # allocated memory + the 0.6 GiB CUDA context; stacks.toml [generic]):
    #   weights    3.6925 GiB (test above)
    #   KV         0.5 MiB × 768 = 0.375 GiB per sequence
    #   acts       one 8192-token prefill chunk × (4·4096 + 3·11008) × 2 B = 0.7539 GiB
    #              + fp32 logits 32000 × 4 B = 0.000119 GiB per sequence
    #   workspace  0.25 GiB (PerfAssumptions.workspace_gib)
    #   3.6925 + 0.7539 + 0.25 + 0.6 + 0.375119·B ≤ 13.5  ->  B ≤ 21.87  ->  21 sequences
    m = get_preset("llama-2-7b")
    bucket = Bucket(share=1.0, prompt_tokens=512, output_tokens=256)
    assert max_batch_that_fits(m, "int4", "fp16", get_gpu("T4"), 1, bucket, 256) == 21
    # fp16 weights (12.551 GiB): 12.551 + 0.25 + 0.6 = 13.40 GiB before any sequence, and one
    # sequence needs 0.375 + 0.0707 + 0.0001 GiB more than the 0.099 left: none fits
    assert max_batch_that_fits(m, "fp16", "fp16", get_gpu("T4"), 1, bucket, 256) == 0
    # the cap is the stack's scheduler limit (vLLM max_num_seqs 256) or the job's, whichever
    # is lower
    assert max_batch_that_fits(m, "int4", "fp16", get_gpu("T4"), 1, bucket, 8) == 8
    assert batch_ladder(24) == [1, 2, 4, 8, 16, 24]


def test_tp_degrees_divide_instance_and_heads():
    m = get_preset("llama-2-70b")  # 64 heads, 8 KV heads
    assert tp_degrees(m, 8) == [1, 2, 4, 8]
    assert tp_degrees(m, 4) == [1, 2, 4]
    assert tp_degrees(m, 1) == [1]
    odd = ModelSpec(layers=2, hidden=12 * 128, heads=12, kv_heads=6, ffn=4096, vocab=1000)
    assert tp_degrees(odd, 8) == [1, 2]


def test_70b_fp16_never_on_fewer_than_two_80gb_gpus(rows):
    job = serve_job_from_dict(_job("llama-2-70b", requests_per_s=2.0))
    offerings = job_offerings(rows, job.constraints)
    options, rejected, _ = replica_options(
        get_preset("llama-2-70b"), job.workload, job.constraints, offerings, PerfAssumptions()
    )
    small = [o for o in options if o.offering.gpu.memory_gib <= 80]
    assert small and all(o.tp >= 2 for o in small)
    assert any(r.startswith("H100-80GB ×") and " TP1 (" in r and "GPU has 80" in r for r in rejected)
    # the plan restricted to 80 GB GPUs uses TP ≥ 2 in every deployment
    data = _job("llama-2-70b", requests_per_s=2.0)
    data["constraints"] = {"gpu_types": ["H100-80GB", "A100-80GB"]}
    res = plan_serving(serve_job_from_dict(data), rows, assumptions=PerfAssumptions())
    out = serve_json(res)
    assert out["status"] == "optimal"
    assert all(d["tp"] >= 2 and d["gpus"] >= 2 for d in out["plan"]["deployments"])


def test_int4_7b_plan_on_t4(rows):
    data = _job("llama-2-7b", precision="awq", requests_per_s=0.5)
    data["constraints"] = {"gpu_types": ["T4"], "tpot_ms": 200}
    out = serve_json(plan_serving(serve_job_from_dict(data), rows, assumptions=PerfAssumptions()))
    assert out["status"] == "optimal"
    dep = out["plan"]["deployments"][0]
    assert dep["gpu"] == "T4" and dep["precision"] == "int4"
    assert 1 <= dep["batch"] <= 24 and dep["memory_gib"]["device"] <= 16


def test_bought_box_cost_per_served_hour():
    # 8× RTX 4090 box (pricing_data/hardware.csv): power (8 × 450 + 500) W × $0.15/kWh
    # = $0.615/h while serving; capital (8 × 1650 + 6000) × (1 − 0.25) / (36 × 730 h)
    # = 14400 / 26280 = $0.5479/h for every hour of the day
    job = serve_job_from_dict(
        {
            **_job("llama-3-8b", hours_per_day=10),
            "constraints": {"cloud": False},
            "hardware": {"buy": [{"gpu": "RTX4090", "max_gpus": 16}]},
        }
    )
    [off] = job_offerings(None, job.constraints, job.hardware.owned, job.hardware.buy)
    running, fixed = hourly_usd(off)
    assert off.max_instances == 2 and off.gpus_per_instance == 8
    assert running == pytest.approx(0.615, abs=1e-9)
    assert fixed == pytest.approx(14400 / 26280, rel=1e-9)
    out = serve_json(plan_serving(job, None, assumptions=PerfAssumptions()))
    # served 10 h a day: capital per served hour × 24/10 -> 0.615 + 0.5479 × 2.4 = $1.930
    assert out["plan"]["usd_per_hour"] == pytest.approx(0.615 + 14400 / 26280 * 2.4, abs=1e-3)
    assert out["plan"]["usd_per_month"] == pytest.approx(
        out["plan"]["usd_per_hour"] * 10 * 730 / 24, rel=1e-3
    )


def test_job_file_fp8_factor_reaches_serving(rows, no_user_state):
    # [assumptions] fp8_gemm_factor is the one fp8 factor: halving it halves the fp8 GEMM rate
    # of a serving replica too (the exact GEMM time: tests/model/test_serving.py)
    def ttft(factor: float | None) -> float:
        data = _job("llama-2-7b", precision="fp8", prompt_tokens=4096, output_tokens=16)
        data["constraints"] = {"gpu_types": ["H100-80GB"], "providers": ["aws"], "tp_degrees": [1]}
        if factor is not None:
            data["assumptions"] = {"fp8_gemm_factor": factor}
        job = serve_job_from_dict(data)
        a = base_assumptions(job.assumptions)
        _, _, best = replica_options(
            get_preset("llama-2-7b"), job.workload, job.constraints, job_offerings(rows, job.constraints), a
        )
        return best.ttft[0][0]  # TTFT at batch 1, TP 1

    default, halved = ttft(None), ttft(0.4)
    assert ttft(0.8) == default
    assert halved > 1.5 * default  # prefill of 4,096 tokens is GEMM-bound on an H100
