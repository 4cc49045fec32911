"""FLOP counts of training and inference, from the model shape.

Narayanan et al. 2021 ("Efficient Large-Scale Language Model Training on GPU Clusters", §5.1,
eq. 3) for GPT: F = 96·B·s·l·h²·(1 + s/6h + V/16lh) per iteration with full recompute; the
generic form used here counts 2 FLOPs per multiply-add of every matmul: per token and layer
2·N_matmul + 4·s·(heads·head_dim) for attention scores and the weighted sum (full s×s, as in the
paper), and 2·V·h for the LM head. Training = forward + backward (2× forward) = 3× forward.
"""

from __future__ import annotations

from optimizer.model.activations import op_sac_recomputed_params
from optimizer.model.memory import lora_params
from optimizer.model.setup import TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.stacks import get_stack

__all__ = [
    "forward_flops_per_token",
    "training_flops_per_token",
    "model_flops_per_token",
    "attention_flops_per_token_layer",
]


def attention_flops_per_token_layer(model: ModelSpec, seq_len: int) -> float:
    """Q·Kᵀ and softmax·V for one token in one layer: 2·2·s·(a·d) (Narayanan 2021 §5.1)."""
    return 4.0 * seq_len * model.q_dim


def forward_flops_per_token(model: ModelSpec, seq_len: int) -> tuple[float, float, float]:
    """(layer matmuls, attention, LM head) forward FLOPs per token; MoE counts active experts."""
    layers = model.layers * 2.0 * model.layer_matmul_params(active_only=True)
    attention = model.layers * attention_flops_per_token_layer(model, seq_len)
    head = 2.0 * model.logits_width * model.hidden  # a task head: no vocabulary projection
    return layers, attention, head


def model_flops_per_token(model: ModelSpec, setup: TrainingSetup) -> float:
    """Model FLOPs per trained token (no recompute): the numerator of MFU (Chowdhery et al. 2022).

    A per-sample profile's FLOPs are its step model's (profile_time.ProfileStepModel)."""
    layers, attention, head = forward_flops_per_token(model, setup.seq_len)
    if setup.is_adapter:
        # frozen base: forward (2N) + input-gradient backward (2N) = 2× forward; adapters 6·N_a
        n_adapter = lora_params(model, setup.lora_rank, setup.lora_targets)
        return 2.0 * (layers + attention + head) + 6.0 * n_adapter
    return 3.0 * (layers + attention + head)


def training_flops_per_token(model: ModelSpec, setup: TrainingSetup, checkpointing: str) -> float:
    """Hardware FLOPs per token including recompute (the numerator of HFU).

    Full checkpointing recomputes the forward of every layer (+1× forward of the layers,
    Narayanan eq. 3: 96 instead of 72); selective recomputes only the attention core
    (Korthikanti et al. 2022 §5).
    """
    layers, attention, head = forward_flops_per_token(model, setup.seq_len)
    flops = model_flops_per_token(model, setup)
    if checkpointing == "full":
        flops += layers + attention
    elif checkpointing == "selective" and get_stack(setup.stack).selective_ac == "block":
        # a fraction of whole blocks recomputed (fms-fsdp ac_handler.py, stacks.toml)
        flops += get_stack(setup.stack).selective_blocks * (layers + attention)
    elif checkpointing == "selective" and get_stack(setup.stack).selective_ac == "op":
        # torchtitan op SAC recomputes every second mm of each block (activations.py)
        flops += 2.0 * op_sac_recomputed_params(model) * model.layers
    elif checkpointing == "selective" and setup.recompute_modules:
        flops += recomputed_module_flops(model, setup, attention)
    elif checkpointing == "selective" and setup.attention == "eager":
        flops += attention
    elif checkpointing == "selective":
        flops += 0.0  # FlashAttention already recomputes the scores in its backward pass
    return flops


def recomputed_module_flops(model: ModelSpec, setup: TrainingSetup, attention: float) -> float:
    """Forward FLOPs per token that Megatron-Core's selective recompute of
    setup.recompute_modules repeats: the MoE layers' expert GEMMs ("moe": 2 FLOPs per weight of
    the k routed experts; Narayanan et al. 2021 eq. 2's 2·params per token) or the dense FFN's
    ("mlp"), the attention core with an eager kernel ("core_attn"; FlashAttention recomputes
    its scores anyway); norms and activation functions are element-wise (not counted)."""
    modules, flops = setup.recompute_modules, 0.0
    if model.is_moe and "moe" in modules:
        flops += 2.0 * model.moe_active * model.mlp_params() * model.layers
    if not model.is_moe and "mlp" in modules:
        flops += 2.0 * model.mlp_params() * model.layers
    if "core_attn" in modules and setup.attention == "eager":
        flops += attention
    return flops
