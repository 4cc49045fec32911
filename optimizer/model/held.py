"""Parameters one GPU holds of a layout: its pipeline stage over tensor parallelism, its share
of the experts under expert parallelism, and LoRA adapters (memory.py and step_model.py)."""

from __future__ import annotations

import math

from optimizer.model.setup import Layout
from optimizer.model.spec import ModelSpec

__all__ = ["params_per_gpu", "expert_params", "sharded_params", "lora_params"]


def params_per_gpu(model: ModelSpec, layout: Layout) -> float:
    """Parameters held by the busiest GPU before ZeRO sharding: its pipeline stage / tp.

    Layers are split evenly over pp stages (ceil); the first stage holds the embedding, the last
    the LM head and final norm; with pp = 1 one GPU holds all (Narayanan et al. 2021, §2.2).
    """
    pp, tp = layout.pp, layout.tp
    layers_per_stage = math.ceil(model.layers / pp)
    # expert parallelism: each GPU holds 1/ep of every MoE layer's experts, each split over
    # expert_tp GPUs (Megatron-Core MoE: --expert-model-parallel-size, --expert-tensor-parallel-size)
    experts = expert_params(model)
    layer_part = layers_per_stage * (
        model.layer_params() - experts + experts * tp / (layout.ep * layout.expert_tp)
    )
    if pp == 1:
        stage = (
            layer_part
            + model.embedding_params()
            + model.head_params()
            + model.norm_params()
            + model.extra_params
        )
    else:
        head = model.head_params() or model.logits_width * model.hidden  # tied: last stage keeps a copy
        stage = layer_part + max(model.embedding_params(), head + model.norm_params())
    return stage / tp


def expert_params(model: ModelSpec) -> int:
    """Parameters of one layer's experts (0 for a dense model)."""
    return model.moe_experts * model.mlp_params() if model.is_moe else 0


def sharded_params(model: ModelSpec, layout: Layout) -> float:
    """params_per_gpu counted as ZeRO shards them over dp × cp: the dense part over the whole
    group, the experts (1/(ep·etp) of them held) over the expert-data-parallel group of
    dp·cp·tp/(ep·etp) GPUs (Megatron-Core distributed optimizer: expert parameters use their
    own data-parallel group): the held dense part + the stage's experts / tp, over dp · cp."""
    held = params_per_gpu(model, layout)
    if layout.ep <= 1 and layout.expert_tp == layout.tp:
        return held
    stage_experts = math.ceil(model.layers / layout.pp) * expert_params(model)
    return held - stage_experts / (layout.ep * layout.expert_tp) + stage_experts / layout.tp


def lora_params(model: ModelSpec, rank: int, targets: tuple[str, ...]) -> int:
    """Trainable LoRA parameters: r·(d_in + d_out) per targeted linear (Hu et al. 2021, §4.1)."""
    shapes = model.linear_shapes()
    per_layer = sum(rank * (shapes[t][0] + shapes[t][1]) for t in targets if t in shapes)
    if model.is_moe:
        ffn = sum(
            rank * (shapes[t][0] + shapes[t][1])
            for t in targets
            if t in ("gate", "up", "down") and t in shapes
        )
        per_layer += ffn * (model.moe_experts - 1)
    return model.layers * per_layer
