"""`ccopt batch` through the real app (CliRunner) and batch-file validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.errors import ConfigError
from optimizer.inputs.jobs.batch import batch_from_dict, load_batch

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "batch_12_finetunes.toml"
runner = CliRunner()

SMALL = """
[capacity]
horizon_days = 4
quota_only = true
[[capacity.quota]]
provider = "lambda"
gpu = "H100"
max_gpus = 8
[[capacity.owned]]
gpu = "RTX4090"
num_boxes = 1
gpus_per_box = 8
[defaults.workload]
seq_len = 2048
global_batch = 64
[defaults.constraints]
gpu_types = ["H100-80GB", "RTX4090"]
"""


def _job(name: str, tokens: float, deadline_days: float, extra: str = "") -> str:
    return (
        f'\n[[job]]\nname = "{name}"\nmodel = {{ preset = "llama-3-8b" }}\n'
        f'workload = {{ kind = "lora", tokens = {tokens:g} }}\n'
        f"constraints = {{ deadline_days = {deadline_days} }}\n{extra}"
    )


pytestmark = pytest.mark.usefixtures("isolated")


def test_batch_example_json_contract() -> None:
    result = runner.invoke(app, ["batch", str(EXAMPLE), "--json", "--offline"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["status"] == "optimal"
    assert len(data["jobs"]) == 12
    assert data["solver"]["name"] == "cp-sat" and data["solver"]["proven_optimal"] is True
    for job in data["jobs"]:
        assert {
            "name",
            "gpu",
            "provider",
            "instance",
            "pricing",
            "instances",
            "gpus",
            "layout",
            "hours",
            "cost_usd",
            "start_hour",
            "end_hour",
        } <= set(job)
        assert job["end_hour"] <= job["deadline_hour"] + 1e-6
        assert job["start_hour"] >= job["release_hour"]
    used = {j["provider"] for j in data["jobs"]}
    assert used == {"owned", "lambda"}  # the box alone cannot meet every deadline
    total = sum(j["cost_usd"] for j in data["jobs"])
    assert data["total_cost_usd"] == pytest.approx(total, abs=0.05)
    quota = next(r for r in data["resources"] if r["kind"] == "quota")
    assert quota["peak"] <= 16


def test_batch_table_and_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "schedule.png"
    result = runner.invoke(app, ["batch", str(EXAMPLE), "--plot", str(png)])
    assert result.exit_code == 0, result.stderr
    assert "owned 8x RTX4090 box" in result.stdout and "quota lambda H100-80GB" in result.stdout
    assert png.stat().st_size > 10_000


@pytest.mark.parametrize(
    "body, phrase",
    [
        ("[capacity]\nhorizon_days = 3\n", "no [[job]] tables"),
        (
            SMALL.replace('provider = "lambda"', 'provider = "lamda"') + _job("a", 1e8, 2),
            "did you mean 'lambda'",
        ),
        (SMALL + _job("a", 1e8, 2, "droppable = true\n"), "needs value_usd"),
        (SMALL + _job("a", 1e8, 2) + _job("a", 1e8, 3), "unique"),
        (SMALL + _job("a", 1e8, 2, "colour = 3\n"), "job[0] (a).colour: unknown field"),
        (SMALL.replace("horizon_days = 4", "") + _job("a", 1e8, 2), "horizon_days"),
        ("not toml [", "invalid TOML"),
    ],
)
def test_bad_batch_file_exits_2_with_one_line(tmp_path: Path, body: str, phrase: str) -> None:
    path = tmp_path / "b.toml"
    path.write_text(body, encoding="utf-8")
    result = runner.invoke(app, ["batch", str(path), "--json"])
    assert result.exit_code == 2
    assert phrase in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_missing_file_and_bad_flag_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["batch", str(tmp_path / "nope.toml")])
    assert result.exit_code == 2 and "not found" in result.stderr
    result = runner.invoke(app, ["batch", str(EXAMPLE), "--time-limit-s", "0"])
    assert result.exit_code == 2 and "--time-limit-s" in result.stderr


def test_infeasible_batch_exits_1_and_names_the_fix(tmp_path: Path) -> None:
    # two 8B LoRA jobs of 2.5e9 tokens: 10.6 h each at P80 on one 8× H100 instance (the whole
    # quota; 3e9 tokens took 7.7 h before the bands' new-source discrepancy went 0.30 -> 0.74),
    # ~73 h on the box; due in 12 h, they cannot run one after the other on the quota
    body = SMALL + _job("first", 2.5e9, 0.5) + _job("second", 2.5e9, 0.5)
    path = tmp_path / "tight.toml"
    path.write_text(body, encoding="utf-8")
    result = runner.invoke(app, ["batch", str(path), "--json"])
    assert result.exit_code == 1, result.stdout + result.stderr
    data = json.loads(result.stdout)
    assert data["status"] == "infeasible"
    expl = data["explanation"]
    assert expl["conflict"] and expl["fixes"]
    assert set(expl["conflict"]) == {"deadline:first", "deadline:second", "capacity:quota#0"}
    quota_fix = next(f for f in expl["fixes"] if f["requirement"] == "capacity:quota#0")
    assert quota_fix["detail"]["capacity:quota#0"]["needed"] == 16
    text = runner.invoke(app, ["batch", str(path)])
    assert text.exit_code == 1 and "fix:" in text.stdout


def test_defaults_merge_and_job_overrides() -> None:
    data = {
        "capacity": {"horizon_days": 2},
        "defaults": {
            "workload": {"seq_len": 1024, "global_batch": 32},
            "constraints": {"gpu_types": ["H100"], "deadline_days": 1},
        },
        "job": [
            {"model": {"preset": "gpt2"}, "workload": {"tokens": 1e6}},
            {
                "name": "b",
                "model": {"preset": "gpt2"},
                "workload": {"tokens": 1e6, "seq_len": 512},
                "constraints": {"deadline_days": 2},
                "release_hours": 3,
            },
        ],
    }
    batch = batch_from_dict(data)
    a, b = batch.job
    assert a.name == "job-1" and a.workload.seq_len == 1024 and b.workload.seq_len == 512
    assert b.constraints.gpu_types == ("H100",) and b.constraints.deadline_h == 48
    assert b.release_h == 3 and batch.capacity.horizon_h == 48


def test_example_file_loads() -> None:
    batch, base = load_batch(EXAMPLE)
    assert len(batch.job) == 12 and base == EXAMPLE.parent
    assert batch.capacity.quota[0].max_gpus == 16 and batch.capacity.owned[0].num_boxes == 1
    with pytest.raises(ConfigError, match="owned"):
        batch_from_dict(
            {
                "capacity": {"horizon_days": 1},
                "job": [
                    {
                        "model": {"preset": "gpt2"},
                        "workload": {"tokens": 1e6, "global_batch": 8},
                        "hardware": {"owned": [{"gpu": "RTX4090", "num_boxes": 1}]},
                    }
                ],
            }
        )


def test_a_cloud_placement_names_the_jobs_that_kept_the_box_busy(tmp_path) -> None:
    # two 8B LoRA jobs of 3e8 tokens: each over half of 12 h at P80 on the owned 4090 box (its
    # band is the wide thin one since issue 44, widened for new sources: 10.2 h), due in 12 h.
    # The box carries one; the other must rent, and says which job held the box in its window.
    body = SMALL + _job("first", 3e8, 0.5) + _job("second", 3e8, 0.5)
    path = tmp_path / "busy.toml"
    path.write_text(body, encoding="utf-8")
    result = runner.invoke(app, ["batch", str(path), "--json"])
    assert result.exit_code == 0, result.stderr
    jobs = {j["name"]: j for j in json.loads(result.stdout)["jobs"]}
    kinds = sorted(j["kind"] for j in jobs.values())
    assert kinds == ["cloud", "owned"]
    cloud = next(j for j in jobs.values() if j["kind"] == "cloud")
    owned = next(j for j in jobs.values() if j["kind"] == "owned")
    assert cloud["placement"].startswith("cloud: owned 8x RTX4090 box busy with " + owned["name"])
    assert "its window: day 0.0 to day 0.5" in cloud["placement"]
    assert owned["placement"].startswith("owned box: $")
    text = runner.invoke(app, ["batch", str(path)]).stdout
    assert f"{cloud['name']} on the cloud: owned 8x RTX4090 box busy with" in " ".join(text.split())


def test_quota_conflict_names_the_jobs_and_the_raise(tmp_path: Path) -> None:
    # no deadlines: both jobs (10.6 h each at P80 on the whole 8-GPU quota, ~73 h on the box,
    # which the 12-hour horizon rules out) must run inside the 12 h horizon, so on the quota at
    # once (10.6 + 10.6 > 12): the quota alone conflicts; 16 GPUs (+8) let both run side by side
    body = SMALL.replace("horizon_days = 4", "horizon_days = 0.5") + "".join(
        f'\n[[job]]\nname = "{n}"\nmodel = {{ preset = "llama-3-8b" }}\n'
        f'workload = {{ kind = "lora", tokens = 2.5e9 }}\n'
        for n in ("first", "second")
    )
    path = tmp_path / "quota.toml"
    path.write_text(body, encoding="utf-8")
    result = runner.invoke(app, ["batch", str(path), "--json"])
    assert result.exit_code == 1, result.stdout + result.stderr
    expl = json.loads(result.stdout)["explanation"]
    assert expl["conflict"] == ["capacity:quota#0"]
    assert "needed at once by 'first', 'second'" in expl["text"]
    (fix,) = expl["fixes"]
    assert fix["detail"]["capacity:quota#0"] == {
        "resource": "quota#0",
        "capacity": 8,
        "needed": 16,
        "jobs": ["first", "second"],
    }
    assert "by 8 GPUs, from 8 to 16" in fix["change"]
    text = runner.invoke(app, ["batch", str(path)])
    assert text.exit_code == 1 and "raise quota lambda H100-80GB by 8 GPUs" in text.stdout
