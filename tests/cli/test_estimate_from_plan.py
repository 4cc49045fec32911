"""`ccopt estimate --from-plan PLAN.json [--row K]`: a saved plan's row, estimated again from its
own configuration, gives the plan's step time, memory and speed (one code path per number)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.cli import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
runner = CliRunner()


def _plan_file(tmp_path: Path, example: str) -> tuple[Path, dict]:
    out = runner.invoke(app, ["plan", str(EXAMPLES / f"{example}.toml"), "--json"])
    assert out.exit_code == 0, out.stderr
    path = tmp_path / f"{example}.json"
    path.write_text(out.stdout)
    return path, json.loads(out.stdout)


@pytest.mark.parametrize(
    "example",
    [
        "llama7b_10days",
        "lora_70b_budget",
        "qlora_70b_single_node",
        "finetune_8b_4090_vs_cloud",
        "bert_base_finetune_8gb",
        "resnet50_imagenet_3days",
        "gpt3_175b_a100_90days",
    ],
)
def test_every_row_of_a_saved_plan_is_reproduced(example, tmp_path) -> None:
    path, plan = _plan_file(tmp_path, example)
    rows = [plan["plan"], *plan["alternatives"]]
    for k, row in enumerate(rows):
        out = runner.invoke(app, ["estimate", "--from-plan", str(path), "--row", str(k), "--json"])
        assert out.exit_code == 0, (k, out.stderr)
        est = json.loads(out.stdout)
        assert est["layout"] == row["layout"], k
        assert est["gpus"] == row["gpus"] and est["gpu"] == row["gpu"]
        assert est["step"]["time_s"] == pytest.approx(row["step_time_s"], abs=6e-4)
        assert est["memory_gib"] == row["memory_gib"]
        assert est["mfu"] == pytest.approx(row["mfu"], abs=1e-4) if row.get("mfu") else True


def test_from_plan_refuses_flags_bad_rows_and_infeasible_plans(tmp_path) -> None:
    path, plan = _plan_file(tmp_path, "lora_70b_budget")
    mixed = runner.invoke(app, ["estimate", "--from-plan", str(path), "--tp", "2"])
    assert mixed.exit_code == 2 and "leave out --tp" in mixed.stderr
    last = len(plan["alternatives"])
    bad = runner.invoke(app, ["estimate", "--from-plan", str(path), "--row", str(last + 1)])
    assert bad.exit_code == 2 and f"allowed: 0 (the plan) to {last}" in bad.stderr
    out = runner.invoke(app, ["plan", str(EXAMPLES / "infeasible_70b_week.toml"), "--json"])
    (tmp_path / "none.json").write_text(out.stdout)
    none = runner.invoke(app, ["estimate", "--from-plan", str(tmp_path / "none.json")])
    assert none.exit_code == 2 and "infeasible" in none.stderr
    (tmp_path / "junk.json").write_text("[1, 2]")
    junk = runner.invoke(app, ["estimate", "--from-plan", str(tmp_path / "junk.json")])
    assert junk.exit_code == 2 and "not a `ccopt plan --json` output" in junk.stderr
    neither = runner.invoke(app, ["estimate"])
    assert neither.exit_code == 2 and "--model is required" in neither.stderr


def test_row_needs_a_plan_and_model_must_match(tmp_path) -> None:
    alone = runner.invoke(app, ["estimate", "-m", "llama-2-7b", "-g", "h100", "--row", "1"])
    assert alone.exit_code == 2 and "--from-plan" in alone.stderr
    path, _ = _plan_file(tmp_path, "lora_70b_budget")
    other = runner.invoke(app, ["estimate", "--from-plan", str(path), "-m", "llama-2-7b"])
    assert other.exit_code == 2 and "not the plan's model" in other.stderr
    same = runner.invoke(app, ["estimate", "--from-plan", str(path), "-m", "llama-2-70b"])
    assert same.exit_code == 0, same.stderr


def test_a_relative_hf_config_is_found_from_any_folder(tmp_path, monkeypatch) -> None:
    """A job naming `config.json` next to it: the plan's model_ref is resolved against the job
    file's folder, so --from-plan works from another working directory."""
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "config.json").write_text(
        json.dumps(
            {
                "model_type": "llama",
                "hidden_size": 1024,
                "num_hidden_layers": 8,
                "num_attention_heads": 8,
                "num_key_value_heads": 8,
                "intermediate_size": 2816,
                "vocab_size": 32000,
                "max_position_embeddings": 2048,
            }
        )
    )
    (jobs / "job.toml").write_text(
        'name = "small"\n[model]\nhf_config = "config.json"\n'
        "[workload]\ntokens = 1e9\nseq_len = 2048\nglobal_batch = 64\n"
        '[constraints]\ndeadline_days = 5\ngpu_types = ["A100-80GB"]\n'
    )
    out = runner.invoke(app, ["plan", str(jobs / "job.toml"), "--json"])
    assert out.exit_code == 0, out.stderr
    plan = json.loads(out.stdout)
    assert plan["job"]["model_ref"] == str(jobs / "config.json")
    (tmp_path / "plan.json").write_text(out.stdout)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    est = runner.invoke(app, ["estimate", "--from-plan", str(tmp_path / "plan.json"), "--json"])
    assert est.exit_code == 0, est.stderr
    assert json.loads(est.stdout)["step"]["time_s"] == pytest.approx(plan["plan"]["step_time_s"], abs=6e-4)
