"""RL job files: bounds, one-line errors naming file and field, exit 2 from `ccopt rl`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer import api
from optimizer.cli import app
from optimizer.errors import ConfigError
from optimizer.inputs.jobs.rl import rl_job_from_dict
from optimizer.model.presets import get_preset
from optimizer.model.rl.step import companions_gib, forward_passes

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _job(**rl: object) -> dict:
    table = {
        "prompts_per_step": 64,
        "samples_per_prompt": 8,
        "prompt_tokens_mean": 256,
        "prompt_tokens_max": 512,
        "response_tokens_mean": 512,
        "response_tokens_max": 2048,
        "steps": 10,
        **rl,
    }
    return {"model": {"preset": "llama-3-8b"}, "workload": {"kind": "grpo"}, "rl": table}


@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        ({"steps": 0}, "rl.steps"),
        ({"samples_per_prompt": 2000}, "rl.samples_per_prompt"),
        ({"response_tokens_mean": 4096}, "response_tokens_mean = 4096 exceeds response_tokens_max"),
        ({"pools": {"mode": "split"}}, "rl.pools.mode"),
        ({"async_steps": 2}, "rl.async_steps"),
        ({"pools": {"generation_gpu_types": ["H1000"]}}, "rl.pools.generation_gpu_types"),
    ],
)
def test_bad_fields_name_the_field(change: dict, phrase: str) -> None:
    with pytest.raises(ConfigError, match=phrase.replace("(", r"\(")) as err:
        rl_job_from_dict(_job(**change), "job.toml")
    assert str(err.value).startswith("job.toml: ") and "\n" not in str(err.value)


def test_kind_must_be_rl() -> None:
    data = _job()
    data["workload"]["kind"] = "pretrain"
    with pytest.raises(ConfigError, match="allowed: dpo, grpo, ppo"):
        rl_job_from_dict(data, "job.toml")


def test_kinds_set_up_their_networks() -> None:
    ppo = {**_job(), "workload": {"kind": "ppo"}}
    dpo = {**_job(reference=False), "workload": {"kind": "dpo"}}
    assert rl_job_from_dict(ppo).setup().critic
    assert not rl_job_from_dict(_job()).setup().critic
    d = rl_job_from_dict(dpo).setup()
    assert d.reference and d.samples_per_prompt == 2 and not d.generates


def test_cli_exit_2_on_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[model]\npreset = "llama-3-8b"\n[workload]\nkind = "grpo"\n[rl]\nprompts_per_step = -1\n')
    result = runner.invoke(app, ["rl", str(bad), "--offline"])
    assert result.exit_code == 2
    assert "rl.prompts_per_step" in result.stderr


def test_cli_example_json_contract() -> None:
    result = runner.invoke(
        app, ["rl", str(ROOT / "examples" / "grpo_qwen7b_math.toml"), "--offline", "--json"]
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    plan = data["plan"]
    assert data["status"] == "optimal" and plan["mode"] in ("colocated", "separate")
    step = plan["step"]
    parts = step["generation_s"] + step["logprob_s"] + step["update_s"] + step["sync_s"]
    assert step["time_s"] == pytest.approx(parts, abs=0.01)  # on-policy: the phases add up
    assert plan["hours"] <= data["job"]["deadline_hours"]


def test_forward_passes_per_kind() -> None:
    # GRPO: reference + old policy = 2; PPO: + critic values = 3; + a 2B reward net on 8B = 3.25
    assert forward_passes(rl_job_from_dict(_job()).setup(), 8e9) == 2
    ppo = rl_job_from_dict({**_job(reward_model_params_b=2.0), "workload": {"kind": "ppo"}}).setup()
    assert forward_passes(ppo, 8e9) == pytest.approx(3.25)
    dpo = rl_job_from_dict({**_job(), "workload": {"kind": "dpo"}}).setup()
    assert forward_passes(dpo, 8e9) == 1  # the frozen reference on chosen and rejected


def test_plan_points_rl_jobs_to_ccopt_rl() -> None:
    result = runner.invoke(app, ["plan", str(ROOT / "examples" / "grpo_qwen7b_math.toml"), "--offline"])
    assert result.exit_code == 2 and "run `ccopt rl` on it" in result.stderr


def test_infeasible_names_the_binding_limit() -> None:
    job = {**_job(), "constraints": {"deadline_hours": 0.001}}
    data = api.rl(job, offline=True)
    assert data["status"] == "infeasible" and data["plan"] is None
    assert data["explanation"]["binding_constraint"] == "deadline"
    assert "the fastest plan needs" in data["explanation"]["text"]
    result = runner.invoke(app, ["schema", "rl"])
    assert result.exit_code == 0 and "RlPlanOut" in result.stdout


def test_ppo_training_pool_holds_reference_and_critic() -> None:
    model = get_preset("llama-3-8b")
    ppo = rl_job_from_dict({**_job(), "workload": {"kind": "ppo"}}).setup()
    grpo = rl_job_from_dict(_job()).setup()
    n = 8.03e9  # Llama 3 8B parameters
    # PPO: bf16 reference (2 B/param) + the critic's AdamW state (16 B/param), over 8 GPUs
    assert companions_gib(model, ppo, 8) == pytest.approx(18 * n / 8 / 2**30, rel=1e-3)  # 16.8 GiB
    assert companions_gib(model, grpo, 8) == pytest.approx(2 * n / 8 / 2**30, rel=1e-3)  # 1.9 GiB


def test_a_workload_that_is_not_a_table_is_bad_input() -> None:
    """`workload = "grpo"` (a string, not a table) names the field instead of an internal error."""
    from optimizer.errors import ConfigError
    from optimizer.inputs.jobs.rl import rl_job_from_dict

    with pytest.raises(ConfigError, match=r"workload\.kind: None is not an RL job"):
        rl_job_from_dict({"workload": "grpo"}, "job.toml")
