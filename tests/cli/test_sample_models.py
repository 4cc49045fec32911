"""Job files that count samples: per-sample profiles and fixed-length transformers (ViT) through
`ccopt plan` / `compare` / `estimate` (typer CliRunner)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.cli import app

runner = CliRunner()

RESNET_JOB = """
name = "rn50"
[model]
preset = "resnet50"
[workload]
images = 1281167
epochs = 90
global_batch = 1024
precision = "fp16"
optimizer = "sgd"
[constraints]
deadline_days = 3
gpu_types = ["A100-80GB", "H100-80GB", "RTX4090"]
"""


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "job.toml"
    path.write_text(text)
    return str(path)


def test_images_times_epochs_make_the_steps(tmp_path) -> None:
    result = runner.invoke(app, ["plan", _write(tmp_path, RESNET_JOB), "--json"])
    assert result.exit_code == 0, result.stderr
    plan = json.loads(result.stdout)["plan"]
    assert plan["steps"] == math.ceil(1281167 * 90 / 1024)
    assert plan["sample_unit"] == "image"
    # samples/s × step time = the global batch (a sample is one "token" of seq_len 1)
    assert plan["samples_per_s"] == pytest.approx(plan["tokens_per_s"], rel=1e-3)
    # step_time_s is rounded to the millisecond
    assert plan["samples_per_s"] * plan["step_time_s"] == pytest.approx(
        1024, rel=0.0006 / plan["step_time_s"] + 1e-3
    )
    assert plan["layout"]["tp"] == plan["layout"]["pp"] == 1


def test_plan_text_says_images_per_second(tmp_path) -> None:
    result = runner.invoke(app, ["plan", _write(tmp_path, RESNET_JOB)])
    assert result.exit_code == 0
    assert "images/s" in result.stdout and "tokens/s" not in result.stdout


def test_compare_accepts_a_profile(tmp_path) -> None:
    result = runner.invoke(app, ["compare", _write(tmp_path, RESNET_JOB), "--json"])
    assert result.exit_code == 0, result.stderr
    assert set(json.loads(result.stdout)["per_gpu"]) >= {"A100-80GB", "RTX4090"}


def test_tokens_for_a_profile_is_one_clear_line(tmp_path) -> None:
    job = RESNET_JOB.replace("images = 1281167", "tokens = 1e9")
    result = runner.invoke(app, ["plan", _write(tmp_path, job)])
    assert result.exit_code == 2
    assert "workload.tokens" in result.stderr and "samples" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_user_measured_point_sets_the_speed(tmp_path) -> None:
    """ "I measured 410 samples/s on one A10": an inline profile with that point is planned at
    exactly that speed on one A10 (dp 1, the measured micro-batch)."""
    job = """
name = "mine"
[model.profile]
name = "my-cnn"
sample_unit = "image"
params = 11.7e6
[model.measured]
gpu = "A10"
precision = "bf16"
micro_batch = 128
samples_per_s = 410
peak_memory_gib = 9.5
optimizer = "sgd"
[workload]
samples = 1e6
global_batch = 128
precision = "bf16"
optimizer = "sgd"
[constraints]
deadline_days = 5
gpu_types = ["A10"]
max_gpus = 1
"""
    result = runner.invoke(app, ["plan", _write(tmp_path, job), "--json"])
    assert result.exit_code == 0, result.stderr
    plan = json.loads(result.stdout)["plan"]
    assert plan["layout"]["micro_batch"] == 128 and plan["gpus"] == 1
    assert plan["samples_per_s"] == pytest.approx(410, rel=1e-3)
    assert plan["memory_gib"]["device"] == pytest.approx(9.5, abs=0.01)
    # on the measured GPU type the band is the narrow one (PerfAssumptions.profile_band_same_gpu)
    assert plan["step_time_s_p90"] / plan["step_time_s"] == pytest.approx(1.15, rel=1e-2)


def test_vit_counts_images_of_197_tokens(tmp_path) -> None:
    job = (
        RESNET_JOB.replace('preset = "resnet50"', 'preset = "vit-b16"')
        .replace('optimizer = "sgd"', 'optimizer = "adamw"')
        .replace('precision = "fp16"', 'precision = "bf16"')
    )
    result = runner.invoke(app, ["plan", _write(tmp_path, job), "--json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["plan"]["tokens"] == data["plan"]["steps"] * 1024 * 197
    assert data["plan"]["samples_per_s"] == pytest.approx(data["plan"]["tokens_per_s"] / 197, rel=1e-3)


def test_batch_accepts_a_profile_job(tmp_path) -> None:
    batch = """
name = "mixed"
[capacity]
horizon_days = 10
[[capacity.owned]]
gpu = "RTX4090"
boxes = 1
gpus_per_box = 8
[[job]]
name = "rn50"
[job.model]
preset = "resnet50"
[job.workload]
images = 1281167
epochs = 10
global_batch = 1024
precision = "fp16"
optimizer = "sgd"
[job.constraints]
deadline_days = 5
"""
    path = tmp_path / "batch.toml"
    path.write_text(batch)
    result = runner.invoke(app, ["batch", str(path), "--json"])
    assert result.exit_code == 0, result.stderr
    job = json.loads(result.stdout)["jobs"][0]
    assert job["steps"] == math.ceil(1281167 * 10 / 1024)
    assert job["tokens"] == job["steps"] * 1024  # a sample is one "token"


def test_serving_a_profile_is_one_clear_line(tmp_path) -> None:
    job = (Path(__file__).resolve().parents[2] / "examples/serve_bert_base.toml").read_text()
    result = runner.invoke(app, ["serve", _write(tmp_path, job.replace('"bert-base"', '"resnet50"'))])
    assert result.exit_code == 2
    assert "per-sample profile" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_estimate_of_a_profile_counts_samples() -> None:
    result = runner.invoke(
        app,
        [
            "estimate",
            "--model",
            "resnet50",
            "--gpu",
            "v100-32gb",
            "--micro-batch",
            "256",
            "--global-batch",
            "256",
            "--precision",
            "fp16",
            "--optimizer",
            "sgd",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["sample_unit"] == "image" and out["band_source"] == "profile"
    assert out["samples_per_s"] == pytest.approx(256 / out["step"]["time_s"], rel=1e-3)
    # another generation than the measured A100: the wide band (0.6-1.7 × the step time)
    assert out["step_time_s_p90"] / out["step"]["time_s"] == pytest.approx(1.7, rel=1e-3)
