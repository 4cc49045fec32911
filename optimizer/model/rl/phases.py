"""The phases of one RL step on a pool of GPUs: rollout generation, forward-only log-probs,
the policy (and critic) update, and the trainer → generator weight sync.

Generation reuses the serving model (optimizer/model/serving.py: prefill, decode, KV cache,
continuous batching); the update reuses the training step and memory models
(optimizer/model/step_model.py, memory.py) on FSDP / ZeRO-3 data-parallel layouts, verl's
default actor backend (verl docs "FSDP workers"), or on Megatron-core tensor / pipeline
layouts with the distributed optimizer (NeMo-RL's Megatron backend, RlSetup.train_stack).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from optimizer.model.cluster import Cluster
from optimizer.model.hardware import GpuSpec
from optimizer.model.layout import TP_DEGREES, BatchRule, training_layouts
from optimizer.model.memory import memory_model_for
from optimizer.model.rl.lengths import length_weighted_tokens, peak_kv_tokens, response_kv_tokens
from optimizer.model.rl.setup import DEFAULT_RL_ASSUMPTIONS, RlAssumptions, RlSetup
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
    "rollout_step_s",
    "update_phase",
    "sync_s",
    "TP_CHOICES",
    "MICRO_BATCHES",
    "BATCH_TOLERANCE",
    "TRAIN_STACK",
    "train_precision",
    "GEN_STACK",
]

#: tensor-parallel degrees a rollout replica may use (vLLM tensor_parallel_size): the one
#: list of degrees (model/layout.py), within a node (the loop skips degrees above its GPUs)
TP_CHOICES = TP_DEGREES
#: micro-batches per GPU tried for the update (verl ppo_micro_batch_size_per_gpu)
MICRO_BATCHES = (1, 2, 4, 8)
#: the update's mini-batches need not divide the step's sequences: dp × micro-batch × accumulation
#: may miss them by this share (so a training pool has at most (1 + this) × sequences GPUs)
BATCH_TOLERANCE = 0.5
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
    waves: int = 1  # rounds of rl.rollout_wave sequences per replica, one after the other


@dataclass(frozen=True)
class Update:
    """The training side of one step on a pool: the layout, its step time, resident state."""

    layout: Layout
    step_s: float  # one forward + backward + optimizer step over the step's sequences
    forward_s: float  # one forward-only pass over them (a log-prob or value pass)
    resident_gib: float  # weights + gradients + optimizer state per GPU (kept while generating)
    device_gib: float  # peak device memory of the update per GPU


def _serve_setup(rl: RlSetup, batch: int) -> ServeSetup:
    """The rollout as a serving deployment: each sequence holds the KV of the batch's peak
    (lengths.peak_kv_tokens: the sequences start together and free their blocks as they end),
    not the longest sequence's."""
    return ServeSetup(
        weight_precision="bf16",
        kv_precision="bf16",
        batch=batch,
        context=math.ceil(peak_kv_tokens(rl)),
        kv_occupancy="max",
        output_tokens=int(rl.response_tokens_mean),
        stack=GEN_STACK,
    )


def rollout_step_s(gpu_step_s: float, layers: int, rl: RlSetup, rla: RlAssumptions) -> float:
    """Seconds of one decode iteration of the rollout engine: the GPU's work, or the host's
    eager kernel launches when those are slower (CUDA launches are asynchronous and overlap
    the GPU's work), plus the host's per-iteration work the GPU waits for (scheduling, the
    sampled tokens' copy to the CPU, output processing: vLLM issue #6854)."""
    launches = 0.0 if rl.rollout_cuda_graphs else layers * rla.eager_host_s_per_layer
    return max(gpu_step_s, launches) + rla.decode_host_s_per_step


def _engine_card(gpu: GpuSpec, rl: RlSetup, reserved_gib: float) -> GpuSpec:
    """The card as the rollout engine sees it: what the trainer leaves, or at most the
    stated gpu_memory_utilization of the whole card (vLLM: the engine's weights, activations
    and KV cache within utilization × total memory), in the stack's budget terms."""
    left = gpu.memory_gib - reserved_gib
    if rl.rollout_memory_utilization > 0:
        stated = rl.rollout_memory_utilization * gpu.memory_gib / get_stack(GEN_STACK).kv_memory_fraction
        left = min(left, stated)
    return replace(gpu, memory_gib=left)


def _replica_rollout(
    model: ModelSpec, rl: RlSetup, card: GpuSpec, tp: int, a: PerfAssumptions, rla: RlAssumptions, seqs: int
) -> tuple[float, float, float, int, int] | None:
    """(seconds, bulk, tail, batch, waves) of one replica generating `seqs` sequences in waves
    of rl.rollout_wave (0: one wave), each wave lasting until its longest response is done."""
    wave = min(seqs, rl.rollout_wave) if rl.rollout_wave else seqs
    waves = math.ceil(seqs / wave)
    batch = serving_max_batch(model, _serve_setup(rl, 1), card, tp, a, cap=wave)
    if batch == 0:
        return None
    p, o = int(rl.prompt_tokens_mean), max(1, int(rl.response_tokens_mean))
    # the serving model reads a KV context of p + o_kv / 2 per decode (response_kv_tokens)
    o_kv = max(1, round(2.0 * response_kv_tokens(o, rl.response_tokens_max)))
    perf = serving_perf(model, _serve_setup(rl, batch), card, tp, p, o_kv, a)
    # continuous batching keeps `concurrency` in flight: wave / concurrency × o iterations
    bulk = wave / perf.concurrency * o * rollout_step_s(perf.tpot_s, model.layers, rl, rla)
    # the longest response: response_max iterations with wave × mean / max alive on average
    alive = max(1, min(batch, round(wave * o / rl.response_tokens_max)))
    longest = serving_perf(model, _serve_setup(rl, alive), card, tp, p, o_kv, a)
    floor = rl.response_tokens_max * rollout_step_s(longest.decode_step_s, model.layers, rl, rla)
    per_wave = max(bulk, floor)
    return waves * per_wave, waves * bulk, waves * (per_wave - bulk), batch, waves


def generation_phase(
    model: ModelSpec,
    rl: RlSetup,
    gpu: GpuSpec,
    gpus: int,
    gpus_per_node: int,
    a: PerfAssumptions,
    reserved_gib: float = 0.0,
    tp_min: int = 1,
    rla: RlAssumptions = DEFAULT_RL_ASSUMPTIONS,
) -> Generation | None:
    """Fastest rollout of the step's sequences on `gpus` GPUs (None: no replica fits).

    All prompts arrive at once (verl generate_sequences, NeMo-RL generate): each of the
    replicas takes ceil(sequences / replicas). Two bounds, the larger holds: continuous
    batching keeps `batch` in flight (vLLM), so the bulk lasts sequences / (requests per second
    of the replica); and the step waits for the longest response, response_max decode steps
    during which on average sequences × mean / max of the replica's are still generating (the
    sum of the sequences alive over those steps is its output tokens): the long tail of RL
    rollouts (verl docs "agentic RL / partial rollout", NeMo-RL async GRPO motivation). Each
    decode iteration carries the host's overheads (rollout_step_s). `reserved_gib` per GPU
    stays with the trainer (colocated pools keep the training state); replicas use at least
    `tp_min` GPUs (a colocated update fits beside that rollout shard) unless rl.rollout_tp
    states the degree.
    """
    card = _engine_card(gpu, rl, reserved_gib)
    if card.memory_gib <= 0:
        return None
    best: Generation | None = None
    for tp in (rl.rollout_tp,) if rl.rollout_tp else TP_CHOICES:
        if (tp < tp_min and not rl.rollout_tp) or tp > gpus_per_node or gpus % tp or model.heads % tp:
            continue
        replicas = gpus // tp
        timed = _replica_rollout(model, rl, card, tp, a, rla, math.ceil(rl.sequences / replicas))
        if timed is None:
            continue
        time_s, bulk, tail, batch, waves = timed
        share = get_stack(GEN_STACK).kv_memory_fraction * card.memory_gib / gpu.memory_gib
        gen = Generation(time_s, tp, replicas, batch, bulk, tail, share, waves)
        if best is None or gen.time_s < best.time_s:
            best = gen
    return best


def train_precision(gpu: GpuSpec) -> str:
    """bf16 mixed precision where the GPU has a bf16 path (verl and NeMo-RL default), else fp16."""
    return "bf16" if gpu.bf16_tflops else "fp16"


def _training_setup(seq_len: int, precision: str, rl: RlSetup) -> TrainingSetup:
    """The update as a training step on the trainer's stack (RlSetup.train_stack); with
    rl.optimizer_offload ZeRO-Offload, its memory and CPU Adam time from the training model
    (memory.py, step_model.optimizer_s). Its loss is a fused kernel: verl's actor takes the
    log-probs with flash-attn's cross entropy (verl/utils/torch_functional.py
    logprobs_from_logits_flash_attn: cross_entropy_loss(..., inplace_backward=True), the
    gradient written into the 16-bit logits), Megatron's its vocab-parallel fused one."""
    return TrainingSetup(
        seq_len=max(1, seq_len),
        precision=precision,
        optimizer="adamw",
        stack=rl.train_stack,
        offload_optimizer=rl.optimizer_offload,
        loss_kernel="fused",
    )


def _trainer_layouts(model: ModelSpec, rl: RlSetup, cluster: Cluster) -> list[Layout]:
    """The update's layouts: FSDP, ZeRO-3 data parallel only; Megatron-core, the distributed
    optimizer (ZeRO-1) with the stated tensor / pipeline degrees (any when not stated)."""
    megatron = rl.train_stack != TRAIN_STACK
    zero = (1,) if megatron else (3,)
    batch = BatchRule(rl.sequences, BATCH_TOLERANCE)
    stack = get_stack(rl.train_stack) if megatron else None
    out = []
    gpus, per_node = cluster.gpus, cluster.gpus_per_node
    for base in training_layouts(model, gpus, per_node, batch, zero, MICRO_BATCHES, stack=stack):
        if base.cp > 1 or (not megatron and (base.tp > 1 or base.pp > 1)):
            continue
        if (rl.train_tp and base.tp != rl.train_tp) or (rl.train_pp and base.pp != rl.train_pp):
            continue
        out.append(base)
    return out


def update_phase(
    model: ModelSpec,
    rl: RlSetup,
    cluster: Cluster,
    a: PerfAssumptions,
    usable_gib: float,
    rla: RlAssumptions,
) -> Update | None:
    """Fastest layout of the update (_trainer_layouts) that fits `usable_gib` per GPU (None: none).

    Time at the mean sequence (prompt + response: verl use_remove_padding / dynamic batch
    packs tokens, no padding), its attention at the spread of lengths (_spread_factor);
    memory at the longest one (a micro-batch of max-length sequences must fit).
    Checkpointing as the run states (rl.train_checkpointing), else none, then full.
    """
    precision = train_precision(cluster.gpu)
    timed = _training_setup(round(rl.mean_tokens), precision, rl)
    sized = _training_setup(rl.max_tokens, precision, rl)
    steps = step_model_for(model, timed, cluster.gpu, a)
    memory = memory_model_for(model, sized, a)
    best: Update | None = None
    for base in _trainer_layouts(model, rl, cluster):
        for ckpt in (rl.train_checkpointing,) if rl.train_checkpointing else ("none", "full"):
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
    if best is None:
        return None
    k = _spread_factor(model, rl, best.layout, cluster, a, best.step_s)
    return replace(best, step_s=best.step_s * k, forward_s=best.forward_s * k)


def _spread_factor(
    model: ModelSpec, rl: RlSetup, layout: Layout, cluster: Cluster, a: PerfAssumptions, step_s: float
) -> float:
    """Per-token time at the length-weighted sequence ÷ at the mean one: attention costs ∝ L²
    per sequence (Dao et al. 2022, FlashAttention §3: O(N² d) FLOPs), so a spread of lengths
    costs as tokens at E[T²] / E[T] (lengths.length_weighted_tokens) would, the linear layers
    as at the mean (1: equal lengths)."""
    mean, weighted = round(rl.mean_tokens), round(length_weighted_tokens(rl))
    if weighted <= mean:
        return 1.0
    setup = _training_setup(weighted, train_precision(cluster.gpu), rl)
    longer = step_model_for(model, setup, cluster.gpu, a).step_time(layout, cluster).time_s
    return (longer / weighted) / (step_s / mean)


def sync_s(
    params: float, gbit_per_s: float, rla: RlAssumptions, colocated_link_gb_s: float | None = None
) -> float:
    """Seconds to send the policy's weights from the trainer to the generators.

    Separate pools: params × bytes / (the slower pool's aggregate network × efficiency)
    (NCCL broadcast from trainer ranks to vLLM workers: OpenRLHF `broadcast_to_vllm`, NeMo-RL
    refit). Colocated: a reshard of the FSDP shards into the rollout layout (verl sharding
    manager, NeMo-RL refit), each GPU gathering the full model over `colocated_link_gb_s`
    (step.gather_link_gb_s), plus the phase switch (colocated_switch_s).
    """
    payload = params * rla.sync_bytes_per_param
    if colocated_link_gb_s is not None:
        return payload / (colocated_link_gb_s * GB * rla.sync_link_efficiency) + rla.colocated_switch_s
    return payload / (gbit_per_s / 8.0 * GB * rla.sync_link_efficiency)
