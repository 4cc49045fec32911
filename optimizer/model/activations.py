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

import math
from dataclasses import replace

from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.stacks import Knobs, StackProfile, knobs

_DEFAULT_ASSUMPTIONS = PerfAssumptions()

__all__ = [
    "activation_bytes_per_layer",
    "kept_kv_bytes",
    "recomputed_module_bytes",
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
    in fp32). Per token the dispatcher holds: with sequence parallelism it gathers the tokens of
    the expert-tensor-parallel group (the TP group when etp = tp: token_dispatcher.py, 2024),
    so the caller scales s·b by etp / tp (memory.activation_bytes_per_layer)."""
    return 2.0 * 2 * model.hidden * model.moe_active + 2 * 4.0 * model.moe_experts


def recomputed_module_bytes(
    model: ModelSpec, modules: tuple[str, ...], ffn_acts: float, routed: float
) -> tuple[float, float, float]:
    """What Megatron-Core's selective recompute of `modules` leaves of one layer's saved
    tensors (transformer_config.py recompute_modules; moe/README "fine-grained recomputation"):
    (bytes per token·hidden no longer kept outside TP, FFN activations kept, routing kept).

    "layernorm" discards both norms' outputs (the QKV input and, unless "moe" checkpoints it as
    the MoE layer's input, the FFN input: 2 B each); "moe" checkpoints the MoE layer, keeping
    only its input (the experts' tensors and the routing buffers are recomputed); "mlp" the
    same for a dense FFN; "moe_act" discards the experts' activation output (act(gate)·up of a
    gated FFN, the GeLU output of a plain one); "core_attn" is what selective means without a
    list (no s×s scores kept). MLA and shared experts are not in this model: no change."""
    dropped = 0.0
    if "layernorm" in modules:
        dropped += 2.0 if model.is_moe and "moe" in modules else 4.0
    if model.is_moe and "moe" in modules:
        return dropped, 0.0, 0.0
    if not model.is_moe and "mlp" in modules:
        return dropped, 0.0, routed
    if model.is_moe and "moe_act" in modules:
        ffn_acts *= 2 / 3 if model.ffn_kind == "gated" else 1 / 2
    return dropped, ffn_acts, routed


def activation_bytes_per_layer(
    model: ModelSpec, setup: TrainingSetup, layout: Layout, k: Knobs | None = None
) -> float:
    """Activation bytes one layer keeps for backward, for one micro-batch.

    Korthikanti et al. 2022 §4 (Table 2): without recompute s·b·h·(34 + 5·a·s/h); with TP
    and sequence parallelism everything divides by t; without SP 10·sbh stays replicated;
    selective recompute drops the 5·a·s²·b attention-score term; full recompute keeps only
    the layer input 2·s·b·h. Generalised here to GQA (smaller K, V), gated FFNs (ffn width
    instead of 4h), no dropout (no masks) and FlashAttention (no s×s scores stored).
    """
    k = k or knobs(setup, _DEFAULT_ASSUMPTIONS)  # `k`: the caller's (the same stack switches)
    if layout.checkpointing == "selective" and k.stack.selective_ac == "block":
        # whole blocks checkpointed, a fraction p of them (fms-fsdp ac_handler.py: "p = 1:
        # apply ac on every block, i.e. full ac"): per layer on average p·full + (1 − p)·none
        p = k.stack.selective_blocks
        return p * activation_bytes_per_layer(model, setup, replace(layout, checkpointing="full"), k) + (
            1 - p
        ) * activation_bytes_per_layer(model, setup, replace(layout, checkpointing="none"), k)
    # context parallelism: each GPU keeps the activations of s/cp tokens (Megatron-Core CP docs)
    s, b, h, t = setup.seq_len / layout.cp, layout.micro_batch, model.hidden, layout.tp
    sp = k.sequence_parallel and t > 1
    # the paper's byte counts assume 16-bit activations; fp32 training stores twice as much
    # (fp8 training still keeps most saved activations in 16 bit)
    scale = 2.0 if setup.precision == "fp32" else 1.0
    if layout.checkpointing == "full":
        # torch.autocast over fp32 parameters (stated by the run): the embedding output and
        # the residual adds stay fp32 (torch type promotion of fp32 + bf16), so each saved
        # layer input is 4 B per value (DLRover ATorch bf16_amp, HF LlamaDecoderLayer)
        residual = 2.0 if setup.autocast_weights and setup.precision in ("bf16", "fp16") else 1.0
        return scale * residual * 2 * s * b * h / (t if sp else 1)
    if layout.checkpointing == "selective" and k.stack.selective_ac == "op":
        outside, inside = op_sac_bytes_per_token(model, t)
        return scale * s * b * (outside / (t if sp else 1) + inside / t)
    kv_ratio = model.kv_dim / model.hidden
    q_ratio = model.q_dim / model.hidden
    mask = 1.0 if setup.dropout else 0.0
    # replicated (outside the TP region): 2 norm inputs, QKV input, FFN input, dropout masks
    replicated = s * b * h * (2 + 2 + 2 + 2 + 2 * mask)
    # split over tp: Q, K, V, attention output (input of O), FFN internals
    if model.ffn_kind == "gated":
        ffn_acts = 3 * 2 * s * b * model.ffn  # gate, up, act(gate)·up
    else:
        ffn_acts = 2 * 2 * s * b * model.ffn  # GeLU input and output
    routed = 0.0
    if model.is_moe:
        ffn_acts *= model.moe_active  # each token's k expert FFNs
        # the dispatcher gathers the tokens of the expert-tensor-parallel group (sequence
        # parallel: s/t per GPU, times etp; Megatron-Core token_dispatcher.py), the TP group's
        # all of them when etp = tp (its default)
        gathered = layout.expert_tp / t if sp else 1.0
        routed = s * b * moe_routing_bytes_per_token(model) * gathered
    if layout.checkpointing == "selective" and setup.recompute_modules:
        dropped, ffn_acts, routed = recomputed_module_bytes(model, setup.recompute_modules, ffn_acts, routed)
        replicated -= s * b * h * dropped
    split = s * b * h * (2 * q_ratio + 4 * kv_ratio + 2 * q_ratio) + ffn_acts
    scores = 0.0
    if k.attention == "eager" and layout.checkpointing == "none":
        # softmax output 2·a·s²·b, plus dropout mask a·s²·b and dropout output 2·a·s²·b
        # (with cp each GPU holds its s/cp queries against all s keys)
        scores = model.heads * s * setup.seq_len * b * (2 + 3 * mask)
    # what PyTorch stacks save beyond this count: frozen bases, eager norms/SwiGLU, GQA expansion
    dropout_p = k.stack.lora_dropout if setup.lora_dropout is None else setup.lora_dropout
    extra_out, extra_in = extra_bytes_per_token(
        model, setup.method, setup.lora_targets, k.stack, dropout_p, setup.compile, setup.fused_kernels
    )
    replicated += s * b * extra_out
    split += s * b * extra_in
    if setup.precision == "fp8" and k.stack.fp8_saved_inputs:
        # Transformer Engine fp8 GEMMs save their fp8-cast input for the wgrad GEMM (TE
        # module/linear.py, layernorm_linear.py, layernorm_mlp.py: saved inputmat / ln_out /
        # gelu_out are the fp8 tensors): QKV and FC1 inputs and the FC2 input (activation
        # output) at 1 B instead of 2; the attention output is kept in bf16 by the attention
        # backward and once more in fp8 by the output projection (+1 B)
        ffn = model.ffn * (model.moe_active if model.is_moe else 1)
        replicated -= s * b * h * 2
        split += s * b * (model.q_dim - ffn)
    if sp:
        return scale * ((replicated + split + scores) / t + routed)
    return scale * (replicated + split / t + scores / t + routed)


def kept_kv_bytes(model: ModelSpec, setup: TrainingSetup, layout: Layout) -> float:
    """K and V of every layer of a stage that a Hugging Face model run with use_cache=True keeps
    in its outputs through backward (setup.kv_cache_kept; 0 otherwise): transformers 4.31
    LlamaModel.forward "next_decoder_cache += (layer_outputs[...],)" of each layer's
    past_key_value = (key_states, value_states), 16-bit, s/cp × b tokens, kv heads split over tp."""
    if not setup.kv_cache_kept:
        return 0.0
    layers = math.ceil(model.layers / layout.pp)
    tokens = setup.seq_len / layout.cp * layout.micro_batch
    return layers * 2 * tokens * model.kv_dim * 2.0 / layout.tp
