"""The layout rulebook: which ways of splitting a model over GPUs are valid, and the one list of
degrees the planners search. `estimate` (api/) and the planners' search (solve/) both ask it.

Rules (each a structural fact of Megatron-style parallelism, Narayanan et al. 2021 §2):
- tensor parallelism splits attention heads, so tp divides the query and the KV heads, and stays
  inside one instance (it needs the intra-node link);
- pipeline stages hold whole layers: pp ≤ layers; interleaved virtual stages need pp > 1 and
  pp × vp dividing the layers (§2.2.2);
- TP groups tile an instance: tp divides its GPUs (a group never straddles two instances, and
  serving replicas of tp GPUs fill the instance);
- the GPUs are dp × tp × pp × cp (cp: context parallelism splits the sequence);
- ZeRO stages 0-3; parameter offload shards parameters, so it needs stage 3;
- the software stack runs only what it implements (data/stacks.toml tensor_parallel,
  pipeline_parallel, context_parallel, zero_stages, pipeline_zero_stages): llm-foundry has no
  pipelines, Megatron-LM no ZeRO-2, DeepSpeed's PipelineEngine and Megatron-LM no ZeRO ≥ 2
  with pipeline stages, ... Every function below takes the stack (None: unrestricted).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from optimizer.model.setup import Layout
from optimizer.model.stacks import StackProfile

__all__ = [
    "TP_DEGREES",
    "PIPELINE_DEGREES",
    "ZERO_STAGES",
    "planned_layout",
    "Shape",
    "BatchRule",
    "Split",
    "LayoutProblem",
    "parallel_problems",
    "grad_accum_of",
    "stack_zero_stages",
    "stack_checkpointing",
    "pipeline_zero_stages",
    "tensor_degrees",
    "pipeline_degrees",
    "split_sizes",
    "splits",
    "training_layouts",
]

#: tensor-parallel degrees searched by every planner (within one instance: they must also
#: divide its GPUs and the heads)
TP_DEGREES: tuple[int, ...] = (1, 2, 4, 8, 16)
#: pipeline-parallel degrees searched (also ≤ the model's layers)
PIPELINE_DEGREES: tuple[int, ...] = (1, 2, 4, 8, 16)
#: ZeRO stages (3 = FSDP full sharding)
ZERO_STAGES: tuple[int, ...] = (0, 1, 2, 3)


class Shape(Protocol):
    """What the rules read of a model (ModelSpec and SampleProfile both have it)."""

    @property
    def name(self) -> str: ...
    @property
    def layers(self) -> int: ...
    @property
    def heads(self) -> int: ...
    @property
    def n_kv_heads(self) -> int: ...


@dataclass(frozen=True)
class BatchRule:
    """Global batch (sequences) and the allowed relative deviation."""

    sequences: int
    tolerance: float = 0.0

    def grad_accum(self, dp: int, micro_batch: int) -> int | None:
        """Gradient accumulation that realises the batch within tolerance, or None."""
        if self.tolerance == 0:
            return grad_accum_of(self.sequences, dp, micro_batch)
        per_step = dp * micro_batch
        ga = max(1, round(self.sequences / per_step))
        if abs(ga * per_step - self.sequences) <= self.tolerance * self.sequences:
            return ga
        return None


@dataclass(frozen=True)
class Split:
    """The GPUs of a job as data × tensor × pipeline parallel groups: dp × tp × pp (cp = 1)."""

    tp: int
    pp: int
    dp: int

    @property
    def gpus(self) -> int:
        return self.dp * self.tp * self.pp


@dataclass(frozen=True)
class LayoutProblem:
    """Why a layout is invalid: the configuration field it concerns and the reason in words."""

    field: str  # a ConfigRequest field name: "tp", "pp", "context_parallel", ...
    message: str


def parallel_problems(
    spec: Shape,
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
    stack: StackProfile | None = None,
) -> list[LayoutProblem]:
    """Every rule the split (tp, pp, cp, vp, ZeRO) of `num_gpus` GPUs breaks; empty when valid.

    `whole_instances`: training runs on whole instances (num_gpus a multiple of the GPUs per
    instance); serving replicas need not. `stack`: the training stack, whose missing
    parallelisms and ZeRO stages are problems too (None: unrestricted).
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
    elif gpus_per_instance % tp:
        out.append(
            LayoutProblem(
                "tp",
                f"{tp} must divide the GPUs per instance ({gpus_per_instance}); "
                f"a TP group never straddles two instances",
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
    if stack is not None:  # after the structural rules: a stack cannot run an invalid layout either
        out += _stack_problems(stack, tp, pp, cp, zero_stage, num_gpus // max(1, tp * pp * cp))
    return out


def _stack_problems(
    stack: StackProfile, tp: int, pp: int, cp: int, zero: int, dp: int
) -> list[LayoutProblem]:
    out = []
    for name, degree, ok, field in (
        ("tensor", tp, stack.tensor_parallel, "tp"),
        ("pipeline", pp, stack.pipeline_parallel, "pp"),
        ("context", cp, stack.context_parallel, "context_parallel"),
    ):
        if degree > 1 and not ok:
            out.append(
                LayoutProblem(field, f"{degree}: stack {stack.name} runs no {name} parallelism; allowed: 1")
            )
    # with one data-parallel replica there is nothing to shard: every stage runs as stage 0
    if dp > 1 and pp > 1 and zero in stack.zero_stages and zero not in stack.pipeline_zero_stages:
        out.append(
            LayoutProblem(
                "zero_stage",
                f"{zero}: stack {stack.name} runs pipeline stages (pp {pp}) with ZeRO "
                + ", ".join(map(str, pipeline_zero_stages(stack)))
                + f" only; allowed: pp 1 with ZeRO-{zero}, or pp {pp} with ZeRO-"
                + str(max(pipeline_zero_stages(stack), default=0)),
            )
        )
    if stack.splits_need_fsdp and cp == 1 and _split_without_fsdp(tp, pp, dp, zero):
        out.append(
            LayoutProblem(
                "zero_stage",
                f"{zero}: stack {stack.name} splits tp {tp} × pp {pp} only under FSDP; allowed: "
                "ZeRO-2/3 over 2 or more data-parallel ranks, or tp = pp = 1",
            )
        )
    if dp > 1 and zero in ZERO_STAGES and zero not in stack.zero_stages:
        out.append(
            LayoutProblem(
                "zero_stage",
                f"{zero}: stack {stack.name} does not run ZeRO-{zero}; allowed: "
                + ", ".join(map(str, stack.zero_stages)),
            )
        )
    return out


def stack_zero_stages(stack: StackProfile | None, wanted: Iterable[int]) -> tuple[int, ...]:
    """The stages of `wanted` (a job's constraints.zero_stages) the stack can run."""
    return tuple(z for z in wanted if stack is None or z in stack.zero_stages)


def stack_checkpointing(stack: StackProfile | None, wanted: Iterable[str]) -> tuple[str, ...]:
    """The checkpointing levels of `wanted` (a job's constraints.activation_checkpointing) the
    stack runs; all of `wanted` when it runs none of them (the job's own choice stands)."""
    wanted = tuple(wanted)
    runnable = tuple(c for c in wanted if stack is None or c in stack.checkpointing_modes)
    return runnable or wanted


def _split_without_fsdp(tp: int, pp: int, dp: int, zero: int) -> bool:
    """Tensors or layers split (tp or pp > 1) without FSDP (ZeRO-2/3 over 2+ data-parallel
    ranks): what a stack with splits_need_fsdp refuses (torchtitan)."""
    return (tp > 1 or pp > 1) and (dp == 1 or zero < 2)


def pipeline_zero_stages(stack: StackProfile | None, wanted: Iterable[int] = ZERO_STAGES) -> tuple[int, ...]:
    """The stages of `wanted` the stack runs together with pipeline stages (pp > 1): its
    zero_stages ∩ pipeline_zero_stages (DeepSpeed's PipelineEngine and Megatron-LM: ZeRO ≤ 1)."""
    runnable = stack_zero_stages(stack, wanted)
    return runnable if stack is None else tuple(z for z in runnable if z in stack.pipeline_zero_stages)


def _split_kinds(stack: StackProfile | None) -> tuple[bool, bool]:
    """(tensor, pipeline) parallelism allowed by the stack."""
    return (True, True) if stack is None else (stack.tensor_parallel, stack.pipeline_parallel)


def grad_accum_of(global_batch: int, dp: int, micro_batch: int) -> int | None:
    """Gradient accumulation steps that make `global_batch` from dp × micro-batch, or None when
    it is not a multiple."""
    per_step = dp * micro_batch
    return None if global_batch % per_step else global_batch // per_step


# ---- generators: every split the rules above allow, searched in the degree lists' order ----
# They test the same rules inline (cached, on the planners' hot path); tests/model/test_layout.py
# checks that each generated layout passes parallel_problems and that none it accepts is missed.


def tensor_degrees(
    spec: Shape, gpus_per_instance: int, allowed: Iterable[int] | None = None
) -> tuple[int, ...]:
    """The TP degrees of `allowed` (default TP_DEGREES) that pass the rules: they divide the
    GPUs per instance, the heads and the KV heads."""
    pool = TP_DEGREES if allowed is None else tuple(allowed)
    return _tensor_degrees(spec.heads, spec.n_kv_heads, gpus_per_instance, pool)


@lru_cache(maxsize=1024)
def _tensor_degrees(
    heads: int, kv_heads: int, gpus_per_instance: int, pool: tuple[int, ...]
) -> tuple[int, ...]:
    return tuple(t for t in pool if gpus_per_instance % t == 0 and heads % t == 0 and kv_heads % t == 0)


def pipeline_degrees(spec: Shape | None) -> tuple[int, ...]:
    """The pipeline degrees of PIPELINE_DEGREES a model's layers allow (all of them without one)."""
    return PIPELINE_DEGREES if spec is None else tuple(p for p in PIPELINE_DEGREES if p <= spec.layers)


def split_sizes(
    spec: Shape | None, gpus_per_instance: int, stack: StackProfile | None = None
) -> tuple[int, ...]:
    """The GPUs tp × pp of one model replica, over every degree the rules (and the stack)
    allow (without a model: every degree that tiles the instance)."""
    tensor, pipeline = _split_kinds(stack)
    tps = (
        tensor_degrees(spec, gpus_per_instance)
        if spec is not None
        else tuple(t for t in TP_DEGREES if gpus_per_instance % t == 0)
    )
    tps = tps if tensor else (1,)
    pps = pipeline_degrees(spec) if pipeline else (1,)
    return tuple(sorted({t * p for t in tps for p in pps}))


def splits(
    spec: Shape, num_gpus: int, gpus_per_instance: int, vp: int = 1, stack: StackProfile | None = None
) -> tuple[Split, ...]:
    """Every (tp, pp, dp) of `num_gpus` GPUs the rules and the stack allow (cp = 1), tp then pp
    ascending; with `vp` > 1 only pipelines whose stages split into vp chunks (interleaved 1F1B)."""
    return _splits(
        spec.heads, spec.n_kv_heads, spec.layers, num_gpus, gpus_per_instance, vp, _split_kinds(stack)
    )


@lru_cache(maxsize=4096)
def _splits(
    heads: int,
    kv_heads: int,
    layers: int,
    num_gpus: int,
    gpus_per_instance: int,
    vp: int,
    kinds: tuple[bool, bool] = (True, True),
) -> tuple[Split, ...]:
    if num_gpus % gpus_per_instance:
        return ()
    out = []
    tensor, pipeline = kinds
    for tp in _tensor_degrees(heads, kv_heads, gpus_per_instance, TP_DEGREES if tensor else (1,)):
        for pp in PIPELINE_DEGREES if pipeline else (1,):
            if pp > layers or num_gpus % (tp * pp):
                continue
            if vp > 1 and (pp == 1 or layers % (pp * vp)):
                continue
            out.append(Split(tp, pp, num_gpus // (tp * pp)))
    return tuple(out)


def training_layouts(
    spec: Shape,
    num_gpus: int,
    gpus_per_instance: int,
    batch: BatchRule,
    zero_stages: Sequence[int],
    micro_batches: Sequence[int],
    vp: int = 1,
    stack: StackProfile | None = None,
) -> tuple[Layout, ...]:
    """Every layout of `num_gpus` GPUs (checkpointing "none") the rules and the stack allow
    that realises `batch`: splits × `micro_batches` (in their order) × the `zero_stages` the
    stack runs; with dp = 1 there is nothing to shard, so only ZeRO stage 0. Cached: the
    planner asks again per offering."""
    return _training_layouts(
        spec.heads,
        spec.n_kv_heads,
        spec.layers,
        num_gpus,
        gpus_per_instance,
        batch,
        stack_zero_stages(stack, zero_stages),
        tuple(micro_batches),
        vp,
        _split_kinds(stack),
        pipeline_zero_stages(stack, zero_stages),
        stack is not None and stack.splits_need_fsdp,
    )


@lru_cache(maxsize=4096)
def _training_layouts(
    heads: int,
    kv_heads: int,
    layers: int,
    num_gpus: int,
    gpus_per_instance: int,
    batch: BatchRule,
    zero_stages: tuple[int, ...],
    micro_batches: tuple[int, ...],
    vp: int,
    kinds: tuple[bool, bool],
    pipeline_zeros: tuple[int, ...] = ZERO_STAGES,
    splits_need_fsdp: bool = False,
) -> tuple[Layout, ...]:
    out = []
    for s in _splits(heads, kv_heads, layers, num_gpus, gpus_per_instance, vp, kinds):
        for mb in micro_batches:
            ga = batch.grad_accum(s.dp, mb)
            if ga is None:
                continue
            for zero in (0,) if s.dp == 1 else zero_stages:
                if s.pp > 1 and s.dp > 1 and zero not in pipeline_zeros:
                    continue  # the stack's launcher refuses this ZeRO stage with pipelines
                if splits_need_fsdp and _split_without_fsdp(s.tp, s.pp, s.dp, zero):
                    continue  # the stack splits tensors or layers only under FSDP
                out.append(planned_layout(s.dp, s.tp, s.pp, zero, mb, ga, vp))
    return tuple(out)


def planned_layout(
    dp: int, tp: int, pp: int, zero_stage: int, micro_batch: int, grad_accum: int, vp: int
) -> Layout:
    """Layout(dp=dp, tp=tp, pp=pp, zero_stage=zero_stage, micro_batch=micro_batch,
    grad_accum=grad_accum, vp=vp) with checkpointing "none" and cp = 1."""
    return Layout(
        dp=dp,
        tp=tp,
        pp=pp,
        zero_stage=zero_stage,
        checkpointing="none",
        micro_batch=micro_batch,
        grad_accum=grad_accum,
        cp=1,
        vp=vp,
    )
