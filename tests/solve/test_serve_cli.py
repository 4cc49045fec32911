"""`ccopt serve` / `ccopt serve-compare` through the real app, job validation, explanations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.errors import ConfigError
from optimizer.inputs.jobs.serve import load_serve_job, serve_job_from_dict
from optimizer.model.setup import PerfAssumptions
from optimizer.report.serve import serve_compare_json, serve_json
from optimizer.solve.serve.model import solve_problem
from optimizer.solve.serve.plan import compare_serving, plan_serving
from optimizer.solve.serve.problem import IntOption, IntProblem

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("serve_*.toml"))
runner = CliRunner()

BASE = """
[model]
preset = "mistral-7b"
[workload]
kind = "serve"
requests_per_s = 2
prompt_tokens = 512
output_tokens = 256
"""


pytestmark = pytest.mark.usefixtures("no_user_state")


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "job.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_examples_validate():
    assert len(EXAMPLES) == 4  # mistral chatbot, llama-70B, 8B on a 4090, BERT-base
    for path in EXAMPLES:
        job, _ = load_serve_job(path)
        assert job.workload.kind == "serve"


def test_serve_json_contract_on_example():
    result = runner.invoke(
        app, ["serve", str(ROOT / "examples/serve_mistral7b_chatbot.toml"), "--json", "--offline"]
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["status"] == "optimal" and data["solver"]["proven_optimal"] is True
    plan = data["plan"]
    for key in (
        "deployments",
        "usd_per_hour",
        "usd_per_month",
        "capacity_requests_per_s",
        "ttft_s",
        "tpot_ms",
    ):
        assert key in plan
    for dep in plan["deployments"]:
        assert set(dep) >= {
            "gpu",
            "gpus",
            "tp",
            "quantization",
            "replicas",
            "provider",
            "instance",
            "pricing",
        }
    # 100 users / 30 s think time = 3.33 requests/s; N+1: capacity with one replica lost
    assert plan["load_requests_per_s"] == pytest.approx(100 / 30, rel=1e-3)
    assert plan["capacity_requests_per_s"] >= 100 / 30
    assert plan["ttft_s"] <= 1.0 and plan["tpot_ms"] <= 100
    assert plan["usd_per_month"] == pytest.approx(plan["usd_per_hour"] * 730, rel=1e-3)
    assert sum(d["replicas"] for d in plan["deployments"]) >= 2


def test_serve_table_and_compare():
    result = runner.invoke(app, ["serve", str(ROOT / "examples/serve_8b_4090_vs_cloud.toml"), "--offline"])
    assert result.exit_code == 0, result.stderr
    assert "Deployments" in result.stdout
    result = runner.invoke(
        app, ["serve-compare", str(ROOT / "examples/serve_8b_4090_vs_cloud.toml"), "--offline", "--json"]
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data["per_gpu"]) == {"RTX4090", "L4", "A10G"}
    best = data["best"]["plan"]["usd_per_hour"]
    assert all(p["usd_per_hour"] >= best - 1e-6 for p in data["per_gpu"].values() if "usd_per_hour" in p)


@pytest.mark.parametrize(
    "patch, phrase",
    [
        ('precision = "int3"', "workload.precision: 'int3' is not allowed; allowed: fp16"),
        ("think_time_s = 3", "give exactly one of requests_per_s or concurrent_users"),
        ("hours_per_day = 25", "workload.hours_per_day"),
    ],
)
def test_bad_input_exit_2_one_line(tmp_path, patch, phrase):
    text = BASE.replace('kind = "serve"', f'kind = "serve"\n{patch}')
    if "think_time_s" in patch:
        text = text.replace("requests_per_s = 2", "concurrent_users = 10\nrequests_per_s = 2")
    result = runner.invoke(app, ["serve", str(_write(tmp_path, text)), "--offline"])
    assert result.exit_code == 2
    assert phrase in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_bad_constraint_values(tmp_path):
    text = BASE + '[constraints]\nredundancy = "n-1"\n'
    result = runner.invoke(app, ["serve", str(_write(tmp_path, text)), "--offline"])
    assert result.exit_code == 2 and "constraints.redundancy" in result.stderr
    text = BASE + '[constraints]\ngpu_types = ["H10O"]\n'
    result = runner.invoke(app, ["serve", str(_write(tmp_path, text)), "--offline"])
    assert result.exit_code == 2 and "did you mean" in result.stderr
    with pytest.raises(ConfigError, match="not a serving job"):
        serve_job_from_dict({"model": {"preset": "mistral-7b"}, "workload": {"kind": "lora"}})


def test_infeasible_ttft_names_binding_target(tmp_path):
    text = BASE + "[constraints]\nttft_s = 0.001\n"
    result = runner.invoke(app, ["serve", str(_write(tmp_path, text)), "--offline", "--json"])
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["status"] == "infeasible" and data["plan"] is None
    assert "TTFT 0.001 s is below the fastest prefill of any option" in data["explanation"]["text"]
    assert "nearest fix: ttft_s = " in data["explanation"]["text"]


def test_infeasible_memory_and_replicas(rows):
    job = serve_job_from_dict(
        {
            "model": {"preset": "llama-2-70b"},
            "workload": {"kind": "serve", "requests_per_s": 1, "prompt_tokens": 512, "output_tokens": 128},
            "constraints": {"gpu_types": ["T4"]},
        }
    )
    out = serve_json(plan_serving(job, rows, assumptions=PerfAssumptions()))
    assert out["status"] == "infeasible" and "fits no allowed instance" in out["explanation"]["text"]
    assert "int4" in out["explanation"]["text"]
    job = serve_job_from_dict(
        {
            "model": {"preset": "mistral-7b"},
            "workload": {"kind": "serve", "requests_per_s": 40, "prompt_tokens": 512, "output_tokens": 256},
            "constraints": {"gpu_types": ["L4"], "providers": ["gcp"], "max_replicas": 1},
        }
    )
    out = serve_json(plan_serving(job, rows, assumptions=PerfAssumptions()))
    assert out["status"] == "infeasible"
    assert "max_replicas = 1 is too few" in out["explanation"]["text"]


def test_mix_beats_single_type():
    # bucket 0: short chats, bucket 1: long documents; option A (cheap) serves only short
    # ones, option B serves both but slowly. Alone B needs 4 instances (4 × 50 = 200 cents);
    # A (1 instance, 10 units × 10 = 100 ≤ 100) + B (1 instance, 10 units × 10 = 100) = 80 cents.
    a = IntOption(cost_cents=30, replicas_per_instance=1, time_per_unit=(10, None), group="a")
    b = IntOption(cost_cents=50, replicas_per_instance=1, time_per_unit=(30, 10), group="b")
    p = IntProblem((a, b), load_units=(10, 10), time_per_replica=100)
    sol = solve_problem(p)
    assert sol.counts == (1, 1) and sol.cost_cents == 80
    assert sol.assignment == ((10, 0), (0, 10))
    only_b = solve_problem(IntProblem((b,), (10, 10), 100))
    assert only_b.cost_cents == 200  # 10·30 + 10·10 = 400 time units -> 4 instances


def test_bucketed_load_mixes_gpu_types(rows):
    # 80% short chats, 20% long documents; tight TTFT/TPOT: the cheapest plan mixes H100 and
    # L40S pools and beats the best plan on either GPU type alone
    job = serve_job_from_dict(
        {
            "name": "mix",
            "model": {"preset": "llama-3-8b"},
            "workload": {
                "kind": "serve",
                "requests_per_s": 20,
                "buckets": [
                    {"share": 0.8, "prompt_tokens": 300, "output_tokens": 200},
                    {"share": 0.2, "prompt_tokens": 6000, "output_tokens": 500},
                ],
            },
            "constraints": {
                "ttft_s": 0.8,
                "tpot_ms": 100,  # 60 before issue 44: the (wider) serving bands make H100 alone win there
                "providers": ["aws"],
                "gpus": ["L40S", "H100-80GB"],
            },
        }
    )
    data = serve_compare_json(compare_serving(job, rows, assumptions=PerfAssumptions()))
    best = data["best"]["plan"]
    assert data["best"]["status"] == "optimal"
    assert len({d["gpu"] for d in best["deployments"]}) == 2
    singles = [p["usd_per_hour"] for p in data["per_gpu"].values() if "usd_per_hour" in p]
    assert singles and best["usd_per_hour"] < min(singles)
    # every bucket's load is assigned in full
    for b, share in enumerate((0.8, 0.2)):
        got = sum(d["bucket_requests_per_s"][b] for d in best["deployments"])
        assert got == pytest.approx(20 * share, rel=1e-3)
