"""What one transformer layer saves for backward beyond the Korthikanti et al. count, per stack.

memory.activation_bytes_per_layer counts the tensors of full training as Korthikanti et al. 2022
(§4, Table 2) list them, generalised to GQA / gated FFNs / FlashAttention. Three things change
that count in real PyTorch stacks, each a sourced stack field (data/stacks.toml):

1. Frozen base weights (LoRA / QLoRA). PyTorch autograd saves a linear layer's input only to
   compute its weight gradient: a frozen nn.Linear whose input requires grad saves no input
   (checked with torch.autograd.graph.saved_tensors_hooks: the mm node saves `self` only when
   `mat2` requires grad). So a LoRA layer keeps only the inputs of its adapted modules (the
   LoRA-A matmul saves its input), or, with LoRA dropout p > 0, the dropout output (2 B) and its
   bool mask (1 B) per adapted module (litgpt lora.py, peft LoraLayer: lora_A(dropout(x))).
   bitsandbytes 4-bit layers (MatMul4Bit, bitsandbytes 0.42 autograd/_functions.py) keep their
   input in `ctx.tensors = (A, B)` whenever the input requires grad, so a bnb-QLoRA layer keeps
   every linear input like full training; torchao's NF4 `linear_nf4` (torchtune QLoRA) saves
   only the weight (`ctx.nf4_weight = weight`).
2. Eager fp32 RMSNorm (litgpt, transformers, torchtune in eager mode): `x.float()` and the
   normalised fp32 tensor are saved (4 B per element each) instead of one 16-bit input; the
   normalised tensor only when the norm weight is trained.
3. Eager SwiGLU `silu(gate(x)) * up(x)`: silu's input and output are both saved (+2 B × ffn);
   GQA keys/values expanded to the query heads before SDPA (`k.expand(...).reshape(...)` in
   litgpt model.py, transformers `repeat_kv`): K and V are saved at the query width.
torch.compile (AOTAutograd's min-cut rematerialisation partitioner, Ansel et al. 2024 "PyTorch 2",
§4.2) recomputes cheap pointwise ops in backward, so items 2 and 3 are off for compiled runs.
"""

from __future__ import annotations

from optimizer.model.spec import ModelSpec
from optimizer.model.stacks import StackProfile

__all__ = [
    "extra_bytes_per_token",
    "moe_routing_bytes_per_token",
    "input_groups",
    "op_sac_bytes_per_token",
    "op_sac_mm_order",
    "op_sac_recomputed_params",
]


def input_groups(model: ModelSpec) -> list[tuple[tuple[str, ...], float, bool]]:
    """(modules sharing one input, input width, inside the TP region) of one layer."""
    ffn = model.ffn * (model.moe_active if model.is_moe else 1)
    ffn_in = ("gate", "up") if model.ffn_kind == "gated" else ("up",)
    return [
        (("q", "k", "v"), model.hidden, False),
        (("o",), model.q_dim, True),
        (ffn_in, model.hidden, False),
        (("down",), ffn, True),
    ]


def _adapted(modules: tuple[str, ...], targets: tuple[str, ...], fused_qkv: bool) -> int:
    """Adapted modules with their own LoRA branch among `modules` (fused QKV: one branch)."""
    n = sum(1 for m in modules if m in targets)
    return min(n, 1) if fused_qkv and modules == ("q", "k", "v") else n


def extra_bytes_per_token(
    model: ModelSpec,
    method: str,
    targets: tuple[str, ...],
    prof: StackProfile,
    lora_dropout: float,
    compiled: bool,
    fused: bool = False,
) -> tuple[float, float]:
    """(outside-TP, inside-TP) bytes per token of one layer to add to the full-training count
    (negative when a frozen base saves less), for 16-bit activations. `fused`: norm and SwiGLU
    kernels that save their 16-bit inputs only (TrainingSetup.fused_kernels)."""
    outside = inside = 0.0
    adapter = method in ("lora", "qlora")
    if adapter:
        base_keeps = method == "qlora" and prof.qlora_saves_inputs  # bnb ctx.tensors = (A, B)
        for modules, width, in_tp in input_groups(model):
            n = _adapted(modules, targets, prof.fused_qkv_lora)
            if lora_dropout > 0:  # per adapted module: dropout output (2 B) + bool mask (1 B)
                kept = (2.0 if base_keeps else 0.0) + 3.0 * n
            else:  # the adapted modules' matmuls save the shared input itself
                kept = 2.0 if (base_keeps or n) else 0.0
            delta = (kept - 2.0) * width  # the full-training count holds 2 B of each input
            if in_tp:
                inside += delta
            else:
                outside += delta
    if not compiled:
        # Liger rms_norm.py saves (X, W, RSTD): X in its own dtype, one fp32 rstd per row
        if prof.norm_fp32_saved and model.norm == "rmsnorm" and not fused:
            # two norms: fp32 input (4 B) instead of 2 B, + fp32 normalised (4 B) if trained
            outside += 2 * model.hidden * (2.0 if adapter else 6.0)
        # Liger swiglu.py saves (a, b) and recomputes silu(a) in backward
        if prof.eager_swiglu and model.ffn_kind == "gated" and not fused:
            inside += 2.0 * model.ffn * (model.moe_active if model.is_moe else 1)
        if prof.gqa_kv_expanded and model.kv_dim < model.q_dim:
            inside += 4.0 * (model.q_dim - model.kv_dim)  # K and V at the query width
    return outside, inside


def op_sac_mm_order(model: ModelSpec) -> list[tuple[str, int, int]]:
    """(module, in, out) of a block's mms in the order they run (torchtitan Attention:
    wq, wk, wv, wo; FeedForward w2(silu(w1(x)) * w3(x)): gate, up, down)."""
    shapes = model.linear_shapes()
    order = ("q", "k", "v", "o", "gate", "up", "down")
    return [(m, *shapes[m]) for m in order if m in shapes]


def op_sac_recomputed_params(model: ModelSpec) -> int:
    """Weights per layer whose mm torchtitan's op SAC recomputes in backward (every second mm:
    k, o, up for a gated FFN): 2 FLOPs per weight per token of extra forward work. An MoE
    layer also recomputes its router gate and every active expert (_moe_op_sac: grouped mms
    are not saved)."""
    if model.is_moe:
        attn = op_sac_mm_order(model)[:4]  # q, k, v, o
        recomputed = sum(i * o for n, (_, i, o) in enumerate(attn) if n % 2 == 1)
        return recomputed + model.hidden * model.moe_experts + model.moe_active * model.mlp_params()
    return sum(i * o for n, (_, i, o) in enumerate(op_sac_mm_order(model)) if n % 2 == 1)


def op_sac_bytes_per_token(model: ModelSpec, tp: int) -> tuple[float, float]:
    """(outside-TP, inside-TP) bytes per token one layer keeps under torchtitan's selective
    per-op activation checkpointing ("op" SAC), 16-bit activations.

    torchtitan parallelize_llama.py _apply_ac_to_transformer_block: the block is checkpointed
    and MUST_SAVE the outputs of the ops in _save_list (aten.mm, SDPA flash/efficient,
    reduce_scatter_tensor), "except every second mm"; the mm counter restarts per block, so
    of q, k, v, o, gate, up, down the 1st, 3rd, 5th, 7th are kept (q, v, gate, down). The
    block input is the checkpoint's saved input. With tp > 1 the outputs of the row-parallel
    o and down projections are reduce-scattered, and those outputs are saved too. (torchtitan
    2025 adds forced recompute of chosen mm shapes, the MoE router; dense layers unchanged.)
    MoE layers: the experts run torch._grouped_mm, which no torchtitan save list names
    (models/qwen3/infra/parallelize.py _op_sac_save_list: aten.mm, SDPA, reduce_scatter, max;
    its graph_trainer adds _grouped_mm only for a "fair baseline comparison"), and the router
    gate mm is force-recomputed by default (per_op_sac_force_recompute_mm_shapes_by_fqns =
    ["moe.router.gate"]): an MoE block keeps q, v and the SDPA output, its experts are recomputed.
    """
    order = op_sac_mm_order(model)[:4] if model.is_moe else op_sac_mm_order(model)
    kept_mm = sum(o for n, (_, _, o) in enumerate(order) if n % 2 == 0)
    inside = 2.0 * (kept_mm + model.q_dim)  # + the SDPA output
    outside = 2.0 * model.hidden  # the checkpointed block input
    if tp > 1:
        outside += 2.0 * 2 * model.hidden  # reduce-scatter outputs of o and down
    return outside, inside


def moe_routing_bytes_per_token(model: ModelSpec) -> float:
    """Bytes one MoE layer keeps per token for its routing, beyond the experts' FFN tensors:
    the k permuted copies of the token that feed the first expert GEMM (Megatron-Core
    moe_utils.permute: tokens.index_select by the sorted routing map) and the k expert
    outputs the probability-weighted combine saves for the gradient of the router
    probabilities (moe_utils.unpermute: permuted_tokens * probs), 2 B each; the router's fp32
    logits and softmax scores, E values of 4 B each (Megatron-Core router.py computes routing
    in fp32). Not divided by tensor parallelism: with TP the dispatcher gathers the tokens of
    the TP group before the experts (token_dispatcher.py, 2024)."""
    return 2.0 * 2 * model.hidden * model.moe_active + 2 * 4.0 * model.moe_experts
