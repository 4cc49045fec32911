"""CLI: exit codes, JSON contract, one-line errors on stderr (typer CliRunner + a subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer import api
from optimizer.cli import app, main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
runner = CliRunner()


def _json(args: list[str]) -> tuple[int, dict]:
    result = runner.invoke(app, args)
    return result.exit_code, json.loads(result.stdout) if result.stdout.strip() else {}


def test_estimate_json_contract() -> None:
    code, data = _json(
        [
            "estimate",
            "--model",
            "llama-2-7b",
            "--gpu",
            "A100-80GB",
            "--num-gpus",
            "8",
            "--zero-stage",
            "3",
            "--micro-batch",
            "1",
            "--global-batch",
            "1024",
            "--seq-len",
            "4096",
            "--json",
        ]
    )
    assert code == 0
    assert data["model"] == {"name": "llama-2-7b", "params": 6738415616, "active_params": 6738415616}
    assert data["gpu"] == "A100-80GB" and data["gpus"] == 8
    assert data["layout"] == {
        "dp": 8,
        "tp": 1,
        "pp": 1,
        "zero_stage": 3,
        "activation_checkpointing": "none",
        "micro_batch": 1,
        "grad_accum": 128,
    }
    assert set(data["memory_gib"]) == {
        "weights",
        "gradients",
        "optimizer",
        "activations",
        "kv_cache",
        "overhead",
        "total",
        "reserved",
        "device",
    }
    mem = data["memory_gib"]
    assert mem["total"] <= mem["reserved"] <= mem["device"]
    # ZeRO-3 over 8: optimizer state = 12 B × 6.738e9 / 8 / 2^30 = 9.41 GiB (Rajbhandari 2020)
    assert data["memory_gib"]["optimizer"] == pytest.approx(12 * 6738415616 / 8 / 2**30, abs=0.01)
    assert data["fits"] is True
    assert set(data["step"]) >= {"time_s", "compute_s", "communication_s", "bubble_s"}
    assert data["tokens_per_s"] == pytest.approx(data["tokens_per_s_per_gpu"] * 8, rel=1e-3)
    assert 0 < data["mfu"] < 1


def test_old_flag_names_still_work_and_warn_once() -> None:
    new = [
        "estimate",
        "-m",
        "llama-2-7b",
        "-g",
        "A100-80GB",
        "--num-gpus",
        "8",
        "--zero-stage",
        "3",
        "--activation-checkpointing",
        "full",
        "--json",
    ]
    old = [
        "estimate",
        "-m",
        "llama-2-7b",
        "-g",
        "A100-80GB",
        "--gpus",
        "8",
        "--zero",
        "3",
        "--checkpointing",
        "full",
        "--json",
    ]
    a, b = runner.invoke(app, new), runner.invoke(app, old)
    assert a.exit_code == b.exit_code == 0
    assert json.loads(a.stdout) == json.loads(b.stdout)
    assert "warning: --gpus is now called --num-gpus" in b.stderr
    assert b.stderr.count("--zero is now called --zero-stage") <= 1
    clash = runner.invoke(
        app, ["estimate", "-m", "llama-2-7b", "-g", "h100", "--num-gpus", "8", "--gpus", "4"]
    )
    assert clash.exit_code == 2 and "disagree" in clash.stderr


def test_estimate_serve_mode() -> None:
    code, data = _json(
        [
            "estimate",
            "--model",
            "llama-2-70b",
            "--gpu",
            "h100",
            "--num-gpus",
            "2",
            "--tp",
            "2",
            "--mode",
            "serve",
            "--batch",
            "16",
            "--context",
            "4096",
            "--json",
        ]
    )
    assert code == 0
    # KV: 0.3125 MiB/token × 16 × 4096 / tp 2 = 10 GiB per GPU
    assert data["memory_gib"]["kv_cache"] == pytest.approx(10.0, abs=0.01)
    assert data["ttft_s"] > 0 and data["tpot_ms"] > 0


def test_estimate_table_says_whether_it_fits() -> None:
    result = runner.invoke(app, ["estimate", "-m", "llama-2-70b", "-g", "4090"])
    assert result.exit_code == 0
    assert "does NOT fit" in result.stdout


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (["--model", "llama-9b", "--gpu", "a100"], "model: unknown model 'llama-9b'"),
        (["--model", "llama-2-7b", "--gpu", "a1000"], "--gpu: unknown GPU 'a1000'"),
        (["--model", "llama-2-7b", "--gpu", "a100", "--tp", "3"], "--tp: 3 must divide"),
        (
            ["--model", "llama-2-7b", "--gpu", "a100", "--num-gpus", "0"],
            "--num-gpus: 0 is not allowed; allowed: an integer > 0",
        ),
        (
            ["--model", "llama-2-7b", "--gpu", "a100", "--activation-checkpointing", "some"],
            "--activation-checkpointing: 'some' is not allowed; allowed: none, selective, full",
        ),
        (["--model", "llama-2-7b", "--gpu", "a100", "--stack", "megatorn"], "--stack: "),
        (["--model", "llama-2-7b", "--instance", "aws:p9.huge"], "--instance: 'p9.huge' is not"),
        (
            ["--model", "llama-2-7b", "--gpu", "a100", "--mode", "serve", "--batch", "lots"],
            "--batch: 'lots' is not allowed",
        ),
        (["--model", str(ROOT / "tests/model/data/malformed.json"), "--gpu", "a100"], "is not valid JSON"),
        (
            [
                "--model",
                "llama-2-7b",
                "--gpu",
                "a100",
                "--num-gpus",
                "8",
                "--global-batch",
                "100",
                "--micro-batch",
                "3",
            ],
            "--global-batch: 100 is not a multiple",
        ),
    ],
)
def test_bad_input_one_line_exit_2(args: list[str], phrase: str) -> None:
    result = runner.invoke(app, ["estimate", *args])
    assert result.exit_code == 2
    assert phrase in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_plan_headline_example_is_optimal() -> None:
    code, data = _json(["plan", str(EXAMPLES / "llama7b_10days.toml"), "--json"])
    assert code == 0
    assert data["status"] == "optimal" and data["solver"]["proven_optimal"] is True
    plan = data["plan"]
    for key in (
        "gpu",
        "provider",
        "instance",
        "region",
        "pricing",
        "instances",
        "gpus",
        "layout",
        "global_batch",
        "steps",
        "step_time_s",
        "hours",
        "usd_per_hour",
        "cost_usd",
        "memory_gib",
        "tokens_per_s",
    ):
        assert key in plan
    lay = plan["layout"]
    assert lay["dp"] * lay["micro_batch"] * lay["grad_accum"] == plan["global_batch"] == 1024
    assert lay["dp"] * lay["tp"] * lay["pp"] == plan["gpus"]
    assert plan["hours"] <= 240
    # steps = ceil(140e9 tokens / (1024 × 4096)) = 33,379
    assert plan["steps"] == 33379
    assert plan["cost_usd"] == pytest.approx(plan["usd_per_hour"] * plan["hours"], rel=1e-3)
    costs = [a["cost_usd"] for a in data["alternatives"]]
    assert costs == sorted(costs) and all(c >= plan["cost_usd"] for c in costs)


def test_plan_infeasible_explains_and_exits_1() -> None:
    code, data = _json(["plan", str(EXAMPLES / "infeasible_70b_week.toml"), "--json"])
    assert code == 1
    assert data["status"] == "infeasible" and data["plan"] is None
    assert "fastest plan needs" in data["explanation"]["text"]
    assert data["explanation"]["binding_constraint"] == "deadline"


def test_plan_pareto_front_is_monotone() -> None:
    code, data = _json(["plan", str(EXAMPLES / "qlora_70b_single_node.toml"), "--json", "--pareto"])
    assert code == 0
    front, plan = data["pareto"], data["plan"]
    # the front starts at the cheapest row; the plan is that row, or one on fewer GPUs within the
    # fewer-GPUs share (solve/train fewer_gpus_within: since the 2026-12-05 refit 1 GH200 at
    # $39.51 over 2 L40S at $39.07)
    assert front[0]["cost_usd"] <= plan["cost_usd"]
    if front[0]["cost_usd"] < plan["cost_usd"]:
        assert plan["gpus"] < front[0]["gpus"]
    for a, b in zip(front, front[1:], strict=False):
        # each point finishes no later at the plan's confidence and costs no less (the front
        # is in hours at that quantile: a point of a narrower band may have a slower median step)
        assert b["hours"] <= a["hours"] and b["cost_usd"] >= a["cost_usd"]


def test_plan_bad_job_file(tmp_path) -> None:
    bad = tmp_path / "job.toml"
    bad.write_text(
        '[model]\npreset = "llama-2-7b"\n[workload]\ntokens = 1e9\nseq_len = 2048\n'
        'global_batch = 8\nprecision = "fp64"\n'
    )
    result = runner.invoke(app, ["plan", str(bad)])
    assert result.exit_code == 2
    assert "workload.precision" in result.stderr and "fp32" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_compare_break_even() -> None:
    code, data = _json(["compare", str(EXAMPLES / "finetune_8b_4090_vs_cloud.toml"), "--json"])
    assert code == 0
    assert set(data["per_gpu"]) == {"RTX4090", "A100-80GB", "H100-80GB"}
    assert data["owned_or_bought"]["kind"] == "buy"
    be = data["break_even"]
    # net capital of one default 8×4090 box: (8 × 1650 + 6000) × (1 − 0.25) = 14,400
    assert be["net_capital_usd"] == pytest.approx(14400.0)


def test_calibrate_then_estimate_is_calibrated() -> None:
    args = ["--model", "gpt2", "--gpu", "a10", "--seq-len", "1024", "--micro-batch", "4"]
    code, data = _json(["calibrate", *args, "--tokens-per-s", "30000", "--json"])
    assert code == 0
    code, est = _json(["estimate", *args, "--json"])
    assert est["calibrated"] is True
    assert est["tokens_per_s"] == pytest.approx(30000, rel=1e-3)
    # calibrate reports what estimate then reports: one efficiency, one step time
    assert data["effective_efficiency"] == est["efficiency"]
    assert data["calibrated_prediction_step_s"] == est["step"]["time_s"]
    assert data["measured_step_s"] == pytest.approx(est["step"]["time_s"], rel=1e-3)


def test_models_and_gpus_json() -> None:
    code, models = _json(["models", "--json"])
    assert code == 0 and any(m["name"] == "mixtral-8x7b" for m in models)
    code, gpus = _json(["gpus", "--json"])
    assert code == 0 and any(g["gpu_id"] == "H100-80GB" for g in gpus)


def test_module_entry_point_subprocess() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "optimizer", "--help"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0
    assert "plan" in out.stdout and "estimate" in out.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "optimizer", "estimate", "--model", "nope", "--gpu", "a100"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: model: unknown model 'nope'")
    assert "Traceback" not in bad.stderr


@pytest.mark.parametrize(
    "args, code",
    [
        (["plan", "examples/llama7b_10days.toml"], 0),
        (["plan", "examples/infeasible_70b_week.toml", "--json"], 1),
        (["prices", "--json"], 0),
    ],
)
def test_a_reader_that_leaves_early_keeps_the_answers_exit_code(args, code) -> None:
    """`ccopt plan … | head -1`: the reader closes the pipe before the answer is written; the
    exit code is still the answer's (click alone exits 1 on a broken pipe: "infeasible")."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "optimizer", *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.close()  # the reader is gone before the first byte (imports take ~1 s)
    stderr = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) == code, stderr
    assert "Traceback" not in stderr and "Broken pipe" not in stderr


def test_plan_plot_writes_png(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "front.png"
    result = runner.invoke(app, ["plan", str(EXAMPLES / "qlora_70b_single_node.toml"), "--plot", str(out)])
    assert result.exit_code == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.glob("*.tmp*"))  # written atomically, no temp file left


@pytest.mark.parametrize(
    ("constraints", "phrase"),
    [
        ('gpu_types = ["h100", "a1000"]', "constraints.gpu_types[1]: unknown GPU 'a1000'"),
        ('providers = ["awss"]', "constraints.providers: unknown value 'awss' — did you mean 'aws'"),
        ('pricing = ["monthly"]', "constraints.pricing"),
    ],
)
def test_plan_bad_filters_name_the_job_field(tmp_path, constraints: str, phrase: str) -> None:
    job = tmp_path / "job.toml"
    job.write_text(
        '[model]\npreset = "gpt2"\n[workload]\ntokens = 1e9\nseq_len = 1024\n'
        f"global_batch = 8\n[constraints]\n{constraints}\n"
    )
    result = runner.invoke(app, ["plan", str(job)])
    assert result.exit_code == 2
    assert phrase in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_an_internal_error_is_one_line_and_exit_3(monkeypatch, capsys) -> None:
    def broken(*_args, **_kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(api, "plan", broken)
    with pytest.raises(SystemExit) as stop:
        main(["plan", str(EXAMPLES / "llama7b_10days.toml")])
    assert stop.value.code == 3
    err = capsys.readouterr().err
    assert err.startswith("internal error: RuntimeError: boom") and "Traceback" not in err
    with pytest.raises(RuntimeError):  # --debug shows the real exception (and its traceback)
        main(["--debug", "plan", str(EXAMPLES / "llama7b_10days.toml")])


@pytest.mark.parametrize(("instance", "gbps"), [("aws:p4d.24xlarge", 400.0), ("aws:p5.48xlarge", 3200.0)])
def test_estimate_instance_uses_the_catalogs_published_network(instance: str, gbps: float) -> None:
    # AWS EC2 "Network specifications": p4d.24xlarge 4 × 100 Gbps EFA = 400 Gbit/s (not the
    # DGX A100 default of 8 × 200); p5.48xlarge 32 EFA cards, 3,200 Gbps
    code, data = _json(
        [
            "estimate",
            "--model",
            "llama-3-8b",
            "--instance",
            instance,
            "--num-gpus",
            "16",
            "--zero-stage",
            "3",
            "--seq-len",
            "4096",
            "--global-batch",
            "64",
            "--json",
        ]
    )
    assert code == 0
    assert data["inter_node_gbps"] == gbps and data["inter_node_assumed"] is False
    gpu = data["gpu"]
    code, bare = _json(
        [
            "estimate",
            "--model",
            "llama-3-8b",
            "--gpu",
            gpu,
            "--num-gpus",
            "16",
            "--zero-stage",
            "3",
            "--seq-len",
            "4096",
            "--global-batch",
            "64",
            "--json",
        ]
    )
    assert code == 0 and bare["inter_node_assumed"] is True
