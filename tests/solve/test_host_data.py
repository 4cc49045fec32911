"""The host and the data (issue 16): egress decides the provider, data costs of an LM job,
image loaders that cannot feed their GPUs, checkpoint storage — numbers derived by hand from
pricing_data/provider_storage.csv, offerings.csv and the stated guesses."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from optimizer import api
from optimizer.inputs.jobs.train import Job, load_job
from optimizer.pricing.data_cost import checkpoint_gb_hours
from optimizer.solve.train.plan import plan_job

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

# pricing_data/provider_storage.csv (published rows)
AWS_EGRESS_USD_PER_GB = 0.09  # aws us-east-1: "$0.090 per GB - first 10 TB / month" (re:Post bill)
LAMBDA_STORAGE_USD_PER_GB_MONTH = 0.20  # docs.lambda.ai/public-cloud/billing example rate
HOURS_PER_MONTH = 730  # the month of monthly prices (optimizer/units.py)
# pricing_data/offerings.csv on-demand rows (skypilot catalog v8)
P4DE_USD_PER_HOUR = 27.44705  # aws p4de.24xlarge us-east-1, 8× A100-80GB
LAMBDA_A100X8_USD_PER_HOUR = 22.32  # lambda gpu_8x_a100_80gb_sxm4 us-east-1
# llama-2-7b parameters (Touvron et al. 2023; the preset's count) × (2 B bf16 weights + 12 B
# fp32 master + Adam moments: Rajbhandari et al. 2020 §3) = one checkpoint
LLAMA2_7B_PARAMS = 6_738_415_616
CKPT_GB = LLAMA2_7B_PARAMS * 14 / 1e9


@functools.cache
def _planned(example: str) -> dict:
    """`ccopt plan --json` of an example at the median (P50): these tests are about the data
    lines of the plan the examples' comments describe (a Lambda cluster fed from S3)."""
    return api.plan(EXAMPLES / example, offline=True, alternatives=0, confidence=0.5)


def _stored_gb_hours(size_gb: float, every_h: float, kept: int, hours: float) -> float:
    """Checkpoint GB-hours by walking the job hour by checkpoint (independent of the formula)."""
    written = [every_h * i for i in range(1, int(hours // every_h) + 1)]
    total = 0.0
    for i, t in enumerate(written):
        deleted = written[i + kept] if i + kept < len(written) else hours
        total += deleted - t
    return size_gb * total


@pytest.mark.parametrize(
    "every_h,kept,hours,expected",
    [
        # written at 2, 4, 6; the first is deleted at 6 (keep 2): 4 + 3 + 1 = 8 GB-h per GB
        (2.0, 2, 7.0, 8.0),
        (5.0, 3, 4.0, 0.0),  # no checkpoint before the job ends
        (1.0, 1, 3.5, 2.5),  # 1→2, 2→3, 3→3.5
    ],
)
def test_checkpoint_gb_hours_by_hand(every_h, kept, hours, expected) -> None:
    assert checkpoint_gb_hours(1.0, every_h, kept, hours) == pytest.approx(expected)
    assert checkpoint_gb_hours(10.0, every_h, kept, hours) == pytest.approx(
        _stored_gb_hours(10.0, every_h, kept, hours)
    )


def _a100_job(data: dict | None) -> Job:
    doc = {
        "name": "egress",
        "model": {"preset": "llama-2-7b"},
        "workload": {"kind": "finetune", "tokens": 2e9, "seq_len": 4096, "global_batch": 256},
        "constraints": {
            "deadline_days": 30,
            "gpu_types": ["A100-80GB"],
            "providers": ["aws", "lambda"],
            "max_instances": 1,
        },
    }
    if data is not None:
        doc["data"] = data
    return Job.model_validate(doc)


def test_dataset_in_aws_makes_lambdas_cheaper_gpus_lose_once_egress_counts(rows) -> None:
    bare = plan_job(_a100_job(None), rows, alternatives=1)
    assert bare.plan.offering.provider == "lambda"  # the cheaper GPU-hour wins without data
    data = {
        "dataset_gb": 2000.0,
        "provider": "aws",
        "region": "us-east-1",
        "checkpoint_every_hours": 4.0,
        "checkpoints_kept": 2,
    }
    result = plan_job(_a100_job(data), rows, alternatives=1)
    plan, alt = result.plan, result.alternatives[0]
    assert (plan.offering.provider, plan.offering.instance) == ("aws", "p4de.24xlarge")
    assert (alt.offering.provider, alt.offering.instance) == ("lambda", "gpu_8x_a100_80gb_sxm4")
    # same GPUs, one instance: both run the same hours (the model's step time)
    h = plan.hours
    assert alt.hours == pytest.approx(h)
    # aws: the data is already there (no transfer); S3 Standard's price is not in the table
    # (unknown, counted 0 and named)
    assert plan.cost_usd == pytest.approx(P4DE_USD_PER_HOUR * h, rel=1e-9)
    assert any("object storage at aws" in u for u in plan.offering.data.unknown)
    # lambda: 2,000 GB × $0.09 out of AWS, the copy and 2 checkpoints at $0.20/GB-month
    egress = 2000 * AWS_EGRESS_USD_PER_GB
    storage = (
        (2000 * h + _stored_gb_hours(CKPT_GB, 4.0, 2, h)) * LAMBDA_STORAGE_USD_PER_GB_MONTH / HOURS_PER_MONTH
    )
    assert egress == pytest.approx(180.0)
    assert alt.cost_usd == pytest.approx(LAMBDA_A100X8_USD_PER_HOUR * h + egress + storage, rel=1e-9)
    # the GPU-hours alone favour lambda; egress turns it around
    assert LAMBDA_A100X8_USD_PER_HOUR * h < P4DE_USD_PER_HOUR * h < alt.cost_usd


def test_compare_totals_include_the_data_lines(rows) -> None:
    job = _a100_job({"dataset_gb": 2000.0, "provider": "aws", "region": "us-east-1"})
    out = api.compare(job, offline=True)
    lam = out["per_provider"]["lambda"]
    assert lam["data"]["egress_usd"] == pytest.approx(180.0)
    # hours are rounded to 0.01 h in the JSON: ±0.005 h × $22.32/h
    assert lam["cost_usd"] == pytest.approx(
        lam["usd_per_hour"] * lam["hours"] + lam["data_usd"], abs=0.005 * 22.32 + 0.01
    )
    assert out["cloud"]["provider"] == "aws"


def test_lm_job_data_costs_are_negligible_and_shown() -> None:
    out, base = _planned("llama7b_data_in_s3.toml"), _planned("llama7b_10days.toml")
    p, d = out["plan"], out["plan"]["data"]
    # the same cluster is chosen as without [data]: the data does not move the answer
    assert (p["provider"], p["instance"]) == (base["plan"]["provider"], base["plan"]["instance"])
    assert (p["provider"], p["region"]) == ("lambda", "us-east-1")
    h = p["hours"]
    # 280 GB out of S3 at $0.09; the copy + 3 checkpoints every 4 h at Lambda's $0.20/GB-month
    assert d["egress_usd"] == pytest.approx(280 * 0.09, abs=0.01)
    assert d["dataset_storage_usd"] == pytest.approx(280 * 0.20 * h / 730, rel=1e-3)
    assert d["checkpoint_gb"] == pytest.approx(CKPT_GB, abs=0.01)
    assert d["checkpoint_storage_usd"] == pytest.approx(
        _stored_gb_hours(CKPT_GB, 4.0, 3, h) * 0.20 / 730, rel=1e-3
    )
    assert p["data_usd"] == pytest.approx(
        d["egress_usd"] + d["dataset_storage_usd"] + d["checkpoint_storage_usd"], abs=0.02
    )
    assert p["cost_usd"] == pytest.approx(base["plan"]["cost_usd"] + p["data_usd"], abs=0.02)
    assert d["share_of_cost"] < 0.01  # negligible: under 1% of the GPUs' cost
    # the text loader is far from binding: (208 vCPUs − 8 reserved) × 2,000 sequences/s (guess)
    assert p["host"]["loader_samples_per_s"] == pytest.approx(200 * 2000)
    assert p["host"]["gpu_samples_per_s"] == pytest.approx(1024 / p["step_time_s"], rel=1e-3)
    assert not p["host"]["loader_bound"]


def test_image_job_gpu_cheapest_offering_is_slowed_by_its_vcpus() -> None:
    job, _ = load_job(EXAMPLES / "resnet50_imagenet_loader.toml")
    out = api.plan(job, offline=True, alternatives=1)
    # the cheapest GPU-hour of the catalog: vast 8× RTX 4090 at $2.77/h ($0.346/GPU-h)
    first = out["loader_bound"][0]
    assert first["option"] == "RTX4090 ×8 (vast 8x-RTX_4090-32-65536)"
    assert first["reason"].startswith("$0.346/GPU-h")
    # 32 vCPUs − 8 GPU processes × 1 reserved (guess) = 24 loaders × 120 img/s (guess)
    assert "32 vCPUs load 2,880 img/s" in first["reason"]
    assert "more vCPUs" in first["reason"] and "preprocess offline" in first["reason"]
    # its GPUs' rate over the loader's is the slowdown the plan states
    need = float(first["reason"].split("GPUs need ")[1].split(";")[0].replace(",", ""))
    assert f"slowed {need / 2880:.2f}×" in first["reason"]
    # slowed, it misses the 8 h: 90 epochs × 1,281,167 images / 2,880 img/s = 11.1 h
    assert 90 * 1281167 / 2880 / 3600 > 8
    assert out["plan"]["instance"] != "8x-RTX_4090-32-65536"
    # with a loader that never binds, that box is the plan: the vCPUs changed the answer
    fast = job.model_copy(update={"data": job.data.model_copy(update={"samples_per_s_per_vcpu": 1e6})})
    free = api.plan(fast, offline=True, alternatives=0)
    assert free["plan"]["instance"] == "8x-RTX_4090-32-65536"
    assert free["plan"]["cost_usd"] < out["plan"]["cost_usd"]
    assert not free["plan"]["host"]["loader_bound"]


def test_image_plan_text_explains_the_slowed_cheaper_box() -> None:
    from typer.testing import CliRunner

    from optimizer.cli import app

    result = CliRunner().invoke(app, ["plan", str(EXAMPLES / "resnet50_imagenet_loader.toml"), "--offline"])
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "loader-bound (cheaper GPU-hour): RTX4090 ×8 (vast 8x-RTX_4090-32-65536)" in text
    assert "32 vCPUs load 2,880 img/s" in text
    assert "transfer $12.60 (140 GB, aws us-east-1" in text  # 140 GB × $0.09


BATCH = """name = "two-jobs-data"
[capacity]
horizon_days = 14
[[job]]
name = "with-data"
model = { preset = "llama-3-8b" }
workload = { kind = "lora", tokens = 1.1e+09, seq_len = 2048, global_batch = 64 }
constraints = { deadline_days = 3, gpu_types = ["H100-80GB"], providers = ["lambda"] }
assumptions = { provisioning_s = 0, startup_s = 0 }
data = { dataset_gb = 1000, provider = "aws", region = "us-east-1" }
[[job]]
name = "without"
model = { preset = "llama-3-8b" }
workload = { kind = "lora", tokens = 1.1e+09, seq_len = 2048, global_batch = 64 }
constraints = { deadline_days = 3, gpu_types = ["H100-80GB"], providers = ["lambda"] }
assumptions = { provisioning_s = 0, startup_s = 0 }
"""


def test_batch_total_counts_each_jobs_data(tmp_path) -> None:
    path = tmp_path / "batch.toml"
    path.write_text(BATCH)
    out = api.batch_json(api.batch(path, offline=True))
    jobs = {j["name"]: j for j in out["jobs"]}
    a, b = jobs["with-data"], jobs["without"]
    # same choice (without start-up hours: a fixed start-up costs a larger instance more, which
    # the data's per-hour storage can outweigh, and the jobs would then differ)
    assert (a["instance"], b["instance"]) == (b["instance"], a["instance"])
    # 1,000 GB × $0.09 out of S3 + the copy at Lambda's $0.20/GB-month over the job's hours
    # (LoRA checkpoints: adapters only, a few hundred MB)
    expected = 1000 * AWS_EGRESS_USD_PER_GB + 1000 * 0.20 * a["hours"] / HOURS_PER_MONTH
    assert a["data_usd"] == pytest.approx(expected, abs=0.05)
    assert b["data_usd"] == 0.0 and b["data"]["counted"] is False
    assert out["total_cost_usd"] == pytest.approx(a["cost_usd"] + b["cost_usd"], abs=0.02)
    assert a["cost_usd"] - b["cost_usd"] == pytest.approx(a["data_usd"], abs=0.02)


def test_report_cost_table_itemises_the_data_lines() -> None:
    from optimizer.report.html.train import _cost_table

    p = _planned("llama7b_data_in_s3.toml")["plan"]
    rows = {r[0]: r for r in _cost_table(p).rows}
    assert rows["dataset transfer"][2] == "$25.20"  # 280 GB × $0.09
    assert "aws us-east-1 → lambda us-east-1" in rows["dataset transfer"][1]
    gpu = float(rows["GPU time"][2].lstrip("$").replace(",", ""))
    assert gpu == pytest.approx(p["cost_usd"] - p["data_usd"], abs=0.5)
    bare = _planned("llama7b_10days.toml")["plan"]
    assert {r[0]: r for r in _cost_table(bare).rows}["data and storage"][2] == "—"
