"""One code path per number, beyond `plan`: every `compare` row, every `batch` job and every
`serve-compare` row is reproduced by `estimate` given that row's own configuration; and a
calibration stored by `ccopt calibrate` is what `plan` and `estimate` then both use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer import api
from optimizer.cli import app
from optimizer.inputs.jobs.batch import load_batch
from optimizer.inputs.jobs.serve import load_serve_job
from optimizer.inputs.jobs.train import Job, load_job
from tests.cli.point_band import at_point_prediction

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _estimate_row(row: dict, job: Job) -> dict:
    """`estimate` of a plan row: its model, instance (or GPU for a box), layout and the job's
    workload settings."""
    w, lay = job.workload, row["layout"]
    where = (
        {"instance": f"{row['provider']}:{row['instance']}"}
        if row["kind"] == "cloud"
        else {
            "gpu": row["gpu"],
            "gpus_per_instance": row["gpus_per_instance"],
            "inter_node_gbps": row["inter_node_gbps"],
        }
    )
    return api.estimate(
        job.model.preset or job.model.hf_config,
        num_gpus=row["gpus"],
        tp=lay["tp"],
        pp=lay["pp"],
        zero_stage=lay["zero_stage"],
        activation_checkpointing=lay["activation_checkpointing"],
        micro_batch=lay["micro_batch"],
        global_batch=row["global_batch"],
        seq_len=w.seq_len,
        precision=w.precision,
        optimizer=w.optimizer,
        kind=w.kind,
        lora_rank=w.lora_rank,
        stack=w.stack,
        offline=True,
        **where,
    )


def _same(est: dict, row: dict) -> None:
    assert est["layout"] == row["layout"]
    # the plan keeps step time to 3 decimals (seconds); estimate to more
    assert est["step"]["time_s"] == pytest.approx(row["step_time_s"], abs=6e-4)
    assert est["memory_gib"] == row["memory_gib"]
    assert est["tokens_per_s"] == pytest.approx(row["tokens_per_s"], rel=1e-3)


@pytest.mark.parametrize("example", ["finetune_8b_4090_vs_cloud", "llama7b_10days"])
def test_every_compare_row_is_estimate(example, no_user_state) -> None:
    path = EXAMPLES / f"{example}.toml"
    data = api.compare(path, offline=True)
    job, _ = load_job(path)
    rows = [r for group in ("per_gpu", "per_provider") for r in data[group].values() if r]
    rows += [r for r in (data["cloud"], data["owned_or_bought"]) if r]
    assert len(rows) >= 5 and any(r["kind"] != "cloud" for r in rows) == (data["owned_or_bought"] is not None)
    for row in rows:
        _same(_estimate_row(row, job), row)


def test_every_batch_job_is_estimate(no_user_state) -> None:
    path = EXAMPLES / "batch_12_finetunes.toml"
    data = api.batch_json(api.batch(path, offline=True))
    batch, _ = load_batch(path)
    jobs = {j.name: j for j in batch.job}
    scheduled = [j for j in data["jobs"] if j["status"] == "scheduled"]
    assert len(scheduled) == 12
    for row in scheduled:
        _same(_estimate_row(row, jobs[row["name"]]), row)


def test_every_serve_compare_row_is_estimate(no_user_state, tmp_path) -> None:
    path = at_point_prediction(EXAMPLES / "serve_8b_4090_vs_cloud.toml", tmp_path)  # estimate: the point
    data = api.serve_compare(path, offline=True)
    job, _ = load_serve_job(path)
    w = job.workload
    (bucket,) = w.request_buckets()
    deployments = [d for plan in data["per_gpu"].values() if plan for d in plan["deployments"]]
    assert len(deployments) >= 3
    for dep in deployments:
        where = (
            {"instance": f"{dep['provider']}:{dep['instance']}"}
            if dep["pricing"] not in ("owned", "buy")
            else {"gpu": dep["gpu"]}
        )
        est = api.estimate(
            job.model.preset,
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
        assert est["requests_per_s_per_replica"] == pytest.approx(
            dep["requests_per_s_per_replica"][0], rel=1e-3
        )
        assert est["ttft_s"] == pytest.approx(dep["ttft_s"], rel=1e-3)
        assert est["tpot_ms"] == pytest.approx(dep["tpot_ms"], rel=1e-3)


def test_a_calibration_reaches_plan_and_estimate_alike(tmp_path, monkeypatch) -> None:
    """Calibrate A100-80GB at a measured 1,000 tokens/s per GPU (a slow run, well below the
    fitted default), then plan an A100-80GB-only job: the plan's step time is what `estimate`
    gives for the plan's own layout under that calibration, and slower than without it."""
    monkeypatch.setenv("CCOPT_CALIBRATION", str(tmp_path / "cal.json"))
    monkeypatch.setenv("CCOPT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CCOPT_OFFLINE", "1")
    job_file = tmp_path / "a100.toml"
    job_file.write_text(
        (EXAMPLES / "llama7b_10days.toml")
        .read_text()
        .replace("deadline_days = 10", 'deadline_days = 60\ngpu_types = ["A100-80GB"]')
    )
    job, _ = load_job(job_file)
    before = api.plan(job_file, alternatives=0)["plan"]
    measured = 8 * 1000.0  # 8 GPUs × 1,000 tokens/s
    runner = CliRunner()
    cal = runner.invoke(
        app,
        [
            "calibrate",
            "-m",
            "llama-2-7b",
            "-g",
            "A100-80GB",
            "--num-gpus",
            "8",
            "--global-batch",
            "1024",
            "--seq-len",
            "4096",
            "--micro-batch",
            "1",
            "--tokens-per-s",
            str(measured),
            "--json",
        ],
    )
    assert cal.exit_code == 0, cal.stderr
    assert json.loads(cal.stdout)["status"] == "calibrated"
    after = api.plan(job_file, alternatives=0)["plan"]
    _same(_estimate_row(after, job), after)
    monkeypatch.setenv("CCOPT_CALIBRATION", str(tmp_path / "none.json"))
    assert api.plan(job_file, alternatives=0)["plan"] == before  # without it: as before
    uncalibrated = _estimate_row(after, job)  # the same layout at the default efficiency
    assert after["step_time_s"] > 1.5 * uncalibrated["step"]["time_s"]  # the slow run applied
    monkeypatch.setenv("CCOPT_CALIBRATION", str(tmp_path / "cal.json"))
    again = api.estimate(
        "llama-2-7b",
        gpu="A100-80GB",
        num_gpus=8,
        global_batch=1024,
        seq_len=4096,
        micro_batch=1,
        offline=True,
    )
    assert again["tokens_per_s"] == pytest.approx(measured, rel=1e-3)  # the measured run back
