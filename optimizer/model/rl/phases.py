"""The phases of one RL step on a pool of GPUs: rollout generation, forward-only log-probs,
the policy (and critic) update, and the trainer → generator weight sync.

Generation reuses the serving model (optimizer/model/serving.py: prefill, decode, KV cache,
continuous batching); the update reuses the training step and memory models
(optimizer/model/step_model.py, memory.py) on FSDP / ZeRO-3 data-parallel layouts, verl's
default actor backend (verl docs "FSDP workers"); Megatron TP/PP layouts are not searched.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from optimizer.model.cluster import Cluster
from optimizer.model.hardware import GpuSpec
from optimizer.model.layout import TP_DEGREES, BatchRule, training_layouts
from optimizer.model.memory import memory_model_for
from optimizer.model.rl.setup import RlAssumptions, RlSetup
from optimizer.model.serving import serving_max_batch, serving_perf
from optimizer.model.setup import Layout, PerfAssumptions, ServeSetup, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.stacks import get_stack
from optimizer.model.step_model import step_model_for
from optimizer.units import GB

__all__ = [
    "Generation",
    "Update",
    "generation_phase",
    "update_phase",
    "sync_s",
    "TP_CHOICES",
    "MICRO_BATCHES",
    "TRAIN_STACK",
    "train_precision",
    "GEN_STACK",
]

#: tensor-parallel degrees a rollout replica may use (vLLM tensor_parallel_size): the one
#: list of degrees (model/layout.py), within a node (the loop skips degrees above its GPUs)
TP_CHOICES = TP_DEGREES
#: micro-batches per GPU tried for the update (verl ppo_micro_batch_size_per_gpu)
MICRO_BATCHES = (1, 2, 4, 8)
#: the stack profiles the phases are timed with (optimizer/model/data/stacks.toml)
TRAIN_STACK = "fsdp"
GEN_STACK = "vllm"


@dataclass(frozen=True)
class Generation:
    """Rollout generation of one step on a pool: seconds, replicas and their batch."""

    time_s: float
    tp: int
    replicas: int
    batch: int  # concurrent sequences per replica
    bulk_s: float  # the batch decoding at `batch` until the queue drains
    tail_s: float  # what waiting for the longest response adds beyond the bulk
    #: share of the whole card the rollout engine may take (vLLM gpu_memory_utilization):
    #: the stack's KV budget fraction of what the trainer leaves
    memory_utilization: float = 0.9


@dataclass(frozen=True)
class Update:
    """The training side of one step on a pool: the layout, its step time, resident state."""

    layout: Layout
    step_s: float  # one forward + backward + optimizer step over the step's sequences
    forward_s: float  # one forward-only pass over them (a log-prob or value pass)
    resident_gib: float  # weights + gradients + optimizer state per GPU (kept while generating)
    device_gib: float  # peak device memory of the update per GPU


def _serve_setup(rl: RlSetup, batch: int) -> ServeSetup:
    return ServeSetup(
        weight_precision="bf16",
        kv_precision="bf16",
        batch=batch,
        context=rl.max_tokens,
        output_tokens=int(rl.response_tokens_mean),
        stack=GEN_STACK,
    )


def generation_phase(
    model: ModelSpec,
    rl: RlSetup,
    gpu: GpuSpec,
    gpus: int,
    gpus_per_node: int,
    a: PerfAssumptions,
    reserved_gib: float = 0.0,
    tp_min: int = 1,
) -> Generation | None:
    """Fastest rollout of the step's sequences on `gpus` GPUs (None: no replica fits).

    All prompts arrive at once (verl generate_sequences, NeMo-RL generate): each of the
    replicas takes ceil(sequences / replicas). Two bounds, the larger holds: continuous
    batching keeps `batch` in flight (vLLM), so the bulk lasts sequences / (requests per second
    of the replica); and the step waits for the longest response, response_max decode steps
    during which on average sequences × mean / max of the replica's are still generating (the
    sum of the sequences alive over those steps is its output tokens): the long tail of RL
    rollouts (verl docs "agentic RL / partial rollout", NeMo-RL async GRPO motivation).
    `reserved_gib` per GPU stays with the trainer (colocated pools keep the training state);
    replicas use at least `tp_min` GPUs (a colocated update fits beside that rollout shard).
    """
    card = replace(gpu, memory_gib=gpu.memory_gib - reserved_gib)
    if card.memory_gib <= 0:
        return None
    best: Generation | None = None
    for tp in TP_CHOICES:
        if tp < tp_min or tp > gpus_per_node or gpus % tp or model.heads % tp:
            continue
        replicas = gpus // tp
        per_replica = math.ceil(rl.sequences / replicas)
        batch = serving_max_batch(model, _serve_setup(rl, 1), card, tp, a, cap=per_replica)
        if batch == 0:
            continue
        p, o = int(rl.prompt_tokens_mean), max(1, int(rl.response_tokens_mean))
        perf = serving_perf(model, _serve_setup(rl, batch), card, tp, p, o, a)
        bulk = per_replica / perf.requests_per_s
        alive = max(1, min(batch, round(per_replica * o / rl.response_tokens_max)))
        longest = serving_perf(model, _serve_setup(rl, alive), card, tp, p, o, a)
        floor = rl.response_tokens_max * longest.decode_step_s
        share = get_stack(GEN_STACK).kv_memory_fraction * card.memory_gib / gpu.memory_gib
        gen = Generation(max(bulk, floor), tp, replicas, batch, bulk, max(0.0, floor - bulk), share)
        if best is None or gen.time_s < best.time_s:
            best = gen
    return best


def train_precision(gpu: GpuSpec) -> str:
    """bf16 mixed precision where the GPU has a bf16 path (verl and NeMo-RL default), else fp16."""
    return "bf16" if gpu.bf16_tflops else "fp16"


def _training_setup(seq_len: int, precision: str) -> TrainingSetup:
    return TrainingSetup(seq_len=max(1, seq_len), precision=precision, optimizer="adamw", stack=TRAIN_STACK)


def update_phase(
    model: ModelSpec,
    rl: RlSetup,
    cluster: Cluster,
    a: PerfAssumptions,
    usable_gib: float,
    rla: RlAssumptions,
) -> Update | None:
    """Fastest FSDP (ZeRO-3) layout of the update that fits `usable_gib` per GPU (None: none).

    Time at the mean sequence (prompt + response: verl use_remove_padding / dynamic batch
    packs tokens, no padding); memory at the longest one (a micro-batch of max-length
    sequences must fit). Checkpointing none, then full (verl enable_gradient_checkpointing).
    """
    precision = train_precision(cluster.gpu)
    timed = _training_setup(round(rl.mean_tokens), precision)
    sized = _training_setup(rl.max_tokens, precision)
    steps = step_model_for(model, timed, cluster.gpu, a)
    memory = memory_model_for(model, sized, a)
    batch = BatchRule(rl.sequences, 0.5)  # mini-batches need not divide the step's sequences
    best: Update | None = None
    layouts = training_layouts(model, cluster.gpus, cluster.gpus_per_node, batch, (3,), MICRO_BATCHES)
    for base in layouts:
        if base.tp > 1 or base.pp > 1 or base.cp > 1:
            continue
        for ckpt in ("none", "full"):
            layout = replace(base, checkpointing=ckpt)
            mem = memory.memory(layout)
            if mem.device > usable_gib:
                continue
            step = steps.step_time(layout, cluster)
            if best is None or step.time_s < best.step_s:
                resident = mem.weights + mem.gradients + mem.optimizer
                # a forward-only pass keeps no activations: no recompute, 1/3 of fwd + bwd
                plain = step if ckpt == "none" else steps.step_time(base, cluster)
                best = Update(layout, step.time_s, plain.time_s * rla.forward_share, resident, mem.device)
            break
    return best


def sync_s(
    params: float, gbit_per_s: float, rla: RlAssumptions, colocated_link_gb_s: float | None = None
) -> float:
    """Seconds to send the policy's weights from the trainer to the generators.

    Separate pools: params × bytes / (the slower pool's aggregate network × efficiency)
    (NCCL broadcast from trainer ranks to vLLM workers: OpenRLHF `broadcast_to_vllm`, NeMo-RL
    refit). Colocated: an in-node reshard of the FSDP shards into the rollout layout (verl
    sharding manager), each GPU receiving the weights over its intra-node link.
    """
    payload = params * rla.sync_bytes_per_param
    if colocated_link_gb_s is not None:
        return payload / (colocated_link_gb_s * GB * rla.sync_link_efficiency) + rla.colocated_switch_s
    return payload / (gbit_per_s / 8.0 * GB * rla.sync_link_efficiency)
