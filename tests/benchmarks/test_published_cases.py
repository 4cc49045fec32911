"""The published-runs benchmark (benchmarks/published_cases.py) runs on one case, and its
reported figures are the sources' own."""

from __future__ import annotations

import pytest

from benchmarks.published_cases import RUNS, markdown, plan_run
from optimizer import api


def test_reported_gpu_hours_as_published():
    by_name = {r.name: r for r in RUNS}
    # Llama 2 Table 2: 7B + 13B + 34B (1,038,336, not re-planned) + 70B = 3,311,616 in total
    llama2 = sum(by_name[n].reported_gpu_hours for n in ("llama-2-7b", "llama-2-13b", "llama-2-70b"))
    assert llama2 + 1_038_336 == 3_311_616
    assert by_name["mpt-7b"].reported_gpu_hours == pytest.approx(100_320)  # 440 GPUs × 228 h
    assert by_name["llama-3-8b"].reported_gpu_hours == 1.3e6
    # issue 43's rows: Llama 3 70B card 6.4M, Llama 3.1 8B card 1.46M, BLOOM 1,082,990
    assert by_name["llama-3-70b"].reported_gpu_hours == 6.4e6
    assert by_name["llama-3.1-8b"].reported_gpu_hours == 1.46e6
    assert by_name["bloom-176b"].reported_gpu_hours == 1_082_990
    # BLOOM: 384 GPUs for "about 3.5 months" (3.5 × 30.4 days × 24 h × 384 = 0.98M GPU-h)
    assert 384 * 3.5 * 30.4 * 24 == pytest.approx(1_082_990, rel=0.15)
    assert len(RUNS) >= 8
    # Llama 2: 2T tokens in 4M-token batches of 4,096-token sequences
    assert all(
        by_name[n].global_batch * by_name[n].seq_len == 4 * 2**20
        for n in ("llama-2-7b", "llama-2-13b", "llama-2-70b")
    )


def test_mpt7b_is_planned_on_its_gpu_under_its_cap(no_user_state):
    row = plan_run(next(r for r in RUNS if r.name == "mpt-7b"), deadline_days=90)
    assert row["status"] == "optimal" and row["gpus"] <= 440
    assert row["ratio"] == pytest.approx(row["planned_gpu_hours"] / 100_320)
    assert row["within"] == (0.7 <= row["ratio"] <= 1.3)
    # the planned GPU-hours are the hours to process 1T tokens at the plan's throughput
    data = api.plan(
        {
            "name": "mpt-7b",
            "model": next(r for r in RUNS if r.name == "mpt-7b").model,
            "workload": {"tokens": 1e12, "seq_len": 2048, "global_batch": 1760, "stack": "llm-foundry"},
            "constraints": {"gpu_types": ["A100-40GB"], "max_gpus": 440, "deadline_days": 90},
        },
        offline=True,
        alternatives=0,
        confidence=0.5,
    )
    p = data["plan"]
    assert p["gpu"] == "A100-40GB"
    # at P50: the model's step time × the band's median multiplier
    hours_for_tokens = 1e12 / p["tokens_per_s"] / 3600 * p["step_time_s_p50"] / p["step_time_s"]
    assert p["goodput"]["compute_hours"] == pytest.approx(hours_for_tokens, rel=0.01)
    # the planned GPU-hours are the whole run's: steps + evaluation + start-up + checkpoints +
    # failures + the final checkpoint's conversion
    g = p["goodput"]
    whole_h = sum(g[k] for k in ("compute_hours", "evaluation_hours", "startup_hours", "checkpoint_hours"))
    whole_h += g["failures_hours"] + g["conversion_hours"]
    assert row["planned_gpu_hours"] == pytest.approx(p["gpus"] * whole_h, rel=1e-3)
    assert row["inside_p10_p90"] == (row["p10_ratio"] <= 1 <= row["p90_ratio"])
    assert "| mpt-7b | A100-40GB (≤ 440) | 100,320 |" in markdown([row], 90)
