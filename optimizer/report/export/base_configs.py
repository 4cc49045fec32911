"""The framework config a torchtitan or llm-foundry plan starts from: the one of the plan's model.

Both frameworks define the model in their config (torchtitan's model flavor, llm-foundry's model
section); another model's config would train that model. Read from the frameworks' own config
folders: torchtitan v0.2.2 torchtitan/models/llama3/train_configs/, llm-foundry 8c8dd48
scripts/train/yamls/pretrain/. A model without one gets none: the launch line asks for it.
"""

from __future__ import annotations

from typing import Any

from optimizer.report.export.common import TrainPlan, job_stack

__all__ = ["config_guard", "foundry_yaml", "serve_model_id", "torchtitan_config"]

#: model preset -> torchtitan job config (flavors "8B", "70B", "405B" of its llama3 model)
TORCHTITAN_CONFIGS = {
    "llama-3-8b": "torchtitan/models/llama3/train_configs/llama3_8b.toml",
    "llama-3-70b": "torchtitan/models/llama3/train_configs/llama3_70b.toml",
    "llama-3.1-405b": "torchtitan/models/llama3/train_configs/llama3_405b.toml",
}

#: model preset -> llm-foundry train YAML (relative to its scripts folder): GPT-2 small is the
#: Hugging Face gpt2 architecture (gpt2-small.yaml), Llama 3.1 8B has Llama 3 8B's shape
#: (hf-llama-3.1-8B.yaml; its 128K-context RoPE scaling does not change the step)
FOUNDRY_YAMLS = {
    "gpt2": "train/yamls/pretrain/gpt2-small.yaml",
    "llama-3-8b": "train/yamls/pretrain/hf-llama-3.1-8B.yaml",
}


def torchtitan_config(t: TrainPlan) -> str | None:
    """torchtitan's job config of the plan's model, None when it ships none."""
    return TORCHTITAN_CONFIGS.get(t.model_ref)


def foundry_yaml(t: TrainPlan) -> str | None:
    """llm-foundry's train YAML of the plan's model, None when it ships none."""
    return FOUNDRY_YAMLS.get(t.model_ref)


def config_guard(variable: str, framework: str) -> str:
    """A line that stops the script unless `variable` names a config (no bundled one is the
    plan's model); no quote characters inside the expansion, which bash would pair."""
    return (
        f': "${{{variable}:?set {variable} to a {framework} config of this model: none of the '
        f'configs {framework} bundles is it}}"\n'
    )


#: model preset -> its Hugging Face repository (the model cards at huggingface.co/<id>, read
#: 2026-12-05), which vLLM, TGI and TensorRT-LLM download by name; the checkpoints the presets'
#: shapes were read from (model/presets.py). GPT-3 175B has none
HF_REPOS = {
    "gpt2": "openai-community/gpt2",
    "bert-base": "google-bert/bert-base-uncased",
    "bert-large": "google-bert/bert-large-uncased",
    "vit-b16": "google/vit-base-patch16-224",
    "vit-l16": "google/vit-large-patch16-224",
    "llama-2-7b": "meta-llama/Llama-2-7b-hf",
    "llama-2-13b": "meta-llama/Llama-2-13b-hf",
    "llama-2-70b": "meta-llama/Llama-2-70b-hf",
    "llama-3-8b": "meta-llama/Meta-Llama-3-8B",
    "llama-3-70b": "meta-llama/Meta-Llama-3-70B",
    "llama-3.1-405b": "meta-llama/Llama-3.1-405B",
    "mistral-7b": "mistralai/Mistral-7B-v0.1",
    "mixtral-8x7b": "mistralai/Mixtral-8x7B-v0.1",
    "qwen2.5-7b": "Qwen/Qwen2.5-7B",
}
#: engines that load a model by its Hugging Face repository name (llama.cpp takes a GGUF file
#: and MLC-LLM a compiled model: the preset name stays a placeholder to replace)
_HF_ENGINES = ("generic", "vllm", "tgi", "tensorrt-llm")


def serve_model_id(job: dict[str, Any]) -> str:
    """The MODEL_ID a serving script starts from: the preset's Hugging Face repository where its
    engine downloads by name, else the job's model (a path the user gave, or a preset name)."""
    ref = str(job.get("model_ref") or job.get("model"))
    engine = job_stack(job)
    return HF_REPOS.get(ref, ref) if engine in _HF_ENGINES else ref
