"""Where a framework would not run the plan as planned, found by reading each framework's source
against the exports: the export writes what the plan counts, or refuses with the reason (each
rule cited in optimizer/report/export/defaults.py, torchtune_configs.py and training.py)."""

from __future__ import annotations

import shlex
import subprocess
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from export_cases import ROOT

from optimizer import api
from optimizer.errors import ConfigError
from optimizer.report.export.common import TrainPlan, train_plans
from optimizer.report.export.defaults import megatron_default_args, nemo_default_overrides
from optimizer.report.export.launchers import accelerate_script
from optimizer.report.export.training import (
    foundry_overrides,
    torchtitan_overrides,
    torchtitan_toml,
    torchtune_overrides,
)


def _plan(stack_plans: dict[str, dict[str, Any]], stack: str, fmt: str) -> TrainPlan:
    (t,) = train_plans(stack_plans[stack], fmt)
    return t


def test_llm_foundry_sets_the_length_every_part_of_the_base_yaml_reads(
    stack_plans: dict[str, dict[str, Any]],
) -> None:
    """mpt-7b.yaml reads the model's, the tokenizer's and the loader's length from
    variables.max_seq_len (2048 there); its top-level max_seq_len is only the ICL evaluation's."""
    t = replace(_plan(stack_plans, "llm-foundry", "llm-foundry"), seq_len=4096)
    assert "variables.max_seq_len=4096" in foundry_overrides(t)
    assert not any(o.startswith("max_seq_len=") for o in foundry_overrides(t))
    (f,) = api.export(stack_plans["llm-foundry"], "llm-foundry").files
    cfg = yaml.safe_load(f.text)
    assert cfg["variables"] == {"max_seq_len": stack_plans["llm-foundry"]["job"]["seq_len"]}
    assert "max_seq_len" not in cfg


def test_torchtune_tensor_parallel_needs_a_plan_and_no_fused_optimizer(
    stack_plans: dict[str, dict[str, Any]],
) -> None:
    lora = _plan(stack_plans, "torchtune", "torchtune")  # Llama-2-70B LoRA
    full = replace(lora, workload="finetune", tp=2, dp=lora.dp // 2 or 1)
    words = torchtune_overrides(full)
    assert "tensor_parallel_dim=2" in words
    assert "tensor_parallel_plan._component_=torchtune.models.llama3.base_llama_tp_plan" in words
    assert "optimizer.fused=False" in words
    assert not any("tensor_parallel" in w for w in torchtune_overrides(replace(full, tp=1)))
    with pytest.raises(ConfigError, match="asserts tensor_parallel_dim == 1"):
        torchtune_overrides(replace(lora, tp=2))
    with pytest.raises(ConfigError, match="no torchtune tensor-parallel plan"):
        torchtune_overrides(replace(full, model_ref="mistral-7b"))


def test_the_planner_keeps_torchtune_adapters_on_fsdp_alone() -> None:
    """The 70B LoRA budget job with its optimizer offloaded splits tensors on a stack that may
    (generic), never on torchtune, whose LoRA recipe asserts tp 1."""
    job = tomllib.loads((ROOT / "examples" / "lora_70b_budget.toml").read_text())
    job["workload"]["offload_optimizer"] = True
    tps = {}
    for stack in ("generic", "torchtune"):
        job["workload"]["stack"] = stack
        result = api.plan(job, offline=True, alternatives=3)
        tps[stack] = {p["layout"]["tp"] for p in [result["plan"], *(result.get("alternatives") or [])]}
    assert tps["torchtune"] == {1}
    assert max(tps["generic"]) > 1  # the same job does split tensors where the stack may


def test_torchtitan_runs_fp8_and_offload_as_planned(stack_plans: dict[str, dict[str, Any]]) -> None:
    t = _plan(stack_plans, "torchtitan", "torchtitan")
    fp8 = tomllib.loads(torchtitan_toml(replace(t, precision="fp8")))
    assert fp8["model"]["converters"] == ["quantize.linear.float8"]  # else its GEMMs run in bf16
    assert "--model.converters=quantize.linear.float8" in torchtitan_overrides(replace(t, precision="fp8"))
    assert "model" not in tomllib.loads(torchtitan_toml(replace(t, precision="bf16")))
    offload = tomllib.loads(torchtitan_toml(replace(t, offload="params", zero_stage=3)))
    assert offload["training"]["enable_cpu_offload"] is True
    with pytest.raises(ConfigError, match="offloads only the optimizer states"):
        torchtitan_toml(replace(t, offload="optimizer"))


def test_torchtitan_refuses_tensor_or_pipeline_splits_without_fsdp(
    stack_plans: dict[str, dict[str, Any]],
) -> None:
    t = _plan(stack_plans, "torchtitan", "torchtitan")
    ddp_tp = replace(t, zero_stage=0, tp=2, pp=1, dp=4, cp=1)
    with pytest.raises(ConfigError, match="DDP refuses more than one dimension"):
        torchtitan_toml(ddp_tp)
    one_shard = replace(t, zero_stage=3, tp=8, pp=1, dp=1, cp=1)
    with pytest.raises(ConfigError, match="trains in fp32"):
        torchtitan_toml(one_shard)
    assert tomllib.loads(torchtitan_toml(replace(t, zero_stage=3, tp=2, pp=1, dp=4, cp=1)))  # FSDP: runs


def test_megatron_offloads_the_optimizer_and_nemo_refuses_offload(
    stack_plans: dict[str, dict[str, Any]],
) -> None:
    t = _plan(stack_plans, "megatron-core", "megatron")
    args = megatron_default_args(replace(t, offload="optimizer", zero_stage=1), None)
    # --optimizer-cpu-offload asserts --use-precision-aware-optimizer (arguments.py validate_args)
    assert args[-2:] == ["--optimizer-cpu-offload", "--use-precision-aware-optimizer"]
    assert "--optimizer-cpu-offload" not in megatron_default_args(replace(t, zero_stage=1), None)
    with pytest.raises(ConfigError, match="offloads only the optimizer states"):
        megatron_default_args(replace(t, offload="params", zero_stage=1), None)
    with pytest.raises(ConfigError, match="offloads to the CPU"):
        nemo_default_overrides(replace(t, offload="optimizer", zero_stage=1))


def test_accelerate_fsdp_prefetches_in_backward(stack_plans: dict[str, dict[str, Any]]) -> None:
    """accelerate's FSDP plugin defaults to NO_PREFETCH (torch's FSDP itself: BACKWARD_PRE)."""
    t = replace(_plan(stack_plans, "torchtitan", "torchrun"), stack="fsdp", zero_stage=3, tp=1, pp=1, cp=1)
    text = accelerate_script(t).replace("\\\n", " ")
    line = next(x for x in text.splitlines() if x.startswith("accelerate launch"))
    words = shlex.split(line)
    assert words[words.index("--fsdp_backward_prefetch") + 1] == "BACKWARD_PRE"
    # FSDP's CPU offload moves parameters and gradients too: an optimizer-only plan is refused
    with pytest.raises(ConfigError, match="offloads only the optimizer states"):
        accelerate_script(replace(t, offload="optimizer"))
    offload = accelerate_script(replace(t, offload="params")).replace("\\\n", " ")
    assert "--fsdp_offload_params true" in " ".join(offload.split())


@pytest.mark.parametrize(
    ("stack", "variable", "own_model", "own_config"),
    [
        (
            "torchtitan",
            "TORCHTITAN_CONFIG",
            "llama-3-8b",
            "torchtitan/models/llama3/train_configs/llama3_8b.toml",
        ),
        ("llm-foundry", "FOUNDRY_YAML", "gpt2", "train/yamls/pretrain/gpt2-small.yaml"),
    ],
)
def test_a_framework_config_is_the_plans_model_or_the_script_asks_for_one(
    stack_plans: dict[str, dict[str, Any]],
    tmp_path: Path,
    stack: str,
    variable: str,
    own_model: str,
    own_config: str,
) -> None:
    """torchtitan and llm-foundry define the model in their config: the export names the
    model's own (here Llama 3 8B, GPT-2), and for one they bundle none (Llama 2 7B, the stack
    example's model) it stops before launching rather than train another model."""
    result = stack_plans[stack]
    own = {**result, "job": {**result["job"], "model": own_model, "model_ref": own_model}}
    script = api.export(own, "torchrun").files[0].text
    assert f"{variable}={own_config};" in script
    assert result["job"]["model_ref"] == "llama-2-7b"
    script = api.export(result, "torchrun").files[0].text
    path = tmp_path / "run.sh"
    path.write_text(
        script.replace("\ntorchrun ", "\necho torchrun ").replace("\ncomposer ", "\necho composer ")
    )
    env = {"PATH": "/usr/bin:/bin", "NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1"}  # a node's own
    out = subprocess.run(["bash", str(path)], capture_output=True, text=True, env=env, check=False)
    assert out.returncode != 0 and f"set {variable} to a {stack} config of this model" in out.stderr
