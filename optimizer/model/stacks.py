"""Software-stack profiles (data/stacks.toml): what a training or serving stack does by default.

Each profile row holds overlap fractions, sequence-parallel default, the ZeRO stage its
"distributed optimizer" means, attention kernel, extra buffers, allocator behaviour, LoRA and
checkpointing defaults; every number in the file carries its source and a `guess` flag.
Missing fields of a stack come from the `generic` row. The file is package data read once.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from optimizer.errors import ConfigError, did_you_mean
from optimizer.user_cache import parsed_toml

if TYPE_CHECKING:
    from optimizer.model.setup import PerfAssumptions, ServeSetup, TrainingSetup

__all__ = [
    "StackProfile",
    "StackValue",
    "Knobs",
    "knobs",
    "get_stack",
    "stack_names",
    "train_stack_names",
    "serve_stack_names",
    "DEFAULT_STACK",
    "STACK_ALIASES",
]

DEFAULT_STACK = "generic"
#: other names users write for a stack row
STACK_ALIASES = {
    "nemo": "megatron-core",
    "megatron": "megatron-core",
    "megatron-lm": "megatron-core",
    "accelerate": "fsdp",
    "hf-accelerate": "fsdp",
    "transformers": "hf-trainer",
    "trt-llm": "tensorrt-llm",
    "trtllm": "tensorrt-llm",
    "llamacpp": "llama.cpp",
    "other": "generic",
}


@dataclass(frozen=True)
class StackValue:
    """One number of a profile with its provenance."""

    value: Any
    guess: bool
    source: str


@dataclass(frozen=True)
class StackProfile:
    """Resolved defaults of one stack (generic row + the stack's own rows)."""

    name: str
    kind: str = "train"
    description: str = ""
    dp_overlap: float = 0.8
    tp_overlap: float = 0.0
    pp_overlap: float = 0.0
    cp_overlap: float = 0.5
    sequence_parallel: bool = True
    distributed_optimizer_zero: int = 1
    attention: str = "flash"
    #: generation of the fused attention kernel behind `attention = "flash"`: fa2 (FlashAttention-2
    #: class: flash-attn 2, PyTorch SDPA flash) | fa3 (Hopper-native: FlashAttention-3, cuDNN)
    attention_kernel: str = "fa2"
    fp32_grad_buffer: bool = False
    #: a bf16 run without ZeRO (stage 0) is wrapped in DeepSpeed's BF16_Optimizer, which keeps the
    #: fp32 master and optimizer states of 1/dp of the parameters (a ZeRO-1 partition) and
    #: all-gathers the updated bf16 parameters (optimizer_sharding_stage)
    bf16_optimizer_at_zero0: bool = False
    #: gradients reduced in fp32 whatever their compute dtype (FSDP2 MixedPrecisionPolicy
    #: reduce_dtype float32): 4 bytes per value on the wire
    fp32_grad_reduce: bool = False
    #: FSDP2 without no-sync: every micro-batch reduce-scatters its gradients, and (resharding
    #: after each backward) a ZeRO-2 run gathers its weights again in the next forward
    fsdp2_microbatch_sync: bool = False
    #: tensor or pipeline splits run only under FSDP (ZeRO-2/3 over 2+ data-parallel ranks)
    splits_need_fsdp: bool = False
    #: LoRA / QLoRA runs may split tensors too (torchtune's LoRA recipe may not)
    adapter_tensor_parallel: bool = True
    #: without ZeRO (stage 0) the gradients are all-reduced after backward has finished, at the
    #: accumulation boundary (DeepSpeed engine.allreduce_gradients: buffered_allreduce_fallback),
    #: so none of that all-reduce hides behind compute (step_model.dp_traffic)
    zero0_reduce_after_backward: bool = False
    #: fp8 runs keep the compute weights in fp8 only (Megatron-Core --fp8-param-gather)
    fp8_params: bool = False
    #: fp8 GEMMs save their input for backward in fp8 (Transformer Engine), not in 16 bit
    fp8_saved_inputs: bool = False
    fp32_master: bool = True
    #: ZeRO-3 by FSDP mixed precision: the sharded parameters are the fp32 master the optimizer
    #: steps (no 16-bit shard; the 16-bit copy exists only for the gathered unit) and the reduced
    #: gradients land in fp32 shards (memory._state_bytes)
    fp32_param_shards: bool = False
    #: gradients set to None after every step (Optimizer.zero_grad(set_to_none=True), torch >= 2.0
    #: default): with one micro-batch per step none are held at the start of backward
    #: (grad_lifetime.gradients_at_peak)
    grads_freed: bool = False
    optimizer_in_backward: bool = False
    logits_bytes_per_value: float = 14.0
    #: torch.compile also compiles its loss (compile_logits_bytes_per_value applies then)
    compile_loss: bool = False
    #: bytes per logit at the loss when the loss is compiled
    compile_logits_bytes_per_value: float = 4.0
    #: bytes per logit left by Cut Cross-Entropy (TrainingSetup.loss_kernel "cce")
    cce_logits_bytes_per_value: float = 0.2
    #: bytes per logit left by a fused softmax cross-entropy kernel (TrainingSetup.loss_kernel "fused")
    fused_logits_bytes_per_value: float = 4.0
    allocator_cache: float = 0.08
    #: weights and gradients live in buffers allocated once at start-up (Megatron-Core
    #: param_and_grad_buffer): the allocator cache grows around the other allocations only
    static_state_buffers: bool = False
    context_gib: float = 0.6
    #: the layer's pointwise work runs in fused kernels (Transformer Engine / Megatron fusions):
    #: the host launches about as many kernels as a compiled layer's (optimizer/model/dispatch.py)
    fused_layer_kernels: bool = False
    checkpointing: str = "none"
    #: what "selective" recomputation means in the stack: "attention" (Korthikanti et al.
    #: 2022 §5: the attention core) | "op" (torchtitan per-op SAC: every other mm recomputed)
    #: | "block" (whole blocks checkpointed, a fraction selective_blocks of them: fms-fsdp)
    selective_ac: str = "attention"
    #: with selective_ac "block": the fraction of blocks checkpointed
    selective_blocks: float = 1.0
    lora_targets: tuple[str, ...] = ("q", "k", "v", "o", "gate", "up", "down")
    #: what its layers save for backward beyond the Korthikanti count (optimizer.model.activations)
    lora_dropout: float = 0.0  # LoRA dropout of its recipes (saves output + mask per module)
    fused_qkv_lora: bool = False  # one LoRA branch (one dropout) for the fused QKV projection
    qlora_saves_inputs: bool = False  # its 4-bit base linear keeps its input (bitsandbytes)
    qlora_double_quant: bool = True  # NF4 absmax constants quantised again (Dettmers 2023 §3)
    qlora_quantizes_head: bool = False  # the LM head is a 4-bit linear too
    #: bytes per weight of the 16-bit copy a 4-bit linear dequantizes for each matmul (4: a
    #: 16-bit dequantized weight and its cast to the compute dtype, alive together)
    qlora_dequant_bytes: float = 2.0
    norm_fp32_saved: bool = False  # eager RMSNorm saves fp32 input (+ fp32 normalised if trained)
    eager_swiglu: bool = False  # silu input and output both saved (no fused SwiGLU)
    gqa_kv_expanded: bool = False  # K/V expanded to the query heads before attention
    #: torch.autocast mixed precision over fp32 parameters: the 16-bit cast of every weight is
    #: cached in forward and saved by its matmul for backward (+2 B/param at the peak)
    autocast_weight_cache: bool = False
    #: what the stack can run (training): tensor / pipeline / context parallelism and the ZeRO
    #: stages it shards with (optimizer.model.layout reads them: the planner never goes beyond)
    tensor_parallel: bool = True
    pipeline_parallel: bool = True
    context_parallel: bool = True
    zero_stages: tuple[int, ...] = (0, 1, 2, 3)
    #: the ZeRO stages its launcher runs together with pipeline stages (pp > 1): DeepSpeed's
    #: PipelineEngine and Megatron-LM refuse ZeRO >= 2 there (layout.pipeline_zero_stages)
    pipeline_zero_stages: tuple[int, ...] = (0, 1, 2, 3)
    #: the activation checkpointing levels its launcher can be told to run (layout.
    #: stack_checkpointing): a stack whose switch checkpoints whole layers has no "selective"
    checkpointing_modes: tuple[str, ...] = ("none", "selective", "full")
    paged_kv: bool = True
    kv_reservation: str = "max"  # KV admitted per sequence: "max" (prompt + max output) | "average"
    fused_prefill: bool = False  # prompt chunks ride in the decode iterations (in-flight batching)
    kv_block_tokens: int = 16
    kv_memory_fraction: float = 0.9
    #: what kv_memory_fraction is a fraction of: "total" (the card: vLLM
    #: gpu_memory_utilization) | "free" (memory left after weights and activations)
    kv_fraction_of: str = "total"
    max_batch: int = 256
    #: {field: StackValue} for every number read from the file (provenance)
    provenance: dict[str, StackValue] = field(default_factory=dict, compare=False, repr=False)

    def with_overrides(self, **values: Any) -> StackProfile:
        """A copy with some fields replaced (e.g. `--no-sequence-parallel`)."""
        return replace(self, **values)

    def lacks(self) -> list[str]:
        """The parallelisms the stack cannot run, in words ("tensor", "pipeline", "context")."""
        flags = (
            ("tensor", self.tensor_parallel),
            ("pipeline", self.pipeline_parallel),
            ("context", self.context_parallel),
        )
        return [name for name, ok in flags if not ok]

    def guesses(self) -> list[str]:
        """Names of the fields whose value is a stated guess."""
        return sorted(k for k, v in self.provenance.items() if v.guess)


_NUMERIC = (
    "dp_overlap",
    "tp_overlap",
    "pp_overlap",
    "cp_overlap",
    "logits_bytes_per_value",
    "compile_logits_bytes_per_value",
    "cce_logits_bytes_per_value",
    "fused_logits_bytes_per_value",
    "allocator_cache",
    "context_gib",
    "kv_memory_fraction",
    "lora_dropout",
)
_TUPLES = ("lora_targets", "zero_stages", "pipeline_zero_stages", "checkpointing_modes")
_FRACTIONS = ("dp_overlap", "tp_overlap", "pp_overlap", "cp_overlap", "kv_memory_fraction")


def _read_rows() -> dict[str, dict[str, Any]]:
    data = resources.files("optimizer.model").joinpath("data/stacks.toml").read_bytes()
    return parsed_toml("stacks.toml", data)


def _value_of(stack: str, key: str, raw: Any) -> StackValue:
    if not isinstance(raw, dict) or not {"value", "guess", "source"} <= set(raw):
        raise ConfigError(f"stacks.toml [{stack}] {key}: needs {{value, guess, source}}")
    return StackValue(raw["value"], bool(raw["guess"]), str(raw["source"]))


def _resolve(name: str, rows: dict[str, dict[str, Any]]) -> StackProfile:
    known = {f.name for f in fields(StackProfile)} - {"name", "provenance"}
    merged: dict[str, Any] = {}
    provenance: dict[str, StackValue] = {}
    for row_name in (DEFAULT_STACK, name):
        for key, raw in rows[row_name].items():
            if key not in known:
                raise ConfigError(f"stacks.toml [{row_name}]: unknown field {key!r}")
            if key in ("kind", "description"):
                merged[key] = raw
                continue
            val = _value_of(row_name, key, raw)
            provenance[key] = val
            merged[key] = tuple(val.value) if key in _TUPLES else val.value
    for key in _NUMERIC:
        if key in merged:
            merged[key] = float(merged[key])
    for key in _FRACTIONS:
        if key in merged and not 0.0 <= merged[key] <= 1.0:
            raise ConfigError(f"stacks.toml [{name}] {key}: {merged[key]} is not in [0, 1]")
    for key in ("zero_stages", "pipeline_zero_stages"):
        if not set(merged.get(key, ())) <= {0, 1, 2, 3}:
            raise ConfigError(f"stacks.toml [{name}] {key}: {merged[key]} not within 0-3")
    modes = merged.get("checkpointing_modes", ("none",))
    if "none" not in modes or not set(modes) <= {"none", "selective", "full"}:
        raise ConfigError(
            f"stacks.toml [{name}] checkpointing_modes: {modes} needs none, within none/selective/full"
        )
    return StackProfile(name=name, provenance=provenance, **merged)


@cache
def _profiles() -> dict[str, StackProfile]:
    rows = _read_rows()
    if DEFAULT_STACK not in rows:
        raise ConfigError("stacks.toml has no [generic] row")
    return {name: _resolve(name, rows) for name in rows}


def stack_names() -> list[str]:
    """Every stack with a profile row."""
    return list(_profiles())


def train_stack_names() -> list[str]:
    """Training stacks (and `generic`)."""
    return [n for n, p in _profiles().items() if p.kind == "train"]


def serve_stack_names() -> list[str]:
    """Serving stacks."""
    return [n for n, p in _profiles().items() if p.kind == "serve"]


def setup_stack(setup: TrainingSetup) -> StackProfile:
    """The profile of a training setup's stack as its workload runs it: without tensor
    parallelism for adapters where the stack's adapter recipe has none (adapter_tensor_parallel)."""
    stack = get_stack(setup.stack)
    if setup.is_adapter and stack.tensor_parallel and not stack.adapter_tensor_parallel:
        return replace(stack, tensor_parallel=False)
    return stack


def get_stack(name: str | None, field_name: str = "stack") -> StackProfile:
    """Profile by name (case-insensitive, aliases such as `nemo` accepted); None -> generic.

    Raises:
        ConfigError: unknown stack (names the allowed ones and a close match).
    """
    profiles = _profiles()
    key = (name or DEFAULT_STACK).strip().lower()
    key = STACK_ALIASES.get(key, key)
    if key in profiles:
        return profiles[key]
    raise ConfigError(
        f"{field_name}: unknown stack {name!r}{did_you_mean(key, profiles)}. Allowed: {', '.join(profiles)}"
    )


@dataclass(frozen=True)
class Knobs:
    """Effective switches of one run: explicit setup/assumption values win over the stack's."""

    stack: StackProfile
    sequence_parallel: bool
    attention: str
    optimizer_in_backward: bool
    dp_overlap: float
    tp_overlap: float
    pp_overlap: float
    cp_overlap: float
    logits_bytes_per_value: float
    allocator_cache: float
    context_gib: float


def knobs(setup: TrainingSetup | ServeSetup, assumptions: PerfAssumptions) -> Knobs:
    """Knobs of a TrainingSetup (or ServeSetup) under PerfAssumptions: the explicit values of
    either win over the stack's (the planner's step and memory models ask once per job)."""
    prof = get_stack(setup.stack)
    a = assumptions
    sp = getattr(setup, "sequence_parallel", None)
    attention = getattr(setup, "attention", None)
    opt_bwd = getattr(setup, "optimizer_in_backward", None)
    return Knobs(
        stack=prof,
        sequence_parallel=prof.sequence_parallel if sp is None else sp,
        attention=attention or prof.attention,
        optimizer_in_backward=prof.optimizer_in_backward if opt_bwd is None else opt_bwd,
        dp_overlap=_either(a.dp_overlap, prof.dp_overlap),
        tp_overlap=_either(a.tp_overlap, prof.tp_overlap),
        pp_overlap=_either(a.pp_overlap, prof.pp_overlap),
        cp_overlap=_either(a.cp_overlap, prof.cp_overlap),
        logits_bytes_per_value=_either(a.logits_bytes_per_value, prof.logits_bytes_per_value),
        allocator_cache=_either(a.fragmentation, prof.allocator_cache),
        context_gib=_either(a.overhead_gib, prof.context_gib),
    )


def optimizer_sharding_stage(zero_stage: int, stack: StackProfile, setup: TrainingSetup) -> int:
    """The ZeRO stage that decides how a full run's optimizer states are sharded: `zero_stage`,
    or 1 where the stack wraps a bf16 run at stage 0 in BF16_Optimizer (DeepSpeed
    runtime/engine.py _do_optimizer_sanity_check: no ZeRO, bf16 model, fp32 gradient
    accumulation -> BFLOAT16; runtime/bf16_optimizer.py: fp32 params partition = 1/dp of the
    flat bf16 params, fp32 gradients full-size)."""
    wrapped = (
        zero_stage == 0
        and stack.bf16_optimizer_at_zero0
        and setup.precision == "bf16"
        and not setup.is_adapter
        and setup.fp32_grads is not False
    )
    return 1 if wrapped else zero_stage


def _either(explicit: float | None, stack_value: float) -> float:
    return stack_value if explicit is None else explicit
