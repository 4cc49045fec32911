"""Where a framework's default would run differently from the plan, the export writes what the
plan assumed (optimizer/report/export/defaults.py); each expectation is the framework's own rule,
quoted from its source in the module."""

from __future__ import annotations

import json
import shlex
import subprocess
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from optimizer import api
from optimizer.errors import ConfigError
from optimizer.report.export.common import train_plans
from optimizer.report.export.defaults import megatron_default_args, nemo_default_overrides
from optimizer.report.export.entry import preset_spec
from optimizer.report.export.training import foundry_fragment, torchtitan_toml


def _words_after(text: str, marker: str) -> list[str]:
    """The shell words of the first command line holding `marker` (continuations joined)."""
    joined = text.replace("\\\n", " ")
    line = next(line for line in joined.splitlines() if marker in line and not line.startswith("#"))
    return shlex.split(line)


def test_hf_trainer_flags_match_its_deepspeed_json(stack_plans: dict[str, dict[str, Any]]) -> None:
    """transformers refuses a DeepSpeed JSON whose micro-batch, accumulation or bf16/fp16 differ
    from TrainingArguments (defaults 8, 1, off): the launch line states the JSON's values."""
    result = stack_plans["hf-trainer"]
    files = {f.name: f.text for f in api.export(result, "all").files}
    ds = json.loads(next(text for name, text in files.items() if name.endswith(".json")))
    script = next(text for text in files.values() if "--deepspeed" in text and "TRAIN_SCRIPT" in text)
    words = _words_after(script, "--deepspeed")
    flag = {w: words[i + 1] for i, w in enumerate(words[:-1]) if w.startswith("--")}
    assert int(flag["--per_device_train_batch_size"]) == ds["train_micro_batch_size_per_gpu"]
    assert int(flag["--gradient_accumulation_steps"]) == ds["gradient_accumulation_steps"]
    assert ("--bf16" in words) == ds["bf16"]["enabled"] and ("--fp16" in words) == ds["fp16"]["enabled"]
    checkpointing = result["plan"]["layout"]["activation_checkpointing"] != "none"
    assert ("--gradient_checkpointing" in words) == checkpointing


def test_torchtitan_keeps_the_plans_resharding_and_selective_policy(
    stack_plans: dict[str, dict[str, Any]],
) -> None:
    result = stack_plans["torchtitan"]
    (t,) = train_plans(result, "torchtitan")
    (f,) = api.export(result, "torchtitan").files
    cfg = tomllib.loads(f.text.split("EOF", 2)[1].strip("'\n") if "EOF" in f.text else f.text)
    # fsdp_reshard_after_forward "default" reshards unless pipelined: a ZeRO-2 plan says never
    expected = {2: "never", 3: "always"}.get(t.zero_stage)
    assert cfg["parallelism"].get("fsdp_reshard_after_forward") == expected
    text = torchtitan_toml(replace(t, checkpointing="selective"))
    # selective_ac_option defaults to "2" (every second layer fully checkpointed), not per op
    assert tomllib.loads(text)["activation_checkpoint"] == {"mode": "selective", "selective_ac_option": "op"}


def test_torchtune_cuts_and_packs_to_the_plans_length(stack_plans: dict[str, dict[str, Any]]) -> None:
    result = stack_plans["torchtune"]
    (t,) = train_plans(result, "torchtune")
    (f,) = api.export(result, "torchtune").files
    cfg = yaml.safe_load(f.text)
    assert cfg["tokenizer"] == {"max_seq_len": t.seq_len} and cfg["dataset"] == {"packed": True}
    launch = api.export(result, "torchrun").files[0].text
    assert f"tokenizer.max_seq_len={t.seq_len}" in launch and "dataset.packed=True" in launch


def test_nemo_distributed_optimizer_syncs_bf16_gradients(stack_plans: dict[str, dict[str, Any]]) -> None:
    (t,) = train_plans(stack_plans["megatron-core"], "nemo")
    zero1 = replace(t, zero_stage=1, precision="bf16")
    # Apex DistributedFusedAdam: overlap_grad_sync=True, overlap_param_sync=False by default
    assert nemo_default_overrides(zero1) == [
        "model.optim.grad_sync_dtype=bf16",
        "model.optim.overlap_param_sync=True",
    ]
    assert nemo_default_overrides(replace(zero1, precision="fp32")) == ["model.optim.overlap_param_sync=True"]
    # without the distributed optimizer NeMo's O2 wrapper accumulates bf16 gradients in fp32
    with pytest.raises(ConfigError, match=r"fp32_grad_accum = True.*zero_stages = \[1\]"):
        nemo_default_overrides(replace(zero1, zero_stage=0))
    assert nemo_default_overrides(replace(zero1, zero_stage=0, precision="fp32")) == []
    with pytest.raises(ConfigError, match="Torch FSDP does not support FP8"):
        nemo_default_overrides(replace(t, zero_stage=3, precision="fp8"))


def test_megatron_fsdp2_needs_untied_embeddings_and_no_fusion(stack_plans: dict[str, dict[str, Any]]) -> None:
    (t,) = train_plans(stack_plans["megatron-core"], "megatron")
    spec = preset_spec(t)
    assert spec is not None and not spec.tied_embeddings  # Llama 2 7B: separate output layer
    zero3 = replace(t, zero_stage=3)
    assert "--no-gradient-accumulation-fusion" in megatron_default_args(zero3, spec)
    with pytest.raises(ConfigError, match="untied embeddings"):
        megatron_default_args(zero3, spec.model_copy(update={"tied_embeddings": True}))
    fp8 = megatron_default_args(replace(t, zero_stage=1, precision="fp8"), spec)
    assert "--fp8-param-gather" in fp8 and "--overlap-param-gather" in fp8


def test_llm_foundry_refuses_offload_composer_refuses(stack_plans: dict[str, dict[str, Any]]) -> None:
    """Composer's get_cpu_offload raises 'FSDP CPU Offload not supported yet.' for any offload."""
    (t,) = train_plans(stack_plans["llm-foundry"], "llm-foundry")
    assert "cpu_offload" not in foundry_fragment(t)["fsdp_config"]
    with pytest.raises(ConfigError, match="Composer's FSDP refuses"):
        foundry_fragment(replace(t, offload="optimizer"))


def test_torchtune_starts_from_the_models_own_config_with_the_plans_adapters(
    stack_plans: dict[str, dict[str, Any]],
) -> None:
    """torchtune's configs are per model (its recipe registry: llama2/70B_lora for Llama-2-70B
    LoRA); the LoRA builders' own adapters (rank 8 on q/v) and base (bf16; QLoRA's is NF4 through
    quantize_base) are set to the plan's."""
    result = stack_plans["torchtune"]  # Llama-2-70B LoRA, rank 16 on every linear layer
    script = api.export(result, "torchrun").files[0].text
    assert "TORCHTUNE_CONFIG=llama2/70B_lora;" in script
    words = _words_after(script, "lora_finetune_distributed")
    for key in ("model.lora_rank=16", "model.apply_lora_to_mlp=True", "model.quantize_base=False"):
        assert key in words, key
    assert "model.lora_attn_modules=[q_proj,k_proj,v_proj,output_proj]" in words  # one quoted word
    (t,) = train_plans(result, "torchtune")
    qlora = yaml.safe_load(api.export(_with_job(result, kind="qlora"), "torchtune").files[0].text)
    assert qlora["model"]["quantize_base"] is True
    assert qlora["model"]["lora_attn_modules"] == ["q_proj", "k_proj", "v_proj", "output_proj"]
    full = _with_job(result, kind="finetune", model="mistral-7b", model_ref="mistral-7b")
    assert "TORCHTUNE_CONFIG=mistral/7B_full;" in api.export(full, "torchrun").files[0].text
    assert "model.quantize_base" not in api.export(full, "torchrun").files[0].text
    with pytest.raises(ConfigError, match="apply_lora_to_mlp adapts gate, up and down together"):
        api.export(_with_job(result, lora_targets=["q", "v", "up"]), "torchtune")


def test_torchtune_without_a_config_of_the_model_asks_for_one(
    stack_plans: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    """A model torchtune bundles no config of (here GPT-3 175B) gets no stand-in config, which
    would train another model: the script stops before `tune run`, saying what to set."""
    result = _with_job(stack_plans["torchtune"], model="gpt3-175b", model_ref="gpt3-175b")
    script = api.export(result, "torchrun").files[0].text
    assert "TORCHTUNE_CONFIG=" not in script.split("tune \\")[0].replace('"${TORCHTUNE_CONFIG', "")
    path = tmp_path / "run.sh"
    path.write_text(script.replace("tune \\", "echo tune \\", 1))
    env = {"PATH": "/usr/bin:/bin"}
    out = subprocess.run(["bash", str(path)], capture_output=True, text=True, env=env, check=False)
    assert out.returncode != 0 and "set TORCHTUNE_CONFIG to a torchtune config of this model" in out.stderr
    ran = subprocess.run(
        ["bash", str(path)],
        capture_output=True,
        text=True,
        env={**env, "TORCHTUNE_CONFIG": "mine/175B"},
        check=False,
    )
    assert ran.returncode == 0 and "--config mine/175B" in " ".join(ran.stdout.split())


def _with_job(result: dict[str, Any], **job: Any) -> dict[str, Any]:
    """`result` as if its job had these fields (the plan itself unchanged)."""
    return {**result, "job": {**result["job"], **job}, "alternatives": []}
