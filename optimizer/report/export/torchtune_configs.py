"""Which torchtune recipe config a plan starts from, and the LoRA keys that make it the plan's.

torchtune's configs are per model (`tune ls`); a config of another model would train that model.
The table below is read from torchtune's recipe registry (torchtune/_recipe_registry.py at
045a13f, recipes full_finetune_distributed and lora_finetune_distributed); a model without a
config there gets none, and the launch line asks for one instead of running another model's.
"""

from __future__ import annotations

from optimizer.errors import ConfigError
from optimizer.report.export.common import TrainPlan

__all__ = [
    "torchtune_config",
    "torchtune_lora_overrides",
    "torchtune_tensor_parallel_overrides",
]

#: model preset -> (full_finetune_distributed config, lora_finetune_distributed config); None
#: where the registry has none. QLoRA runs the LoRA config with the base quantized
#: (torchtune_lora_overrides), which is what its *_qlora configs' qlora_* builders are
#: (models/llama3_1/_model_builders.py: qlora_llama3_1_8b = partial(lora_llama3_1_8b,
#: quantize_base=True))
TORCHTUNE_CONFIGS: dict[str, tuple[str | None, str | None]] = {
    "llama-2-7b": ("llama2/7B_full", "llama2/7B_lora"),
    "llama-2-13b": ("llama2/13B_full", "llama2/13B_lora"),
    "llama-2-70b": (None, "llama2/70B_lora"),
    "llama-3-8b": ("llama3/8B_full", "llama3/8B_lora"),
    "llama-3-70b": ("llama3/70B_full", "llama3/70B_lora"),
    "llama-3.1-405b": (None, "llama3_1/405B_qlora"),
    "mistral-7b": ("mistral/7B_full", "mistral/7B_lora"),
    "qwen2.5-7b": ("qwen2_5/7B_full", "qwen2_5/7B_lora"),
}

#: the plan's attention targets as torchtune's LoRA builders name them (lora_attn_modules)
_ATTENTION_MODULES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "output_proj"}
_MLP_MODULES = ("gate", "up", "down")


def torchtune_config(t: TrainPlan) -> str | None:
    """The torchtune config of the plan's model and workload, None when torchtune has none."""
    full, lora = TORCHTUNE_CONFIGS.get(t.model_ref, (None, None))
    return lora if t.workload in ("lora", "qlora") else full


def torchtune_lora_overrides(t: TrainPlan) -> list[str]:
    """The adapters the plan counts, as the LoRA builders' arguments (lora_<model>(
    lora_attn_modules, apply_lora_to_mlp, apply_lora_to_output, lora_rank, ..., quantize_base)):
    the configs' own are rank 8 on q/v (and the MLP), a bf16 base for LoRA; QLoRA's base is NF4.

    Raises:
        ConfigError: adapters on some but not all of the MLP's projections (torchtune's
            apply_lora_to_mlp takes all three or none).
    """
    if t.workload not in ("lora", "qlora"):
        return []
    mlp = [m for m in _MLP_MODULES if m in t.lora_targets]
    if mlp and len(mlp) < len(_MLP_MODULES):
        raise ConfigError(
            f"--export torchtune: plan {t.job!r} puts adapters on {', '.join(mlp)} of the MLP only; "
            "torchtune's apply_lora_to_mlp adapts gate, up and down together. Allowed: "
            "lora_targets with all of gate/up/down or none, or export torchrun"
        )
    attention = [_ATTENTION_MODULES[m] for m in ("q", "k", "v", "o") if m in t.lora_targets]
    keys = [
        f"model.lora_attn_modules=[{','.join(attention)}]",
        f"model.apply_lora_to_mlp={bool(mlp)}",
        f"model.quantize_base={t.workload == 'qlora'}",
    ]
    return [f"model.lora_rank={t.lora_rank}", *keys] if t.lora_rank else keys


#: the presets torchtune's Llama tensor-parallel plan fits (its Llama 2 / 3 decoders' module
#: names: recipes/configs/llama3_1/70B_full.yaml tensor_parallel_plan
#: torchtune.models.llama3.base_llama_tp_plan)
_LLAMA_TP_PLAN = "torchtune.models.llama3.base_llama_tp_plan"
_LLAMA_PRESETS = ("llama-2-", "llama-3-", "llama-3.1-")


def torchtune_tensor_parallel_overrides(t: TrainPlan) -> list[str]:
    """What a plan with tp > 1 needs in torchtune: full_finetune_distributed raises "Tensor
    Parallel plan needs to be provided when tensor parallel is enabled" without
    tensor_parallel_plan (most bundled configs have none) and "Tensor parallelism is currently
    incompatible with fused optimizer" with the configs' fused AdamW.

    Raises:
        ConfigError: LoRA / QLoRA with tp > 1 (lora_finetune_distributed asserts
            tensor_parallel_dim == 1), or a model torchtune has no tensor-parallel plan for here.
    """
    if t.tp == 1:
        return []
    if t.workload in ("lora", "qlora"):
        raise ConfigError(
            f"--export torchtune: plan {t.job!r} splits tensors (tp {t.tp}) for {t.workload}; "
            "torchtune's lora_finetune_distributed asserts tensor_parallel_dim == 1. Allowed: "
            "re-plan (the planner keeps torchtune adapters on FSDP alone), or export torchrun"
        )
    if not t.model_ref.startswith(_LLAMA_PRESETS):
        raise ConfigError(
            f"--export torchtune: plan {t.job!r} splits tensors (tp {t.tp}) of {t.model_ref}, for "
            "which this export knows no torchtune tensor-parallel plan (tensor_parallel_plan; "
            "Llama 2 / 3 only). Allowed: set tensor_parallel_plan yourself and export torchrun, or "
            "plan with workload.stack megatron-core"
        )
    return [f"tensor_parallel_plan._component_={_LLAMA_TP_PLAN}", "optimizer.fused=False"]
