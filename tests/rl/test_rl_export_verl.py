"""`ccopt rl --export verl`: the YAML holds the plan's numbers, user strings stay data, plans
verl cannot run are refused."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from optimizer import api
from optimizer.cli import app
from optimizer.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "grpo_qwen7b_math.toml"


@pytest.fixture(scope="module")
def result() -> dict[str, Any]:
    return api.rl(str(EXAMPLE), offline=True)


def test_config_reads_the_plan(result: dict[str, Any]) -> None:
    config = yaml.safe_load(api.rl_export(result).text)
    plan, pool = result["plan"], result["plan"]["pools"][0]
    assert config["data"]["train_batch_size"] == 128  # prompts_per_step of the example
    assert config["actor_rollout_ref"]["rollout"]["n"] == 8
    assert config["data"]["max_response_length"] == 4096
    rollout = config["actor_rollout_ref"]["rollout"]
    assert rollout["tensor_model_parallel_size"] == plan["step"]["rollout"]["tp"]
    # the plan timed decode with CUDA graphs; verl <= v0.5 would have run eager by default
    assert rollout["enforce_eager"] is False
    trainer = config["trainer"]
    assert trainer["nnodes"] * trainer["n_gpus_per_node"] == pool["gpus"]
    assert trainer["total_training_steps"] == 500
    assert config["algorithm"]["adv_estimator"] == "grpo"


def test_user_strings_stay_data(result: dict[str, Any]) -> None:
    hostile = copy.deepcopy(result)
    name = 'x: y # "z" \' ]} &a *b'
    hostile["job"]["name"] = name
    text = api.rl_export(hostile).text
    assert yaml.safe_load(text)["trainer"]["experiment_name"] == name
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert any(name in line for line in header)  # in a comment line, never a key


def test_hydra_interpolations_in_names_stay_literal(result: dict[str, Any]) -> None:
    """OmegaConf would resolve `${oc.env:...}` in a name when verl loads the file (a secret in
    the experiment name, or a start-up failure): the export escapes it as `\\${`."""
    hostile = copy.deepcopy(result)
    hostile["job"]["name"] = "${oc.env:AWS_SECRET_ACCESS_KEY}"
    hostile["job"]["model"] = "m-${oc.env:HOME}"
    config = yaml.safe_load(api.rl_export(hostile).text)
    assert config["trainer"]["experiment_name"] == "\\${oc.env:AWS_SECRET_ACCESS_KEY}"
    assert config["actor_rollout_ref"]["model"]["path"] == "m-\\${oc.env:HOME}"


def test_batch_sizes_verl_accepts(result: dict[str, Any]) -> None:
    """verl asserts train_batch_size >= ppo_mini_batch_size (default 256 > the example's 128) and
    needs the rollout and reference log-prob micro-batches when dynamic batching is off."""
    config = yaml.safe_load(api.rl_export(result).text)
    arr = config["actor_rollout_ref"]
    assert arr["actor"]["ppo_mini_batch_size"] == config["data"]["train_batch_size"] == 128
    micro = arr["actor"]["ppo_micro_batch_size_per_gpu"]
    assert arr["rollout"]["log_prob_micro_batch_size_per_gpu"] == micro
    assert arr["ref"]["log_prob_micro_batch_size_per_gpu"] == micro


def test_no_reference_no_kl(result: dict[str, Any]) -> None:
    without = copy.deepcopy(result)
    without["job"]["rl"]["reference"] = False
    config = yaml.safe_load(api.rl_export(without).text)
    assert config["actor_rollout_ref"]["actor"]["use_kl_loss"] is False
    assert yaml.safe_load(api.rl_export(result).text)["actor_rollout_ref"]["actor"]["use_kl_loss"] is True


@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        (lambda r: r.update(status="infeasible", plan=None), "no feasible RL plan"),
        (lambda r: r["plan"].update(mode="separate"), "separate generation and training pools"),
        (lambda r: r["job"].update(kind="dpo"), "allowed: grpo, ppo"),
        (lambda r: r["plan"]["pools"][0].update(gpus=3), "GPUs ≠ gpus = 3"),
        (
            lambda r: r["job"].update(kind="ppo", rl={**r["job"]["rl"], "critic": False}),
            "PPO without a critic",
        ),
    ],
)
def test_refused(result: dict[str, Any], change: Any, phrase: str) -> None:
    bad = copy.deepcopy(result)
    change(bad)
    with pytest.raises(ConfigError, match=phrase):
        api.rl_export(bad)


def test_cli_writes_into_the_folder(tmp_path: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(app, ["rl", str(EXAMPLE), "--offline", "--export", "verl", "-o", str(tmp_path)])
    assert ok.exit_code == 0, ok.stderr
    assert yaml.safe_load((tmp_path / "grpo-qwen7b-math.verl.yaml").read_text())["trainer"]["nnodes"] >= 1
    bad = runner.invoke(app, ["rl", str(EXAMPLE), "--offline", "--export", "skypilot"])
    assert bad.exit_code == 2 and "allowed: verl" in bad.stderr


def test_json_validates_against_its_schema(result: dict[str, Any]) -> None:
    import jsonschema  # lazy: a test-only dependency

    schema = json.loads(CliRunner().invoke(app, ["schema", "rl"]).stdout)
    jsonschema.validate(result, schema, cls=jsonschema.Draft202012Validator)
