"""One code path per number: `estimate` given a plan's own layout and instance reproduces the
plan's step time and memory, and `estimate --mode serve` reproduces `serve`'s per-replica
request rate (same functions, same defaults, same hardware)."""

from __future__ import annotations

from pathlib import Path

import pytest

from optimizer import api
from optimizer.inputs.jobs.serve import load_serve_job
from optimizer.inputs.jobs.train import load_job
from tests.cli.point_band import at_point_prediction

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    "example", ["llama7b_10days", "qlora_70b_single_node", "finetune_8b_4090_vs_cloud", "lora_70b_budget"]
)
def test_estimate_reproduces_the_plans_step_time_and_memory(example, no_user_state):
    path = EXAMPLES / f"{example}.toml"
    data = api.plan(path, offline=True, alternatives=2)
    job, _ = load_job(path)
    w = job.workload
    for plan in [data["plan"], *data["alternatives"]]:
        if plan["kind"] != "cloud":
            continue  # owned / bought boxes are not catalog instances
        lay = plan["layout"]
        est = api.estimate(
            job.model.preset or job.model.hf_config,
            instance=f"{plan['provider']}:{plan['instance']}",
            num_gpus=plan["gpus"],
            tp=lay["tp"],
            pp=lay["pp"],
            zero_stage=lay["zero_stage"],
            activation_checkpointing=lay["activation_checkpointing"],
            micro_batch=lay["micro_batch"],
            global_batch=plan["global_batch"],
            seq_len=w.seq_len,
            precision=w.precision,
            optimizer=w.optimizer,
            method=w.method,
            lora_rank=w.lora_rank,
            stack=w.stack,
            offline=True,
        )
        assert est["layout"] == lay
        assert est["step"]["time_s"] == pytest.approx(plan["step_time_s"], abs=6e-4)
        assert est["memory_gib"] == plan["memory_gib"]
        assert est["mfu"] == pytest.approx(plan["mfu"], abs=1e-4)


@pytest.mark.parametrize(
    "example", ["serve_mistral7b_chatbot", "serve_llama70b_5rps", "serve_8b_4090_vs_cloud"]
)
def test_estimate_serve_reproduces_the_per_replica_rate(example, no_user_state, tmp_path):
    path = at_point_prediction(EXAMPLES / f"{example}.toml", tmp_path)  # estimate: the point
    data = api.serve(path, offline=True)
    job, _ = load_serve_job(path)
    w = job.workload
    for dep in data["plan"]["deployments"]:
        for bucket, rate in zip(w.request_buckets(), dep["requests_per_s_per_replica"], strict=True):
            if not rate:
                continue
            where = (
                {"instance": f"{dep['provider']}:{dep['instance']}"}
                if dep["pricing"] not in ("owned", "buy")
                else {"gpu": dep["gpu"]}
            )
            est = api.estimate(
                job.model.preset or job.model.hf_config,
                mode="serve",
                num_gpus=dep["tp"],
                tp=dep["tp"],
                batch=dep["batch"],
                precision=w.weight_precision,
                kv_cache_precision=w.kv_cache_precision,
                prompt_tokens=bucket.prompt_tokens,
                output_tokens=bucket.output_tokens,
                stack=w.stack,
                offline=True,
                **where,
            )
            assert est["requests_per_s_per_replica"] == pytest.approx(rate, rel=1e-3)
            assert est["memory_gib"]["total"] <= dep["memory_gib"]["total"] + 0.01


def test_compare_breaks_even_against_every_allowed_gpu_type(no_user_state):
    """Buying 8× RTX 4090 against the best cloud plan of each allowed GPU type (not just the
    cheapest rented 4090 host), in jobs and in months at the job's rate (jobs_per_month = 8)."""
    data = api.compare(EXAMPLES / "finetune_8b_4090_vs_cloud.toml", offline=True)
    per_gpu = data["break_even_per_gpu"]
    assert {"RTX4090", "A100-80GB", "H100-80GB"} <= set(per_gpu)
    for gpu, be in per_gpu.items():
        assert be["gpu"] == gpu and gpu in be["cloud_plan"]
        # k = net capital / (cloud cost per job − power per job); months = k jobs at 8 a month
        k = be["net_capital_usd"] / (be["cloud_usd_per_job"] - be["power_usd_per_job"])
        assert be["jobs_to_break_even"] == pytest.approx(k, rel=1e-3)  # inputs rounded to cents
        assert be["months_to_break_even"] == pytest.approx(k / 8, rel=1e-3)
    # a dearer cloud plan pays the boxes off in fewer jobs
    ranked = sorted(per_gpu.values(), key=lambda b: b["cloud_usd_per_job"])
    assert [b["jobs_to_break_even"] for b in ranked] == sorted(
        (b["jobs_to_break_even"] for b in ranked), reverse=True
    )
