"""The layout rulebook: which ways of splitting a model over GPUs are valid, and the one list of
degrees the planners search. `estimate` (api/) and the planners' search (solve/) both ask it.

Rules (each a structural fact of Megatron-style parallelism, Narayanan et al. 2021 §2):
- tensor parallelism splits attention heads, so tp divides the query and the KV heads, and stays
  inside one instance (it needs the intra-node link);
- pipeline stages hold whole layers: pp ≤ layers; interleaved virtual stages need pp > 1 and
  pp × vp dividing the layers (§2.2.2);
- the GPUs are dp × tp × pp × cp (cp: context parallelism splits the sequence);
- ZeRO stages 0-3; parameter offload shards parameters, so it needs stage 3.
"""

from __future__ import annotations

from dataclasses import dataclass

from optimizer.model.spec import ModelSpec

__all__ = [
    "TP_DEGREES",
    "PIPELINE_DEGREES",
    "ZERO_STAGES",
    "LayoutProblem",
    "parallel_problems",
    "grad_accum_of",
]

#: tensor-parallel degrees searched by every planner (within one instance: they must also
#: divide its GPUs and the heads)
TP_DEGREES: tuple[int, ...] = (1, 2, 4, 8, 16)
#: pipeline-parallel degrees searched (also ≤ the model's layers)
PIPELINE_DEGREES: tuple[int, ...] = (1, 2, 4, 8, 16)
#: ZeRO stages (3 = FSDP full sharding)
ZERO_STAGES: tuple[int, ...] = (0, 1, 2, 3)


@dataclass(frozen=True)
class LayoutProblem:
    """Why a layout is invalid: the configuration field it concerns and the reason in words."""

    field: str  # a ConfigRequest field name: "tp", "pp", "context_parallel", ...
    message: str


def parallel_problems(
    spec: ModelSpec,
    *,
    num_gpus: int,
    gpus_per_instance: int,
    tp: int = 1,
    pp: int = 1,
    cp: int = 1,
    vp: int = 1,
    zero_stage: int = 0,
    offload_params: bool = False,
    whole_instances: bool = True,
) -> list[LayoutProblem]:
    """Every rule the split (tp, pp, cp, vp, ZeRO) of `num_gpus` GPUs breaks; empty when valid.

    `whole_instances`: training runs on whole instances (num_gpus a multiple of the GPUs per
    instance); serving replicas need not.
    """
    out: list[LayoutProblem] = []
    if spec.heads % tp or spec.n_kv_heads % tp:
        out.append(
            LayoutProblem(
                "tp",
                f"{tp} must divide the attention heads ({spec.heads}) and "
                f"KV heads ({spec.n_kv_heads}) of {spec.name}",
            )
        )
    if tp > gpus_per_instance:
        out.append(
            LayoutProblem(
                "tp", f"{tp} exceeds the GPUs per instance ({gpus_per_instance}); TP stays within an instance"
            )
        )
    if whole_instances and num_gpus % gpus_per_instance:
        out.append(
            LayoutProblem(
                "num_gpus", f"{num_gpus} must be a multiple of the GPUs per instance ({gpus_per_instance})"
            )
        )
    if zero_stage not in ZERO_STAGES:
        out.append(
            LayoutProblem(
                "zero_stage", f"{zero_stage} is not allowed; allowed: {', '.join(map(str, ZERO_STAGES))}"
            )
        )
    if offload_params and zero_stage < 3:
        out.append(
            LayoutProblem("offload_params", "needs --zero-stage 3 (parameters are offloaded per shard)")
        )
    if num_gpus % (tp * pp * cp):
        out.append(
            LayoutProblem("num_gpus", f"{num_gpus} must be a multiple of tp × pp × cp = {tp * pp * cp}")
        )
    if pp > spec.layers:
        out.append(LayoutProblem("pp", f"{pp} exceeds the {spec.layers} layers of {spec.name}"))
    if vp > 1 and (pp == 1 or spec.layers % (pp * vp)):
        out.append(
            LayoutProblem(
                "virtual_stages", f"{vp} needs --pp > 1 and pp × vp dividing the {spec.layers} layers"
            )
        )
    return out


def grad_accum_of(global_batch: int, dp: int, micro_batch: int) -> int | None:
    """Gradient accumulation steps that make `global_batch` from dp × micro-batch, or None when
    it is not a multiple."""
    per_step = dp * micro_batch
    return None if global_batch % per_step else global_batch // per_step
