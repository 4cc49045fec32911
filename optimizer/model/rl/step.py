"""One RL step on one pool (colocated) or two (generation + training), phase by phase.

Colocated (verl hybrid engine, NeMo-RL `colocated.enabled: true`): the phases serialize on
the same GPUs. The training state (weights, gradients, optimizer, sharded by FSDP) stays in
device memory while the rollout engine runs in what is left (verl defaults
`param_offload: False`, `optimizer_offload: False`; the rollout takes
`gpu_memory_utilization` of the rest), and the KV cache is freed during training (verl
`free_cache_engine`, vLLM sleep mode): the update gets the card minus the rollout weights.
Separate (OpenRLHF Ray placement groups, NeMo-RL non-colocated generation): rollouts on the
generation pool, log-probs and updates on the training pool, the weights broadcast between
them each step; on-policy the pools take turns, one-step off-policy (NeMo-RL async GRPO,
OpenRLHF --async_train) overlaps generation of step k+1 with training of step k.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from optimizer.model.cluster import Cluster
from optimizer.model.hardware import GpuSpec
from optimizer.model.pcie import PCIE_GT_PER_S, pcie_link_gb_s
from optimizer.model.rl.phases import TP_CHOICES, Generation, Update, generation_phase, sync_s, update_phase
from optimizer.model.rl.setup import RlAssumptions, RlSetup
from optimizer.model.setup import PerfAssumptions
from optimizer.model.spec import ModelSpec
from optimizer.units import GB, GIB

__all__ = [
    "RlStep",
    "TrainSide",
    "train_side",
    "colocated_step",
    "separate_step",
    "forward_passes",
    "companions_gib",
    "gather_link_gb_s",
    "state_offload_s",
]


@dataclass(frozen=True)
class TrainSide:
    """The training pool's share of a step: log-prob passes and updates (seconds)."""

    update: Update
    logprob_s: float  # reference + old policy (+ critic values, reward model) forwards
    update_s: float  # policy update (+ critic update for PPO)

    @property
    def time_s(self) -> float:
        return self.logprob_s + self.update_s


@dataclass(frozen=True)
class RlStep:
    """Seconds of one RL step and its parts (point prediction, before any band)."""

    time_s: float
    generation_s: float
    logprob_s: float
    update_s: float
    sync_s: float
    pipelined: bool  # generation overlapped training (one-step off-policy, separate pools)
    generation: Generation | None
    train: TrainSide
    parts_s: dict[str, float] = field(default_factory=dict)


def forward_passes(rl: RlSetup, policy_params: float) -> float:
    """Forward-only passes over the step's sequences, in policy-forward units.

    Reference log-probs (GRPO/PPO KL term; DPO's frozen reference on chosen and rejected),
    the old policy's log-probs (verl compute_old_log_prob; GRPO/PPO), the critic's values
    (PPO, a policy-sized network) and a reward network scaled by its size (forward FLOPs ∝
    parameters, Kaplan et al. 2020 §2.1).
    """
    passes = float(rl.reference)
    if rl.generates and rl.old_policy_logprob:
        passes += 1.0
    if rl.critic:
        passes += 1.0
    if rl.reward_model_params > 0:
        passes += rl.reward_model_params / policy_params
    return passes


def companions_gib(model: ModelSpec, rl: RlSetup, gpus: int) -> float:
    """Per GPU, what the training pool holds beside the policy's own state, FSDP-sharded over
    its GPUs: the frozen reference and reward networks' bf16 weights, and for PPO the critic's
    training state, 16 bytes per parameter (bf16 weights and gradients + fp32 master and two
    Adam moments: Rajbhandari et al. 2020, ZeRO §3.1), a policy-sized network; 4 with the
    optimizer offloaded (ZeRO-Offload keeps the 16-bit weights and gradients on the GPU, Ren et
    al. 2021 §4.1)."""
    frozen = (model.params() * float(rl.reference) + rl.reward_model_params) * 2.0
    critic_bytes = 4.0 if rl.optimizer_offload else 16.0
    critic = model.params() * critic_bytes if rl.critic else 0.0
    return (frozen + critic) / gpus / GIB


def train_side(
    model: ModelSpec, rl: RlSetup, cluster: Cluster, a: PerfAssumptions, usable_gib: float, rla: RlAssumptions
) -> TrainSide | None:
    """Log-probs and updates of a step on `cluster` (None: the update does not fit beside the
    companion networks, companions_gib)."""
    room = usable_gib - companions_gib(model, rl, cluster.gpus)
    up = update_phase(model, rl, cluster, a, room, rla)
    if up is None:
        return None
    logprob = forward_passes(rl, model.params()) * up.forward_s
    # PPO: the critic's update costs a policy-sized forward + backward (same shape assumed)
    update = up.step_s * (2.0 if rl.critic else 1.0)
    return TrainSide(up, logprob, update)


def gather_link_gb_s(cluster: Cluster) -> float:
    """GB/s per GPU of the colocated reshard's all-gather: every GPU gathers the full model
    from the FSDP shards of the whole pool (verl fsdp_vllm.py update_params: full_tensor()
    per parameter, then vLLM load_weights keeps its TP shard, at 8fdc4d3; NeMo-RL refit step
    1, "each policy worker gets full model parameters", blog 2025-08-12): over NVLink within
    a node, else over the GPU's share of its node's network."""
    if cluster.nodes == 1:
        return cluster.gpu.intra_node_bw_gb_s
    return min(cluster.gpu.intra_node_bw_gb_s, cluster.inter_node_gbps / 8.0 / cluster.gpus_per_node)


def state_offload_s(gpu: GpuSpec, resident_gib: float, rla: RlAssumptions) -> float:
    """Seconds to copy a GPU's training state one way between the card and host memory
    (RlSetup.offload_state_at_refit): its bytes over the GPU's PCIe link (gen × lanes) ×
    host_copy_efficiency; GUESS x16 when the catalog lists no lanes (SXM boards), gen 4 when it
    lists no generation."""
    gen = gpu.pcie_gen if gpu.pcie_gen in PCIE_GT_PER_S else 4
    link_gb_s = pcie_link_gb_s(gen, gpu.pcie_lanes or 16)
    return resident_gib * GIB / (link_gb_s * GB * rla.host_copy_efficiency)


def colocated_step(
    model: ModelSpec, rl: RlSetup, cluster: Cluster, a: PerfAssumptions, usable_gib: float, rla: RlAssumptions
) -> RlStep | None:
    """A step whose phases alternate on one pool (None: a phase does not fit)."""
    # the update runs with the rollout's weights still resident (vLLM sleep level 1 frees
    # the KV cache only): bf16 weights over the replica's tp GPUs
    rollout_gib = model.params() * 2.0 / GIB if rl.generates else 0.0
    side, tp_min = None, 1
    for tp_min in TP_CHOICES:  # the update fits beside the smallest rollout shard it can
        side = train_side(model, rl, cluster, a, usable_gib - rollout_gib / tp_min, rla)
        if side is not None:
            break
    if side is None:
        return None
    gen = None
    sync = 0.0
    if rl.generates:
        held = side.update.resident_gib + companions_gib(model, rl, cluster.gpus)
        held += cluster.gpu.memory_gib - usable_gib  # the headroom stays free
        gen = generation_phase(
            model, rl, cluster.gpu, cluster.gpus, cluster.gpus_per_node, a, held, tp_min, rla
        )
        if gen is None:
            return None
        sync = sync_s(model.params(), 0.0, rla, gather_link_gb_s(cluster))
    update_s = side.update_s
    if rl.offload_state_at_refit and rl.generates:
        # to the host within the refit, back before the next passes (timed with the update)
        copy = state_offload_s(cluster.gpu, side.update.resident_gib, rla)
        sync, update_s = sync + copy, update_s + copy
    gen_s = gen.time_s if gen is not None else 0.0
    total = gen_s + side.logprob_s + update_s + sync
    return RlStep(total, gen_s, side.logprob_s, update_s, sync, False, gen, side)


def separate_step(
    model: ModelSpec, rl: RlSetup, gen: Generation, train: TrainSide, network_gbps: float, rla: RlAssumptions
) -> RlStep:
    """A step over a generation pool and a training pool, given each pool's phases.

    `network_gbps`: the slower pool's aggregate network (nodes × Gbit/s per node), which the
    weight broadcast crosses. On-policy the pools take turns (generate, sync, train);
    one-step off-policy overlaps them: max(generation, training) + sync.
    """
    sync = sync_s(model.params(), network_gbps, rla)
    if rl.async_steps >= 1:
        total = max(gen.time_s, train.time_s) + sync
    else:
        total = gen.time_s + sync + train.time_s
    return RlStep(total, gen.time_s, train.logprob_s, train.update_s, sync, rl.async_steps >= 1, gen, train)
