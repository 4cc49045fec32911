"""The host's floor under a training step: eager PyTorch issues every kernel from the CPU, one at
a time, so a micro-batch can never take less than the host needs to launch its kernels.

When the GPU finishes kernels faster than the host issues them, the step runs at the host's
pace whatever the GPU (the "overhead" regime: Horace He, "Making Deep Learning Go Brrrr From
First Principles", horace.io/brrr_intro.html, 2022). The launches overlap the GPU's work, so the
micro-batch takes the larger of the two, not their sum. What binds here is a small model
(hidden ≲ 2k) on a fast GPU: Unsloth's Qwen3 0.6B and 1.7B LoRA runs reach 19-25k tokens/s on
an RTX 5090, H100, H200 and B200 alike (benchmarks/validation/aside10, Surogate's page).

Kernels are counted per decoder layer from the eager reference implementation (Hugging Face
transformers `modeling_llama.py`: LlamaRMSNorm, apply_rotary_pos_emb, LlamaMLP, the decoder
layer's residual adds; peft `lora.Linear.forward` for adapters); a compiled model (torch.compile)
or a stack of fused layer kernels (Transformer Engine, Megatron's fusions) runs the pointwise
work between its matmuls in a few kernels. A stack that does not launch from Python (a
C++/CUDA engine, CUDA graphs) states `TrainingSetup.host_launches = False`.
"""

from __future__ import annotations

from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec

__all__ = ["forward_kernels_per_layer", "host_s_per_layer_pass", "stage_host_s", "host_dispatch_s"]

#: LlamaRMSNorm.forward: to(fp32), pow, mean, + eps, rsqrt, ×, to(dtype), × weight; F.layer_norm: one
NORM_KERNELS = {"rmsnorm": 8, "layernorm": 1}
#: apply_rotary_pos_emb on q and k: x·cos, rotate_half (neg, cat), ·sin, + (5 each)
ROTARY_KERNELS = 10
#: the attention core: one fused kernel (SDPA / FlashAttention) + the output's transpose copy;
#: eager: Q·Kᵀ, scale, mask, softmax, ·V + the copy
ATTENTION_KERNELS = {"flash": 2, "eager": 6}
#: LlamaMLP: gate, up and down matmuls, act and × between them; a plain MLP: fc1, fc2 and act
MLP_MATMULS = {"gated": 3, "plain": 2}
MLP_POINTWISE = {"gated": 2, "plain": 1}
#: q, k, v, o projections and the two residual adds
PROJECTION_KERNELS = 4
RESIDUAL_KERNELS = 2
#: peft lora.Linear: lora_A, lora_B, × scaling, + the base output (+ dropout when p > 0)
LORA_KERNELS = 4
#: GUESS: an MoE layer's router (matmul, softmax, top-k, normalise) and token dispatch and
#: combine (sort, gather, scatter, weighted sum), its experts run as grouped GEMMs (the MLP's
#: matmuls); an eager loop over the experts (Hugging Face's Mixtral) launches more
MOE_ROUTING_KERNELS = 8
#: GUESS: a compiled layer keeps its matmuls and attention and fuses the pointwise kernels
#: between them into this many (norm, rotary, activation, residual groups)
COMPILED_POINTWISE_KERNELS = 4
#: GUESS: backward launches about twice the forward's kernels (input and weight gradients)
BACKWARD_KERNELS_PER_FORWARD = 2.0


def forward_kernels_per_layer(
    model: ModelSpec, setup: TrainingSetup, attention: str, fused: bool = False
) -> float:
    """Kernels one decoder layer's forward launches (module doc), adapters included; `fused`: the
    stack fuses the pointwise work as a compiled layer does (stacks.toml fused_layer_kernels)."""
    matmuls = PROJECTION_KERNELS + MLP_MATMULS[model.ffn_kind]
    shapes = model.linear_shapes()
    adapted = sum(1 for t in setup.lora_targets if t in shapes) if setup.is_adapter else 0
    routing = MOE_ROUTING_KERNELS if model.is_moe else 0
    fixed = (
        matmuls
        + adapted * LORA_KERNELS
        + ATTENTION_KERNELS["eager" if attention == "eager" else "flash"]
        + routing
    )
    if setup.compile or fused:
        return fixed + COMPILED_POINTWISE_KERNELS
    rotary = 0 if model.learned_positions else ROTARY_KERNELS
    norms = 2 * NORM_KERNELS[model.norm]
    return fixed + MLP_POINTWISE[model.ffn_kind] + rotary + norms + RESIDUAL_KERNELS


def host_s_per_layer_pass(
    model: ModelSpec, setup: TrainingSetup, attention: str, a: PerfAssumptions, fused: bool = False
) -> float:
    """Seconds the host needs to launch one decoder layer's forward kernels (module doc); 0 when
    the stack does not launch from Python (`setup.host_launches is False`)."""
    if setup.host_launches is False or a.host_s_per_kernel <= 0.0:
        return 0.0
    return forward_kernels_per_layer(model, setup, attention, fused) * a.host_s_per_kernel


def launch_passes(layout: Layout) -> float:
    """Forward passes' worth of kernels one micro-batch launches: forward + backward (twice the
    forward's kernels) + the recomputed forward under full checkpointing."""
    return 1.0 + BACKWARD_KERNELS_PER_FORWARD + (1.0 if layout.checkpointing == "full" else 0.0)


def stage_host_s(model: ModelSpec, layout: Layout, layer_pass_s: float) -> float:
    """Seconds to launch one micro-batch's kernels on one GPU when one layer's forward kernels
    take `layer_pass_s` (host_s_per_layer_pass): its stage's layers × launch_passes."""
    return -(-model.layers // layout.pp) * launch_passes(layout) * layer_pass_s


def host_dispatch_s(
    model: ModelSpec,
    setup: TrainingSetup,
    layout: Layout,
    attention: str,
    a: PerfAssumptions,
    fused: bool = False,
) -> float:
    """Seconds the host needs to launch one micro-batch's kernels on one GPU: its stage's layers
    × launch_passes × the time of one layer's forward kernels (host_s_per_layer_pass)."""
    return stage_host_s(model, layout, host_s_per_layer_pass(model, setup, attention, a, fused))
